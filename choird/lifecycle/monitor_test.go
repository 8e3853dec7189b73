package lifecycle

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"choir/choird/lease"
	"choir/internal/config"
	"choir/internal/docker"
	"choir/internal/rpc"
)

// stubDocker records what the lifecycle asks of the engine when no real
// container is involved.
type stubDocker struct {
	Docker
	mu      sync.Mutex
	removed []string
}

func (d *stubDocker) ContainerStop(context.Context, string, time.Duration) error { return nil }
func (d *stubDocker) ContainerRemove(_ context.Context, id string, _ docker.ContainerRemoveOptions) error {
	d.mu.Lock()
	d.removed = append(d.removed, id)
	d.mu.Unlock()
	return nil
}

type stubSessions struct {
	mu     sync.Mutex
	closed []string
}

func (s *stubSessions) Open(string, string, string) {}
func (s *stubSessions) Close(id string) {
	s.mu.Lock()
	s.closed = append(s.closed, id)
	s.mu.Unlock()
}
func (s *stubSessions) Publish(string, string, any) (string, bool) { return "", true }

type stubLogs struct{}

func (stubLogs) Agent(string) (*slog.Logger, error) {
	return slog.New(slog.NewTextHandler(io.Discard, nil)), nil
}
func (stubLogs) AgentWriter(string) (io.Writer, error) { return io.Discard, nil }
func (stubLogs) ArchiveAgent(string) error             { return nil }

// TestMonitorEndsSilentSessions: an agent whose heartbeats stop for longer
// than the threshold is crashed: session recorded, token revoked, container
// removed, leases released.
func TestMonitorEndsSilentSessions(t *testing.T) {
	loaded, clock, advance := monitorClock()
	d, sessions, store := &stubDocker{}, &stubSessions{}, newMemStore()
	m := &Manager{Docker: d, Store: store, Sessions: sessions, Leases: lease.NewTable(), Logs: stubLogs{},
		Config: func() (*config.Loaded, int64) { return loaded, 1 }, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: clock}

	for _, id := range []string{"quiet", "chatty"} {
		res := []lease.Resource{{Kind: lease.Workspace, Name: "ws-" + id}}
		if err := m.Leases.Acquire(id, res); err != nil {
			t.Fatal(err)
		}
		r := &Run{AgentID: id, SessionID: "s-" + id, ContainerID: "c-" + id, state: StateRunning, lastHeartbeat: clock(),
			ready: make(chan struct{}), exited: make(chan struct{}), lanes: map[string]rpc.StatusReq{}}
		store.CreateSession(context.Background(), SessionRecord{SessionID: r.SessionID, AgentID: id, Status: StatusActive})
		m.register(r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Monitor(ctx)

	// chatty keeps heartbeating; quiet falls silent past the threshold.
	for range 15 {
		advance(100 * time.Millisecond)
		m.run("chatty").mu.Lock()
		m.run("chatty").lastHeartbeat = clock()
		m.run("chatty").mu.Unlock()
	}
	waitUntil(t, "the silent session to be crashed", func() bool { return store.status("s-quiet") == StatusCrashed })
	if got := store.status("s-chatty"); got != StatusActive {
		t.Errorf("heartbeating session = %q; want still active", got)
	}
	// The leases go once the end is recorded.
	waitUntil(t, "the crashed agent's workspace to be free", func() bool {
		_, ok := m.Leases.Holder(lease.Resource{Kind: lease.Workspace, Name: "ws-quiet"})
		return !ok
	})
	d.mu.Lock()
	removed := append([]string(nil), d.removed...)
	d.mu.Unlock()
	if len(removed) != 1 || removed[0] != "c-quiet" {
		t.Errorf("removed containers = %v; want [c-quiet]", removed)
	}
	sessions.mu.Lock()
	defer sessions.mu.Unlock()
	if len(sessions.closed) != 1 || sessions.closed[0] != "s-quiet" {
		t.Errorf("revoked sessions = %v; want [s-quiet]", sessions.closed)
	}
}
