package lifecycle

import (
	"context"
	"strings"

	"choir/internal/rpc"
)

// tunnel says whether choird carries the session's own connections
// (rpc's CONNECT tunnel, choird/tunnel.go): an offline session's, except
// a run's without credentials, which holds no key of any service to
// reach.
func (r *Run) tunnel() bool {
	return r.Offline && (r.perf == nil || r.perf.p.Credentials)
}

// TunnelBindings is the agent and bindings of a session whose own
// connections choird carries; ok false for any other session (ended, on
// the network, or a run without credentials).
func (m *Manager) TunnelBindings(sessionID string) (agentID string, b rpc.ResourceBindings, ok bool) {
	r := m.bySession(sessionID)
	if r == nil || !r.tunnel() {
		return "", rpc.ResourceBindings{}, false
	}
	return r.AgentID, r.bindings(), true
}

// MCPEndpoints are the host:port of the MCP servers over HTTP that the
// session's image declares (the build's record of it), which choird's
// tunnel admits besides the configured services; none without a record.
func (m *Manager) MCPEndpoints(ctx context.Context, sessionID string) []string {
	r := m.bySession(sessionID)
	if r == nil || m.Images == nil {
		return nil
	}
	rec, err := m.Images.ImageRecord(ctx, r.Image)
	if err != nil || rec.Version.MCPEndpoints == "" {
		return nil
	}
	return strings.Split(rec.Version.MCPEndpoints, ",")
}
