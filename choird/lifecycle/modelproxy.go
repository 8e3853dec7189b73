package lifecycle

import "choir/internal/rpc"

// SessionBindings returns the agent and the resources bound now (a model
// set included) of an open session, interactive or run: what choird's
// model proxy (choird/modelproxy.go) lets the session call.
func (m *Manager) SessionBindings(sessionID string) (agentID string, b rpc.ResourceBindings, ok bool) {
	r := m.bySession(sessionID)
	if r == nil {
		return "", rpc.ResourceBindings{}, false
	}
	return r.AgentID, r.bindings(), true
}
