package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"choir/choird/lease"
	"choir/internal/config"
	"choir/internal/rpc"
)

func storeCalls(m *Manager) int {
	s := m.Store.(*memStore)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func recordedBeat(m *Manager, session string) (Liveness, bool) {
	s := m.Store.(*memStore)
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.beats[session]
	return b, ok
}

// idleBeat is an idle agent's heartbeat: nothing new since base.
func idleBeat(log []rpc.Event, base int64) rpc.HeartbeatReq {
	req := rpc.HeartbeatReq{BaseRev: base, NewRev: base, ConfigVersion: 1}
	if base > 0 {
		req.HashPrev, req.HashNew = log[base-1].Hash, log[base-1].Hash
	}
	return req
}

// TestIdleHeartbeatsAskNothingOfTheStore: once the session's first
// heartbeat has been answered by the store, idle heartbeats are answered
// from memory, acknowledging exactly what the store holds; a heartbeat
// with events or a snapshot goes to the store again, and so does an idle
// one after the store said it lost the session.
func TestIdleHeartbeatsAskNothingOfTheStore(t *testing.T) {
	m, r, ctx := handlerManager(t, 4)
	m.Store.(*memStore).CreateSession(ctx, SessionRecord{SessionID: "s-1", AgentID: "a-1", Status: StatusActive})
	log := agentLog(6)
	if resp, err := m.HandleHeartbeat(ctx, idleBeat(log, 0)); err != nil || resp.AckRev != 0 {
		t.Fatalf("first idle heartbeat = %+v, %v; want ack 0", resp, err)
	}
	if n := storeCalls(m); n != 1 {
		t.Fatalf("the first heartbeat of a session made %d store calls; want 1 (it asks what the store holds)", n)
	}
	if _, err := m.HandleHeartbeat(ctx, beat(log, 1, 3)); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		resp, err := m.HandleHeartbeat(ctx, idleBeat(log, 3))
		if err != nil || resp.AckRev != 3 || resp.AckHash != log[2].Hash {
			t.Fatalf("idle heartbeat %d = %+v, %v; want ack 3 with its hash", i, resp, err)
		}
	}
	// An idle agent that is behind (its ack was lost) hears the head too.
	if resp, err := m.HandleHeartbeat(ctx, idleBeat(log, 1)); err != nil || resp.AckRev != 3 || resp.AckHash != log[2].Hash {
		t.Errorf("idle heartbeat from an older base = %+v, %v; want ack 3", resp, err)
	}
	if n := storeCalls(m); n != 2 {
		t.Errorf("one heartbeat with events and 51 idle ones made %d store calls in all; want 2", n)
	}
	r.mu.Lock()
	last := r.lastHeartbeat
	r.mu.Unlock()
	if last.IsZero() {
		t.Error("idle heartbeats left no sign of life")
	}

	// A snapshot alone goes to the store.
	req := idleBeat(log, 3)
	req.Snapshot, req.SnapshotRev = []byte(`{"reference_summary_edge":{},"reference_summary_core":{},"event_window_boundary":{},"skill_state":{},"lane_state":[],"open_jobs":[]}`), 3
	if resp, err := m.HandleHeartbeat(ctx, req); err != nil || resp.SnapshotRev != 3 {
		t.Fatalf("heartbeat with a snapshot = %+v, %v; want snapshot 3 stored", resp, err)
	}
	if resp, err := m.HandleHeartbeat(ctx, idleBeat(log, 3)); err != nil || resp.SnapshotRev != 3 {
		t.Errorf("idle heartbeat after the snapshot = %+v, %v; want snapshot_rev 3", resp, err)
	}
	if n := storeCalls(m); n != 3 {
		t.Errorf("store calls after the snapshot = %d; want 3", n)
	}

	// The store lost the session (the liveness record finds it missing):
	// the next idle heartbeat asks it again.
	st := m.Store.(*memStore)
	st.mu.Lock()
	st.sessions, st.events = map[string]SessionRecord{}, map[string][]rpc.Event{}
	st.mu.Unlock()
	m.recordLiveness(ctx, m.allRuns())
	if _, err := m.HandleHeartbeat(ctx, idleBeat(log, 3)); err != nil {
		t.Fatal(err)
	}
	if n := storeCalls(m); n != 5 {
		t.Errorf("store calls after the session went missing = %d; want 5 (the record, then the idle heartbeat asks the store)", n)
	}
}

// TestLivenessIsRecordedInOneCall: the newest heartbeats of many idle
// sessions reach the store in one call, and nothing is sent again until a
// session heartbeats anew.
func TestLivenessIsRecordedInOneCall(t *testing.T) {
	m, _, _ := handlerManager(t, 4)
	st := m.Store.(*memStore)
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	m.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	tick := func() { mu.Lock(); now = now.Add(time.Second); mu.Unlock() }
	ctxs := map[string]context.Context{}
	for i := range 100 {
		id := fmt.Sprintf("s-%03d", i)
		r := &Run{AgentID: fmt.Sprintf("a-%03d", i), SessionID: id, state: StateRunning,
			ready: make(chan struct{}), exited: make(chan struct{}), lanes: map[string]rpc.StatusReq{}}
		m.register(r)
		st.CreateSession(context.Background(), SessionRecord{SessionID: id, AgentID: r.AgentID, Status: StatusActive})
		ctxs[id] = rpc.WithCall(context.Background(), rpc.Call{RequestID: "r", SessionID: id})
	}
	for round := range 3 {
		tick()
		for id, ctx := range ctxs {
			req := idleBeat(nil, 0)
			req.ConfigVersion = int64(round + 1)
			if _, err := m.HandleHeartbeat(ctx, req); err != nil {
				t.Fatalf("%s: %v", id, err)
			}
		}
	}
	before := storeCalls(m) // each session's first heartbeat asked the store
	if before != 100 {
		t.Fatalf("300 idle heartbeats of 100 sessions made %d store calls; want 100 (each session's first)", before)
	}
	m.recordLiveness(context.Background(), m.allRuns())
	if n := storeCalls(m) - before; n != 1 {
		t.Errorf("recording 100 sessions' liveness took %d store calls; want 1", n)
	}
	for id := range ctxs {
		if b, ok := recordedBeat(m, id); !ok || !b.At.Equal(m.now()) || b.ConfigVersion != 3 {
			t.Fatalf("%s recorded as %+v (%v); want its last heartbeat at %v, config 3", id, b, ok, m.now())
		}
	}
	m.recordLiveness(context.Background(), m.allRuns())
	if n := storeCalls(m) - before; n != 1 {
		t.Errorf("a second record with no new heartbeat made a store call (%d in all); want none", n)
	}
}

// TestIdleAgentsStayAliveAndSilentOnesCrash: crash detection works from
// the heartbeats held in memory, as before: idle heartbeats (answered
// without the store) keep a session running, one that falls silent is
// crashed past the threshold, and the store gets the idle session's
// liveness within LivenessEvery and the crashed one's last heartbeat
// with its end.
func TestIdleAgentsStayAliveAndSilentOnesCrash(t *testing.T) {
	loaded, clock, advance := monitorClock()
	st := newMemStore()
	m := &Manager{Docker: &stubDocker{}, Store: st, Sessions: &stubSessions{}, Leases: lease.NewTable(), Logs: stubLogs{},
		Config: func() (*config.Loaded, int64) { return loaded, 1 }, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: clock,
		LivenessEvery: 500 * time.Millisecond}
	ctxs := map[string]context.Context{}
	for _, id := range []string{"quiet", "idle"} {
		r := &Run{AgentID: id, SessionID: "s-" + id, ContainerID: "c-" + id, state: StateRunning, lastHeartbeat: clock(),
			ready: make(chan struct{}), exited: make(chan struct{}), lanes: map[string]rpc.StatusReq{}}
		st.CreateSession(context.Background(), SessionRecord{SessionID: r.SessionID, AgentID: id, Status: StatusActive})
		m.register(r)
		ctxs[id] = rpc.WithCall(context.Background(), rpc.Call{RequestID: "r", SessionID: r.SessionID})
	}
	beatOf := func(id string) {
		t.Helper()
		if _, err := m.HandleHeartbeat(ctxs[id], idleBeat(nil, 0)); err != nil {
			t.Fatalf("heartbeat of %s: %v", id, err)
		}
	}
	beatOf("quiet")
	quietLast := clock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Monitor(ctx)

	// idle heartbeats every 100 ms; quiet falls silent. The monitor ticks
	// on its own (every 100 ms of real time): wait for it to see each step.
	for range 15 {
		advance(100 * time.Millisecond)
		beatOf("idle")
	}
	waitUntil(t, "the silent session to be crashed", func() bool { return st.status("s-quiet") == StatusCrashed })
	if got := st.status("s-idle"); got != StatusActive {
		t.Errorf("the idle session = %q; want still active", got)
	}
	if b, ok := recordedBeat(m, "s-quiet"); !ok || !b.At.Equal(quietLast) {
		t.Errorf("the crashed session's recorded heartbeat = %+v (%v); want its last, %v", b, ok, quietLast)
	}
	// The clock goes on, idle heartbeating every 100 ms: its liveness
	// reaches the store within LivenessEvery of the monitor's clock.
	crashedAt := clock()
	waitUntil(t, "the idle session's liveness to be recorded", func() bool {
		advance(100 * time.Millisecond)
		beatOf("idle")
		b, ok := recordedBeat(m, "s-idle")
		return ok && b.At.After(crashedAt)
	})
	if b, _ := recordedBeat(m, "s-idle"); clock().Sub(b.At) > 2*m.LivenessEvery {
		t.Errorf("the idle session's recorded heartbeat is %v old; want at most about %v", clock().Sub(b.At), m.LivenessEvery)
	}
	if got := st.status("s-idle"); got != StatusActive {
		t.Errorf("the idle session = %q; want still active", got)
	}
	ran := clock().Sub(time.Unix(1_800_000_000, 0))
	st.mu.Lock()
	calls := st.calls
	st.mu.Unlock()
	// quiet's and idle's first heartbeats, quiet's end, and a record every
	// LivenessEvery of the clock at most.
	if max := 3 + int(ran/m.LivenessEvery) + 1; calls > max {
		t.Errorf("the store was called %d times in %v of idle heartbeats every 100 ms; want at most %d", calls, ran, max)
	}
}

// slowStore is a memStore whose Replicate waits until release is closed
// (Postgres stalled under a heartbeat), telling entered.
type slowStore struct {
	*memStore
	entered, release chan struct{}
}

func (s *slowStore) Replicate(ctx context.Context, id string, b Replication) (Replicated, error) {
	s.entered <- struct{}{}
	<-s.release
	return s.memStore.Replicate(ctx, id, b)
}

// tickRuntime tells ticks of every Remove, which the monitor's sweep of
// leftover containers asks once per tick of a leftover it never removes:
// two ticks told after the clock moved mean one whole check ran on it.
type tickRuntime struct {
	fakeRuntime
	ticks chan struct{}
}

func (r *tickRuntime) Remove(context.Context, string) error {
	select {
	case r.ticks <- struct{}{}:
	default:
	}
	return errors.New("the engine is not answering")
}

// TestAHeartbeatWaitingOnTheStoreIsALife: while choird's store holds up a
// heartbeat (a stalled Postgres), the agent waits on choird, not the other
// way round: the crash monitor does not end the session however long the
// store takes; once the store answers the session goes on, and only real
// silence after that crashes it.
func TestAHeartbeatWaitingOnTheStoreIsALife(t *testing.T) {
	loaded, clock, advance := monitorClock()
	st := &slowStore{memStore: newMemStore(), entered: make(chan struct{}, 1), release: make(chan struct{})}
	rt := &tickRuntime{ticks: make(chan struct{})}
	m := &Manager{Docker: &stubDocker{}, Runtime: rt, Store: st, Sessions: &stubSessions{}, Leases: lease.NewTable(), Logs: stubLogs{},
		Config: func() (*config.Loaded, int64) { return loaded, 1 }, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: clock,
		LivenessEvery: time.Hour}
	m.leaveBehind("c-old", "a0") // the sweep asks the runtime for it at every tick
	r := &Run{AgentID: "a1", SessionID: "s-a1", ContainerID: "c-a1", state: StateRunning, lastHeartbeat: clock(),
		ready: make(chan struct{}), exited: make(chan struct{}), lanes: map[string]rpc.StatusReq{}}
	st.CreateSession(context.Background(), SessionRecord{SessionID: r.SessionID, AgentID: "a1", Status: StatusActive})
	m.register(r)
	call := rpc.WithCall(context.Background(), rpc.Call{RequestID: "r", SessionID: r.SessionID})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Monitor(ctx)
	tick := func() { <-rt.ticks; <-rt.ticks }

	beat := make(chan error, 1)
	go func() { _, err := m.HandleHeartbeat(call, idleBeat(nil, 0)); beat <- err }()
	<-st.entered
	advance(10 * time.Second) // ten thresholds while the store holds the heartbeat
	tick()
	if got := st.status(r.SessionID); got != StatusActive {
		t.Fatalf("the session while its heartbeat waited on the store = %q; want active", got)
	}
	close(st.release)
	if err := <-beat; err != nil {
		t.Fatalf("the held heartbeat = %v", err)
	}
	advance(500 * time.Millisecond) // within the threshold of the heartbeat's answer
	tick()
	if got := st.status(r.SessionID); got != StatusActive {
		t.Errorf("the session just after its held heartbeat was answered = %q; want active", got)
	}
	advance(5 * time.Second) // then silence
	waitUntil(t, "the silent session to be crashed", func() bool { return st.status(r.SessionID) == StatusCrashed })
}

// monitorClock is the config and clock of the crash monitor's tests: a
// heartbeat every 100 ms, a crash after 1 s of silence, and a clock that
// moves only when advanced.
func monitorClock() (loaded *config.Loaded, clock func() time.Time, advance func(time.Duration)) {
	c := config.Default()
	c.HeartbeatIntervalMS, c.CrashDetectionThresholdMS = 100, 1000
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	return &config.Loaded{Config: &c},
		func() time.Time { mu.Lock(); defer mu.Unlock(); return now },
		func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
}
