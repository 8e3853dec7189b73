package control

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/choird/lifecycle"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/logs"
	"choir/internal/rpc"
)

// adminPlane serves a plane with one agent (agent-1) on a temporary admin
// socket and returns its client.
func adminPlane(t *testing.T) (*Plane, *ctl.Client) {
	t.Helper()
	home := config.Home{Dir: t.TempDir()}
	lm, err := logs.NewManager(home.LogsDir(), 1000, slog.LevelInfo, logs.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lm.Close() })
	p := New(home, lm)
	c := config.Default()
	c.Agents = map[string]config.Agent{"agent-1": {}}
	p.SetConfig(&config.Loaded{Config: &c})
	p.SetMessenger(&fakeMessenger{})
	sock := filepath.Join(t.TempDir(), "ctl.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p.AdminHandler()}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	client := ctl.NewClient(sock)
	t.Cleanup(func() { client.Close() })
	return p, client
}

// switchable is a dependency a test turns off and on.
type switchable struct {
	mu   sync.Mutex
	err  error
	asks int
}

func (s *switchable) set(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

func (s *switchable) check(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asks++
	return s.err
}

func (s *switchable) asked() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asks
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// `choirctl status` says degraded, with the reason and what to do, while
// Postgres or the engine does not answer the periodic probe, and healthy
// again once it does.
func TestStatusDegradedWhileADependencyIsDown(t *testing.T) {
	p, client := adminPlane(t)
	pg, engine := &switchable{}, &switchable{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.WatchHealth(ctx, time.Millisecond,
		Probe{Name: "Postgres", Check: pg.check, Fix: "check the database server"},
		Probe{Name: "the Docker engine", Check: engine.check, Fix: "start dockerd"})
	status := func() *ctl.Status {
		st, err := client.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	eventually(t, "the first probes", func() bool { return pg.asked() > 0 && engine.asked() > 0 })
	if st := status(); !st.Healthy || len(st.Degraded) != 0 {
		t.Fatalf("status with everything up = healthy %v, degraded %q", st.Healthy, st.Degraded)
	}

	pg.set(errors.New("dial tcp 127.0.0.1:5432: connect: connection refused"))
	eventually(t, "status to say Postgres is down", func() bool { return len(status().Degraded) == 1 })
	st := status()
	if st.Healthy || !strings.Contains(st.Degraded[0], "Postgres unreachable") ||
		!strings.Contains(st.Degraded[0], "connection refused") || !strings.Contains(st.Degraded[0], "check the database server") {
		t.Errorf("status with Postgres down = healthy %v, degraded %q; want the reason and the fix", st.Healthy, st.Degraded)
	}
	engine.set(errors.New("dial unix /var/run/docker.sock: connect: no such file or directory"))
	eventually(t, "status to say both are down", func() bool { return len(status().Degraded) == 2 })
	if got := strings.Join(p.Degraded(), "\n"); !strings.Contains(got, "the Docker engine unreachable") || !strings.Contains(got, "start dockerd") {
		t.Errorf("Degraded() = %q; want the engine and its fix", got)
	}

	pg.set(nil)
	engine.set(nil)
	eventually(t, "status to be healthy again", func() bool { return status().Healthy })
	if st := status(); len(st.Degraded) != 0 {
		t.Errorf("status after recovery: degraded %q", st.Degraded)
	}
}

// A session that crashes while `choirctl chat` follows its agent: the
// crash notice arrives, then the end of the session, and the stream ends;
// a graceful stop is told but leaves the stream open (the operator may
// start the agent again and go on).
func TestOutboxEndsWhenTheSessionCrashes(t *testing.T) {
	p, client := adminPlane(t)
	ctx := context.Background()
	out, err := client.Outbox(ctx, "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	var ob lifecycle.Outbox = Outboxes{&p.Console}
	ends := ob.(lifecycle.SessionEnds)

	ends.SessionEnded(ctx, "agent-1", ctl.SessionEnd{SessionID: "s-0", Status: lifecycle.StatusStopped, Reason: "stopped"})
	ob.Deliver(ctx, "agent-1", "dm1", rpc.DMSend{Kind: rpc.DMError, Text: "agent-1 stopped unexpectedly"})
	ends.SessionEnded(ctx, "agent-1", ctl.SessionEnd{SessionID: "s-1", Status: lifecycle.StatusCrashed, Reason: "container exited unexpectedly with code 137"})
	ends.SessionEnded(ctx, "agent-2", ctl.SessionEnd{SessionID: "s-2", Status: lifecycle.StatusCrashed}) // another agent's: not ours

	m, err := out.Next()
	if err != nil || m.Ended == nil || m.Ended.Status != lifecycle.StatusStopped {
		t.Fatalf("first line = %+v, %v; want the graceful stop", m, err)
	}
	if m, err = out.Next(); err != nil || m.Kind != rpc.DMError || m.Ended != nil {
		t.Fatalf("second line = %+v, %v; want the crash notice", m, err)
	}
	m, err = out.Next()
	if err != nil || m.Ended == nil || m.Ended.SessionID != "s-1" || !strings.Contains(m.Ended.Reason, "code 137") {
		t.Fatalf("third line = %+v, %v; want the crash", m, err)
	}
	if m, err := out.Next(); err == nil {
		t.Errorf("after the crash the stream went on with %+v; want it ended", m)
	}
}
