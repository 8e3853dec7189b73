package assembly

import (
	"context"
	"net"
	"net/http"
	"time"

	"choir/agent/egress"
	"choir/internal/rpc"
)

// Connections through choird (issue 25 item 1). When INIT_HELLO says
// Tunnel (a container without a network route: a run without network,
// an agent in network mode "policy"), every connection of choir-agent's
// own clients (web search, Notion, TTS, email, MCP over HTTP; agent/egress)
// is a CONNECT tunnel on the control plane's own transport, which choird
// opens only to the endpoints the agent's configuration names
// (choird/tunnel.go). TLS runs inside it, end to end.

// tunneler opens such connections (*rpc.Client).
type tunneler interface {
	DialTunnel(ctx context.Context, network, addr string) (net.Conn, error)
}

var _ tunneler = (*rpc.Client)(nil)

// useTunnel sends the agent's own connections through choird when the
// session says so; it says whether they do.
func (rt *Runtime) useTunnel() bool {
	if !rt.sess.Tunnel {
		return false
	}
	t, ok := rt.carrier.(tunneler) // the control plane itself (rt.cp is its redacting wrapper)
	if !ok {
		rt.log.Warn("choird carries this session's connections, but the control plane cannot open them: the API tools will find no route")
		return false
	}
	egress.Through(t.DialTunnel)
	rt.log.Info("the agent's own connections go through choird (no network route in this container)")
	return true
}

// mcpHTTP is the client of MCP servers over HTTP: nil (the MCP room's
// own) unless the connections go through choird.
func mcpHTTP() *http.Client {
	if !egress.Tunnelled() {
		return nil
	}
	return &http.Client{Transport: &http.Transport{Proxy: nil, DialContext: egress.DialContext, ResponseHeaderTimeout: 2 * time.Minute}}
}
