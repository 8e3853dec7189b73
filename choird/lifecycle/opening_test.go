package lifecycle

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"choir/choird/lease"
	"choir/internal/config"
	"choir/internal/rpc"
)

// slowImages is a store that takes d of the test's clock to read an image
// record: GET_SECRETS waiting on a busy Postgres.
type slowImages struct {
	ImageRecords
	advance func(time.Duration)
	d       time.Duration
}

func (s slowImages) ImageRecord(context.Context, string) (ImageRecord, error) {
	s.advance(s.d)
	return ImageRecord{}, nil
}

// TestFirstHeartbeatIsAwaitedFromTheOpeningCalls: a session whose opening
// calls are slow (GET_SECRETS waits 0.9 s on the store, FETCH_DYNAMIC_CONFIG
// comes after) is not crashed for a first heartbeat that comes within the
// threshold of its last opening call's answer, though more than the
// threshold after INIT_HELLO; a session that said hello and nothing more
// is crashed at the threshold. Once a heartbeat came, only heartbeats
// count: a later GET_SECRETS does not keep a silent session alive.
func TestFirstHeartbeatIsAwaitedFromTheOpeningCalls(t *testing.T) {
	loaded, clock, advance := monitorClock()
	st := newMemStore()
	m := &Manager{Docker: &stubDocker{}, Store: st, Sessions: &stubSessions{}, Leases: lease.NewTable(), Logs: stubLogs{},
		Config: func() (*config.Loaded, int64) { return loaded, 1 }, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: clock,
		Images: slowImages{advance: advance, d: 900 * time.Millisecond}}
	ctxs := map[string]context.Context{}
	for _, id := range []string{"hello-only", "opening"} {
		// As INIT_HELLO leaves it: running, its last sign of life now.
		r := &Run{AgentID: id, SessionID: "s-" + id, ContainerID: "c-" + id, state: StateRunning, lastHeartbeat: clock(),
			ready: make(chan struct{}), exited: make(chan struct{}), lanes: map[string]rpc.StatusReq{}}
		st.CreateSession(context.Background(), SessionRecord{SessionID: r.SessionID, AgentID: id, Status: StatusActive})
		m.register(r)
		ctxs[id] = rpc.WithCall(context.Background(), rpc.Call{RequestID: "r", SessionID: r.SessionID})
	}
	advance(300 * time.Millisecond)
	if _, err := m.HandleSecrets(ctxs["opening"], rpc.SecretReq{}); err != nil { // answered at 1.2 s
		t.Fatal(err)
	}
	advance(100 * time.Millisecond)
	if _, err := m.HandleFetchConfig(ctxs["opening"], rpc.ConfigReq{CurrentConfigVersion: 1}); err != nil { // 1.3 s
		t.Fatal(err)
	}
	advance(500 * time.Millisecond) // 1.8 s after INIT_HELLO, 0.5 s after the last opening call

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Monitor(ctx)
	// One sweep sees both sessions at the same clock.
	waitUntil(t, "the session that only said hello to be crashed", func() bool { return st.status("s-hello-only") == StatusCrashed })
	if got := st.status("s-opening"); got != StatusActive {
		t.Fatalf("the session still within the threshold of its opening calls = %q; want active", got)
	}

	// Its first heartbeat; then only heartbeats count.
	if _, err := m.HandleHeartbeat(ctxs["opening"], idleBeat(nil, 0)); err != nil {
		t.Fatal(err)
	}
	advance(600 * time.Millisecond)
	if _, err := m.HandleSecrets(ctxs["opening"], rpc.SecretReq{}); err != nil { // answered 1.5 s after the heartbeat
		t.Fatal(err)
	}
	waitUntil(t, "the session silent since its heartbeat to be crashed", func() bool { return st.status("s-opening") == StatusCrashed })
}
