package lifecycle

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"choir/choird/lease"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/docker"
	"choir/internal/rpc"
)

// flakyEngine is a Docker engine that can stop answering: while down,
// every call fails as a dead socket does. Up, a wait blocks until the
// container exits (exit) or is gone (the engine forgot it).
type flakyEngine struct {
	Docker
	mu      sync.Mutex
	down    bool
	gone    bool
	waits   int // waits and inspects answered with a connection error
	exit    chan int64
	removed []string
	changed chan struct{}
}

func newFlakyEngine() *flakyEngine {
	return &flakyEngine{exit: make(chan int64, 1), changed: make(chan struct{}, 1)}
}

var errDead = &net.OpError{Op: "dial", Net: "unix", Err: syscall.ECONNREFUSED}

func (d *flakyEngine) set(down, gone bool) {
	d.mu.Lock()
	d.down, d.gone = down, gone
	d.mu.Unlock()
}

func (d *flakyEngine) ContainerWait(ctx context.Context, id string, _ docker.WaitCondition) (docker.WaitResponse, error) {
	d.mu.Lock()
	down, gone := d.down, d.gone
	if down {
		d.waits++
	}
	d.mu.Unlock()
	select {
	case d.changed <- struct{}{}:
	default:
	}
	switch {
	case down:
		return docker.WaitResponse{}, errDead
	case gone:
		return docker.WaitResponse{}, &docker.APIError{Status: 404, Message: "No such container: " + id}
	}
	select {
	case code := <-d.exit:
		return docker.WaitResponse{StatusCode: code}, nil
	case <-ctx.Done():
		return docker.WaitResponse{}, ctx.Err()
	}
}

func (d *flakyEngine) ContainerInspect(_ context.Context, id string) (docker.Container, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.down:
		d.waits++
		return docker.Container{}, errDead
	case d.gone:
		return docker.Container{}, &docker.APIError{Status: 404, Message: "No such container: " + id}
	}
	return docker.Container{ID: id, State: &docker.ContainerState{Status: "running", Running: true}}, nil
}

func (d *flakyEngine) ContainerStop(context.Context, string, time.Duration) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.down {
		return errDead
	}
	return nil
}

func (d *flakyEngine) ContainerRemove(_ context.Context, id string, _ docker.ContainerRemoveOptions) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.down {
		return errDead
	}
	d.removed = append(d.removed, id)
	return nil
}

func (d *flakyEngine) removedIDs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.removed...)
}

// recordingOutbox is the DM and the console as the lifecycle sees them.
type recordingOutbox struct {
	mu    sync.Mutex
	sent  []rpc.DMSend
	dms   []string
	ended []ctl.SessionEnd
}

var _ SessionEnds = (*recordingOutbox)(nil)

func (o *recordingOutbox) Deliver(_ context.Context, _, dm string, msg rpc.DMSend) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sent = append(o.sent, msg)
	o.dms = append(o.dms, dm)
	return nil
}

func (o *recordingOutbox) SessionEnded(_ context.Context, _ string, end ctl.SessionEnd) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ended = append(o.ended, end)
}

// faultManager is a Manager over d with one running session of agent
// "a1" (container c-a1, DM dm1, workspace ws1), watched.
func faultManager(t *testing.T, d Docker, out Outbox) (*Manager, *memStore, *Run) {
	t.Helper()
	c := config.Default()
	c.HeartbeatIntervalMS, c.CrashDetectionThresholdMS = 100, 1000
	c.Agents = map[string]config.Agent{"a1": {}}
	loaded := &config.Loaded{Config: &c}
	store := newMemStore()
	m := &Manager{Docker: d, Store: store, Sessions: &stubSessions{}, Leases: lease.NewTable(), Logs: stubLogs{}, Outbox: out,
		Config: func() (*config.Loaded, int64) { return loaded, 1 }, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		EngineRetry: time.Millisecond}
	if err := m.Leases.Acquire("a1", []lease.Resource{{Kind: lease.Workspace, Name: "ws1"}}); err != nil {
		t.Fatal(err)
	}
	r := &Run{AgentID: "a1", SessionID: "s-a1", ContainerID: "c-a1", state: StateRunning, lastHeartbeat: m.now(),
		Bindings: rpc.ResourceBindings{DM: "dm1"}, ready: make(chan struct{}), exited: make(chan struct{}), lanes: map[string]rpc.StatusReq{}}
	store.CreateSession(context.Background(), SessionRecord{SessionID: r.SessionID, AgentID: "a1", Status: StatusActive})
	m.register(r)
	return m, store, r
}

func waitUntil2(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func degraded(t *testing.T, m *Manager) string {
	st, err := m.Status("a1")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(st.Degraded, "\n")
}

// An engine that stops answering is not a crash: the session goes on,
// `agent status` says the engine is lost, and when the engine answers
// again it decides: the container still runs (the session is kept, the
// status clears), and a later exit is a crash like any other, told to the
// DM with how to start again.
func TestEngineOutageKeepsTheSession(t *testing.T) {
	d := newFlakyEngine()
	out := &recordingOutbox{}
	m, store, r := faultManager(t, d, out)
	d.set(true, false)
	go m.watch(r)

	waitUntil2(t, "agent status to say the engine is lost", func() bool { return strings.Contains(degraded(t, m), "Docker engine stopped answering") })
	waitUntil2(t, "the engine to be asked again", func() bool { d.mu.Lock(); defer d.mu.Unlock(); return d.waits >= 3 })
	if got := store.status("s-a1"); got != StatusActive {
		t.Fatalf("session during the outage = %q; want still active", got)
	}
	if m.run("a1") != r {
		t.Fatal("the run was dropped during the outage")
	}

	d.set(false, false) // back, the container still running
	waitUntil2(t, "the status to clear", func() bool { return degraded(t, m) == "" })
	select {
	case <-r.exited:
		t.Fatal("the run counted as exited after the engine came back with it running")
	default:
	}
	if got := store.status("s-a1"); got != StatusActive {
		t.Fatalf("session after the outage = %q; want still active", got)
	}

	d.exit <- 137 // now it dies
	waitUntil2(t, "the crash", func() bool { return store.status("s-a1") == StatusCrashed })
	// The leases go and the DM hears after the end is recorded.
	waitUntil2(t, "the end told", func() bool { out.mu.Lock(); defer out.mu.Unlock(); return len(out.ended) > 0 })
	if _, held := m.Leases.Holder(lease.Resource{Kind: lease.Workspace, Name: "ws1"}); held {
		t.Error("the crashed session still holds its workspace")
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	if len(out.sent) != 1 || out.dms[0] != "dm1" || out.sent[0].Kind != rpc.DMError {
		t.Fatalf("DM got %+v; want one error notice to dm1", out.sent)
	}
	for _, part := range []string{"a1 stopped unexpectedly", "code 137", "/start a1", "choirctl agent start a1"} {
		if !strings.Contains(out.sent[0].Text, part) {
			t.Errorf("crash notice = %q; want it to say %q", out.sent[0].Text, part)
		}
	}
	if len(out.ended) != 1 || out.ended[0].Status != StatusCrashed || out.ended[0].SessionID != "s-a1" {
		t.Errorf("session ends told = %+v; want one crash of s-a1", out.ended)
	}
}

// An engine that comes back without the container: the session crashed,
// and is ended so, leases released.
func TestEngineReturnsWithoutTheContainer(t *testing.T) {
	d := newFlakyEngine()
	out := &recordingOutbox{}
	m, store, r := faultManager(t, d, out)
	d.set(true, false)
	go m.watch(r)
	waitUntil2(t, "the wait to fail", func() bool { d.mu.Lock(); defer d.mu.Unlock(); return d.waits >= 1 })
	d.set(false, true)
	waitUntil2(t, "the crash", func() bool { return store.status("s-a1") == StatusCrashed })
	// The session's end is told after it is recorded.
	waitUntil2(t, "the end told", func() bool { out.mu.Lock(); defer out.mu.Unlock(); return len(out.ended) > 0 })
	out.mu.Lock()
	defer out.mu.Unlock()
	if len(out.ended) != 1 || !strings.Contains(out.ended[0].Reason, "container is gone") {
		t.Errorf("session ends told = %+v; want the container gone", out.ended)
	}
}

// A session that ends while the engine is down leaves its container
// behind only until the engine answers: the monitor removes it then.
func TestContainersLeftBehindAreRemovedWhenTheEngineReturns(t *testing.T) {
	d := newFlakyEngine()
	m, store, r := faultManager(t, d, &recordingOutbox{})
	d.set(true, false)
	go m.watch(r)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Monitor(ctx) // the agent is silent: crashed past the threshold
	waitUntil2(t, "the silent session to be crashed", func() bool { return store.status("s-a1") == StatusCrashed })
	if got := d.removedIDs(); len(got) != 0 {
		t.Fatalf("removed %v while the engine was down", got)
	}
	d.set(false, false)
	waitUntil2(t, "the container left behind to be removed", func() bool { return len(d.removedIDs()) == 1 })
	if got := d.removedIDs(); got[0] != "c-a1" {
		t.Errorf("removed %v; want [c-a1]", got)
	}
}

// Heartbeats that choird refuses make `agent status` degraded, with the
// reason, until one passes; Postgres or the engine down (the control
// plane's probes) shows for every agent.
func TestRefusedHeartbeatsShowInAgentStatus(t *testing.T) {
	m, _, r := faultManager(t, &stubDocker{}, nil)
	h := m.Handler()
	ctx := rpc.WithCall(context.Background(), rpc.Call{SessionID: r.SessionID})
	if _, err := h.HandleHeartbeat(ctx, rpc.HeartbeatReq{BaseRev: 0, NewRev: 5}); err == nil {
		t.Fatal("an inconsistent heartbeat was accepted")
	}
	_, refusal := h.HandleHeartbeat(ctx, rpc.HeartbeatReq{BaseRev: 0, NewRev: 7})
	if refusal == nil {
		t.Fatal("an inconsistent heartbeat was accepted")
	}
	if got := degraded(t, m); !strings.Contains(got, "heartbeats refused: 2 in a row") || !strings.Contains(got, refusal.Error()) {
		t.Errorf("agent status degraded = %q; want the refusals and the last reason", got)
	}
	if _, err := h.HandleHeartbeat(ctx, rpc.HeartbeatReq{}); err != nil {
		t.Fatalf("an empty heartbeat = %v", err)
	}
	if got := degraded(t, m); got != "" {
		t.Errorf("agent status degraded after a good heartbeat = %q; want nothing", got)
	}
	m.Health = func() []string { return []string{"Postgres unreachable for 3s: connection refused"} }
	if got := degraded(t, m); got != "Postgres unreachable for 3s: connection refused" {
		t.Errorf("agent status degraded = %q; want the control plane's finding", got)
	}
	m.end(r, StatusStopped, "test")
	if got := degraded(t, m); !strings.Contains(got, "Postgres unreachable") {
		t.Errorf("a stopped agent's status degraded = %q; want the control plane's finding too", got)
	}
}
