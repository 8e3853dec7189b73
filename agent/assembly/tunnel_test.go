package assembly

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"choir/agent/egress"
	"choir/agent/session"
	"choir/internal/rpc"
)

// When INIT_HELLO says Tunnel, the agent's own connections go through
// the control plane it was given (the runtime's cp is a redacting
// wrapper, which cannot open tunnels: the runtime must reach the client
// itself); without it they stay direct.
func TestTunnelUsesTheControlPlane(t *testing.T) {
	cp, err := rpc.Dial(rpc.Options{Transport: rpc.TransportUDS, Socket: "/nonexistent/choird.sock", SessionID: "s-1", LeaseToken: "t"})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	defer egress.Through(nil)
	for _, tunnel := range []bool{false, true} {
		egress.Through(nil)
		sess := session.New(cp, session.Identity{AgentID: "agent-1", SessionID: "s-1"}, rpc.ImageInfo{ImageVersion: "v"}, 10*time.Millisecond, log)
		sess.Tunnel = tunnel
		rt := New(cp, sess, Config{Log: log})
		if got := rt.useTunnel(); got != tunnel || egress.Tunnelled() != tunnel {
			t.Errorf("Tunnel %v: useTunnel() = %v, egress.Tunnelled() = %v", tunnel, got, egress.Tunnelled())
		}
	}
}
