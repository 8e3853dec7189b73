package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"choir/choird/control"
	"choir/choird/lifecycle"
	"choir/internal/brave"
	"choir/internal/config"
	"choir/internal/elevenlabs"
	"choir/internal/rpc"
)

// tunnelPolicy carries an offline agent's own connections (issue 25 item
// 1): rpc.Server.Tunnels. A container without network route (a run
// without network, an agent in network mode "policy") still runs the API
// tools of §18.3 in-container; choird, which can reach the network,
// dials for them, but only the host and port the session's configuration
// names for one of them, compared as written in config.json (the name,
// lowercased, and the port, the scheme's default when absent): another
// host, another port, an IP address for a configured name, or a name that
// resolves to a configured address is refused. choird resolves the
// configured name itself and splices the bytes, so TLS stays between the
// agent and the service: choird sees neither the keys nor the plaintext.
//
// The endpoints: every search provider's (their keys are granted to
// every session), the bound voice profile's TTS provider, the bound
// Notion integration's, the bound email account's IMAP and SMTP servers,
// and the MCP servers over HTTP the session's image declares (recorded
// by the build: a declaration is reviewed like a tool). Models are not
// among them: an offline session's model calls go through the model proxy
// (modelproxy.go).
type tunnelPolicy struct {
	config   func() *config.Loaded
	sessions interface {
		TunnelBindings(sessionID string) (agentID string, b rpc.ResourceBindings, ok bool)
		MCPEndpoints(ctx context.Context, sessionID string) []string
	}
	dial func(ctx context.Context, network, addr string) (net.Conn, error) // nil: a net.Dialer
	log  *slog.Logger
}

var _ rpc.TunnelDialer = (*tunnelPolicy)(nil)

// tunnelDialTimeout bounds choird's dial of a carried connection.
const tunnelDialTimeout = 30 * time.Second

// DialTunnel refuses a destination outside the session's endpoints (403)
// and dials the one inside.
func (p *tunnelPolicy) DialTunnel(ctx context.Context, call rpc.TunnelCall) (net.Conn, error) {
	agentID, b, ok := p.sessions.TunnelBindings(call.SessionID)
	if !ok {
		p.log.Warn("tunnel refused: the session has network or none to reach", "session_id", call.SessionID, "target", call.Target)
		return nil, rpc.Forbidden("this session's connections are not carried by choird (it is on the network, ended, or a run without credentials)")
	}
	allowed := tunnelEndpoints(p.config().Config, b, p.sessions.MCPEndpoints(ctx, call.SessionID)...)
	if !slices.Contains(allowed, call.Target) {
		p.log.Warn("tunnel refused: not an endpoint of the agent's configuration", "agent_id", agentID, "session_id", call.SessionID, "target", call.Target)
		return nil, rpc.Forbidden("%s is not an endpoint this session's configuration names (%s): choird carries connections only to the search providers, the bound TTS, Notion and email servers, as written in config.json, and the image's MCP servers over HTTP; fetch other URLs with choir.net.fetch",
			call.Target, strings.Join(allowed, ", "))
	}
	dial := p.dial
	if dial == nil {
		d := net.Dialer{Timeout: tunnelDialTimeout}
		dial = d.DialContext
	}
	ctx, cancel := context.WithTimeout(ctx, tunnelDialTimeout)
	defer cancel()
	conn, err := dial(ctx, "tcp", call.Target)
	if err != nil {
		p.log.Warn("tunnel dial failed", "agent_id", agentID, "session_id", call.SessionID, "target", call.Target, "error", err.Error())
		return nil, rpc.Errorf(502, rpc.CodeUnavailable, "choird could not connect to %s: %v", call.Target, err)
	}
	p.log.Info("tunnel opened", "agent_id", agentID, "session_id", call.SessionID, "target", call.Target)
	return conn, nil
}

// tunnelEndpoints are the host:port pairs a session bound as b may reach
// through choird, sorted; mcp are the image's MCP servers over HTTP.
func tunnelEndpoints(c *config.Config, b rpc.ResourceBindings, mcp ...string) []string {
	var out []string
	add := func(hostport string) {
		if t, ok := rpc.TunnelTarget(hostport); ok && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	for _, e := range mcp {
		add(e)
	}
	addURL := func(raw, def string) {
		if raw == "" {
			raw = def
		}
		u, err := url.Parse(raw)
		if err != nil || u.Hostname() == "" {
			return
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
		}
		add(net.JoinHostPort(u.Hostname(), port))
	}
	for _, s := range c.Search {
		addURL(s.Endpoint, brave.DefaultEndpoint)
	}
	if vp, ok := c.VoiceProfiles[b.VoiceProfile]; ok && b.VoiceProfile != "" {
		addURL(c.TTS[vp.TTS].Endpoint, elevenlabs.DefaultEndpoint)
	}
	if n, ok := c.NotionIntegrations[b.Notion]; ok && b.Notion != "" {
		addURL(n.Endpoint, config.DefaultNotionAPI)
	}
	if e, ok := c.EmailAccounts[b.Email]; ok && b.Email != "" {
		add(net.JoinHostPort(e.IMAPHost, strconv.Itoa(e.IMAPPort)))
		add(net.JoinHostPort(e.SMTPHost, strconv.Itoa(e.SMTPPort)))
	}
	slices.Sort(out)
	return out
}

// netAttemptsNotice tells the admin DMs (and the agent's own) when the
// network attempts counted in an offline interactive agent's container
// rise (choird/lifecycle/netattempts.go): once per rise, read on the
// health-probe cadence.
func netAttemptsNotice(plane *control.Plane, agents *lifecycle.Manager, log *slog.Logger) func(agentID, sessionID string, total, added int64) {
	return func(agentID, sessionID string, total, added int64) {
		text := fmt.Sprintf("Agent %s (network mode policy): %d attempt(s) to reach the network directly from its container (%d in session %s so far). They failed: the container has no route; only choir.net.fetch goes out. A tool, or a model told so by what it read, tried; see the agent's log (choirctl logs %s).",
			agentID, added, total, sessionID, agentID)
		spendNotice(plane, agents, agentID, text, log) // spend.go: the bound DM and every admin DM
	}
}
