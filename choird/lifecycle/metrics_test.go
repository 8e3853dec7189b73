package lifecycle

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"choir/choird/lease"
	"choir/internal/config"
	"choir/internal/metrics"
	"choir/internal/rpc"
)

// TestEventsStoredOnceEach: the hook /metrics counts model and tool calls
// from sees every stored event once as new (after the revision it gives),
// resends included, and each heartbeat counts as received.
func TestEventsStoredOnceEach(t *testing.T) {
	m, r, ctx := handlerManager(t, 4)
	var fresh []int64
	m.EventsStored = func(agentID string, after int64, events []rpc.Event) {
		if agentID != r.AgentID {
			t.Errorf("EventsStored for %q; want %q", agentID, r.AgentID)
		}
		for _, e := range events {
			if e.Rev > after {
				fresh = append(fresh, e.Rev)
			}
		}
	}
	received := metrics.HeartbeatsReceived.With(r.AgentID)
	before := received.Value()
	log := agentLog(6)
	beats := []rpc.HeartbeatReq{beat(log, 1, 0), beat(log, 1, 3), beat(log, 1, 3), beat(log, 2, 5), beat(log, 3, 2), beat(log, 6, 6)}
	for _, b := range beats {
		if _, err := m.HandleHeartbeat(ctx, b); err != nil {
			t.Fatalf("HandleHeartbeat(%d-%d) = %v", b.BaseRev+1, b.NewRev, err)
		}
	}
	if want := []int64{1, 2, 3, 4, 5, 6}; !slices.Equal(fresh, want) {
		t.Errorf("events reported new = %v; want each once: %v", fresh, want)
	}
	if got := received.Value() - before; got != float64(len(beats)) {
		t.Errorf("choir_heartbeats_received_total rose by %v; want %d", got, len(beats))
	}
}

// TestMissedHeartbeatsAreCounted: the session the monitor crashes for
// silence is counted in choir_heartbeats_missed_total under its agent.
func TestMissedHeartbeatsAreCounted(t *testing.T) {
	c := config.Default()
	c.HeartbeatIntervalMS, c.CrashDetectionThresholdMS = 100, 1000
	loaded := &config.Loaded{Config: &c}
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	store := newMemStore()
	m := &Manager{Docker: &stubDocker{}, Store: store, Sessions: &stubSessions{}, Leases: lease.NewTable(), Logs: stubLogs{},
		Config: func() (*config.Loaded, int64) { return loaded, 1 }, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: clock}
	r := &Run{AgentID: "metrics-quiet", SessionID: "s-metrics-quiet", ContainerID: "c-q", state: StateRunning, lastHeartbeat: clock(),
		ready: make(chan struct{}), exited: make(chan struct{}), lanes: map[string]rpc.StatusReq{}}
	store.CreateSession(context.Background(), SessionRecord{SessionID: r.SessionID, AgentID: r.AgentID, Status: StatusActive})
	m.register(r)
	missed := metrics.HeartbeatsMissed.With(r.AgentID)
	before := missed.Value()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Monitor(ctx)
	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	waitUntil(t, "the silent session to be crashed", func() bool { return store.status(r.SessionID) == StatusCrashed })
	if got := missed.Value() - before; got != 1 {
		t.Errorf("choir_heartbeats_missed_total{agent=%q} rose by %v; want 1", r.AgentID, got)
	}
}
