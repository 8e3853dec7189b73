package session

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"choir/internal/rpc"
)

// TestEndStopsTheSessionWithItsReason: the agent ends its own session (a
// spent budget, say): the lanes stop, a final heartbeat flushes the log,
// and TERMINATE_SELF carries the agent's reason, whether End comes while
// the session runs or while it is still opening.
func TestEndStopsTheSessionWithItsReason(t *testing.T) {
	for _, early := range []bool{false, true} {
		name := "while running"
		if early {
			name = "while opening"
		}
		t.Run(name, func(t *testing.T) {
			cd := &choird{latest: 1, changed: make(chan struct{}, 1)}
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			_, cp := serveChoird(t, cd, "a-1", log)
			s := New(cp, Identity{AgentID: "a-1", SessionID: "s-1"}, rpc.ImageInfo{}, 5*time.Millisecond, log)
			stopped := make(chan struct{})
			s.Hooks.Stopping = func(context.Context) { close(stopped) }
			const reason = "the total_session_tokens budget (10) is spent"
			if early {
				s.Hooks.Opened = func(context.Context) error { s.End(reason); return nil }
			}
			done := make(chan error, 1)
			go func() { done <- s.Run(context.Background()) }()
			if !early {
				cd.waitFor(t, "a heartbeat", func() bool { return cd.count(rpc.VerbHeartbeat) >= 1 })
				s.End(reason)
				s.End("a second reason loses")
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Run = %v; want nil after End", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("Run did not end after End")
			}
			select {
			case <-stopped:
			default:
				t.Error("the Stopping hook did not run: the lanes never reached their safe point")
			}
			cd.mu.Lock()
			defer cd.mu.Unlock()
			if cd.terminate != reason {
				t.Errorf("TERMINATE_SELF reason = %q; want %q", cd.terminate, reason)
			}
			if n := len(cd.heartbeats); n == 0 || !cd.heartbeats[n-1].Final {
				t.Errorf("heartbeats = %d, the last not final; want a final heartbeat", n)
			}
		})
	}
}
