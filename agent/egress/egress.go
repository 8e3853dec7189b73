// Package egress is how choir-agent's own clients (web search, Notion,
// TTS, email, MCP over HTTP) reach the network: directly, or, in a
// container without a network route (a run without network, an agent in
// network mode "policy"), through choird's tunnel on the agent's RPC
// endpoint (internal/rpc tunnel.go), which reaches only the endpoints the
// agent's configuration names. The choice is the session's, made once at
// INIT_HELLO (agent/assembly), so it is process-wide: choir-agent runs
// one session.
//
// The clients take their connections from DialContext and their HTTP
// client from HTTPClient; TLS runs over what DialContext returns, so it
// stays end to end between the agent and the service.
package egress

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// DialFunc is a DialContext.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

var through atomic.Pointer[DialFunc]

// Through sends every later connection through d (nil: directly again).
func Through(d DialFunc) {
	if d == nil {
		through.Store(nil)
		return
	}
	through.Store(&d)
}

// Tunnelled says whether connections go through choird.
func Tunnelled() bool { return through.Load() != nil }

// direct is the dialer without a tunnel.
var direct = net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}

// DialContext connects to addr, through choird when Through was given a
// dialer, else directly.
func DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if d := through.Load(); d != nil {
		return (*d)(ctx, network, addr)
	}
	return direct.DialContext(ctx, network, addr)
}

// transport is shared by every HTTPClient: connections are reused
// across the tools (one tunnel per service, not one per call). Few are
// kept idle: each idle one holds one of the session's tunnels (at most
// rpc.MaxTunnelsPerSession, 16), which mail and MCP need too.
var transport = &http.Transport{
	Proxy:                 nil, // the environment names no proxy for the agent's own calls
	DialContext:           DialContext,
	ForceAttemptHTTP2:     true,
	MaxIdleConns:          6,
	MaxIdleConnsPerHost:   2,
	IdleConnTimeout:       90 * time.Second,
	TLSHandshakeTimeout:   10 * time.Second,
	ExpectContinueTimeout: time.Second,
}

// HTTPClient is a client whose connections DialContext makes. It follows
// redirects as http.DefaultClient does; each redirect's host goes through
// the tunnel's check again.
func HTTPClient() *http.Client { return &http.Client{Transport: transport} }
