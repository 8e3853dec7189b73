package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/choird/lease"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/docker"
	"choir/internal/rpc"
	"choir/testkit"
)

// agentEngine is a Docker engine whose containers are agents that say
// hello as soon as they start (unless mute), run until the test kills
// them, and can be made to fail to start.
type agentEngine struct {
	Docker
	m *Manager

	mu        sync.Mutex
	n         int
	exits     map[string]chan int64
	creates   int
	failStart error // ContainerStart answers this while set
	mute      bool  // the agent never says hello
	pid       int   // the State.Pid inspect reports (netattempts_test.go)
}

func (d *agentEngine) ContainerInspect(_ context.Context, id string) (docker.Container, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return docker.Container{ID: id, State: &docker.ContainerState{Running: true, Pid: d.pid}}, nil
}

func (d *agentEngine) ImageInspect(_ context.Context, ref string) (docker.Image, error) {
	agent := strings.TrimSuffix(strings.TrimPrefix(ref, "choir-agent-"), ":latest")
	return docker.Image{Config: &docker.ContainerConfig{Labels: map[string]string{LabelManaged: "true", LabelAgent: agent, LabelImageVersion: "v1"}}}, nil
}

func (d *agentEngine) ContainerCreate(context.Context, string, *docker.ContainerConfig, *docker.HostConfig) (docker.CreateResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n++
	d.creates++
	id := fmt.Sprintf("c%011d", d.n)
	d.exits[id] = make(chan int64, 1)
	return docker.CreateResponse{ID: id}, nil
}

func (d *agentEngine) ContainerStart(_ context.Context, id string) error {
	d.mu.Lock()
	fail, mute := d.failStart, d.mute
	d.mu.Unlock()
	if fail != nil {
		return fail
	}
	if !mute {
		go d.hello(id)
	}
	return nil
}

// hello is the agent's INIT_HELLO.
func (d *agentEngine) hello(id string) {
	d.m.mu.Lock()
	var r *Run
	for _, run := range d.m.runs {
		if run.ContainerID == id {
			r = run
		}
	}
	d.m.mu.Unlock()
	if r == nil {
		return
	}
	ctx := rpc.WithCall(context.Background(), rpc.Call{SessionID: r.SessionID})
	d.m.HandleInitHello(ctx, rpc.InitHelloReq{AgentID: r.AgentID, SessionID: r.SessionID, ImageVersion: r.ImageVersion})
}

func (d *agentEngine) ContainerWait(ctx context.Context, id string, _ docker.WaitCondition) (docker.WaitResponse, error) {
	d.mu.Lock()
	exit := d.exits[id]
	d.mu.Unlock()
	select {
	case code := <-exit:
		return docker.WaitResponse{StatusCode: code}, nil
	case <-ctx.Done():
		return docker.WaitResponse{}, ctx.Err()
	}
}

// kill ends a container as if its process died.
func (d *agentEngine) kill(id string, code int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	select {
	case d.exits[id] <- code:
	default:
	}
}

func (d *agentEngine) ContainerStop(_ context.Context, id string, _ time.Duration) error {
	d.kill(id, 143)
	return nil
}

func (d *agentEngine) ContainerRemove(_ context.Context, id string, _ docker.ContainerRemoveOptions) error {
	d.kill(id, 137)
	return nil
}

func (d *agentEngine) ContainerLogs(context.Context, string, docker.LogsOptions) (*docker.LogStream, error) {
	return nil, errors.New("no logs in this fake")
}

func (d *agentEngine) createCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.creates
}

type nopSockets struct{}

func (nopSockets) ListenAgent(string, string) (io.Closer, error) { return io.NopCloser(nil), nil }

// fakeTimers is Manager.AfterFunc: it records each scheduled restart; the
// test fires it.
type fakeTimers struct {
	mu     sync.Mutex
	timers []*fakeTimer
}

type fakeTimer struct {
	ft      *fakeTimers
	d       time.Duration
	f       func()
	stopped bool
}

func (t *fakeTimer) Stop() bool {
	t.ft.mu.Lock()
	defer t.ft.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

func (ft *fakeTimers) AfterFunc(d time.Duration, f func()) Timer {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	t := &fakeTimer{ft: ft, d: d, f: f}
	ft.timers = append(ft.timers, t)
	return t
}

func (ft *fakeTimers) count() int {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return len(ft.timers)
}

func (ft *fakeTimers) last() *fakeTimer {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return ft.timers[len(ft.timers)-1]
}

func (ft *fakeTimers) stopped(i int) bool {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return ft.timers[i].stopped
}

// restartRig is a Manager over agentEngine with agent "a1" (workspaces
// main and other, DM dm1) under the given restart policy, a settable
// clock and fake timers.
type restartRig struct {
	m      *Manager
	d      *agentEngine
	store  *memStore
	out    *recordingOutbox
	timers *fakeTimers

	mu  sync.Mutex
	now time.Time
}

func newRestartRig(t *testing.T, policy config.RestartPolicy) *restartRig {
	t.Helper()
	ws := map[string]string{"main": filepath.Join(t.TempDir(), "main"), "other": filepath.Join(t.TempDir(), "other")}
	for _, p := range ws {
		if err := testkit.MakeWorkspace(p); err != nil {
			t.Fatal(err)
		}
	}
	c := config.Default()
	c.HeartbeatIntervalMS, c.CrashDetectionThresholdMS = 100, 1000
	c.Workspaces = map[string]config.Workspace{"main": {Path: ws["main"]}, "other": {Path: ws["other"]}}
	c.Models = map[string]config.Model{"m": {Provider: "p", Model: "x", Endpoint: "http://127.0.0.1:1/v1", ContextWindow: 8192}}
	c.GitIdentities = map[string]config.GitIdentity{"dev": {Name: "Dev", Email: "d@x", Secret: "git"}}
	c.Gateways = map[string]config.Gateway{"bot": {Type: "telegram", Secret: "tg"}}
	c.DMs = map[string]config.DM{"dm1": {Gateway: "bot", UserID: "1"}}
	c.Agents = map[string]config.Agent{"a1": {Defaults: config.AgentDefaults{Workspace: "main", LLM: "m", GitIdentity: "dev", DM: "dm1"}, Restart: policy}}
	loaded := &config.Loaded{Config: &c, Secrets: config.Secrets{"git": "x", "tg": "y"}}
	rig := &restartRig{d: &agentEngine{exits: map[string]chan int64{}}, store: newMemStore(), out: &recordingOutbox{}, timers: &fakeTimers{},
		now: time.Unix(1_800_000_000, 0)}
	rig.m = &Manager{Docker: rig.d, Store: rig.store, Sessions: rigSessions{rig}, Sockets: nopSockets{}, Leases: lease.NewTable(), Logs: stubLogs{},
		Outbox: rig.out, Home: config.Home{Dir: filepath.Join(t.TempDir(), "home")}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Config: func() (*config.Loaded, int64) { return loaded, 1 }, Now: rig.clock, AfterFunc: rig.timers.AfterFunc, ReadyTimeout: time.Minute}
	rig.d.m = rig.m
	t.Cleanup(rig.m.StopRestarts)
	return rig
}

// rigSessions is the agent's push stream: on shutdown the agent says
// TERMINATE_SELF and exits, as choir-agent does.
type rigSessions struct{ rig *restartRig }

func (rigSessions) Open(string, string, string) {}
func (rigSessions) Close(string)                {}
func (s rigSessions) Publish(sessionID, typ string, _ any) (string, bool) {
	if typ != "shutdown" {
		return "", true
	}
	r := s.rig.m.bySession(sessionID)
	if r == nil {
		return "", false
	}
	s.rig.m.HandleTerminate(rpc.WithCall(context.Background(), rpc.Call{SessionID: sessionID}), rpc.TerminateReq{Reason: "shutdown requested"})
	s.rig.d.kill(r.ContainerID, 0)
	return "", true
}

func (rig *restartRig) clock() time.Time {
	rig.mu.Lock()
	defer rig.mu.Unlock()
	return rig.now
}

func (rig *restartRig) advance(d time.Duration) {
	rig.mu.Lock()
	rig.now = rig.now.Add(d)
	rig.mu.Unlock()
}

// crash kills the running session's container and waits until a1's
// session has ended as crashed.
func (rig *restartRig) crash(t *testing.T) *Run {
	t.Helper()
	r := rig.m.run("a1")
	if r == nil {
		t.Fatal("crash: a1 is not running")
	}
	n := rig.ends()
	rig.d.kill(r.ContainerID, 137)
	waitUntil2(t, "the crash to end the session", func() bool { return rig.ends() > n })
	return r
}

// ends counts the sessions ended so far (told once end is done).
func (rig *restartRig) ends() int {
	rig.out.mu.Lock()
	defer rig.out.mu.Unlock()
	return len(rig.out.ended)
}

// fire runs the last scheduled restart as its timer would, and waits
// until the attempt has finished (running again, or failed).
func (rig *restartRig) fire(t *testing.T) {
	t.Helper()
	rig.advance(rig.timers.last().d)
	before, _ := rig.attempts()
	go rig.timers.last().f()
	// Not through Status: it reads a starting run's container id, which
	// launch writes without the run's lock.
	waitUntil2(t, "the restart attempt to finish", func() bool {
		n, attempting := rig.attempts()
		return n > before && !attempting
	})
}

// attempts reads a1's restart count and whether an attempt is in Start.
func (rig *restartRig) attempts() (int, bool) {
	rs := &rig.m.restarts
	rs.mu.Lock()
	defer rs.mu.Unlock()
	st := rs.agents["a1"]
	if st == nil {
		return 0, false
	}
	return st.count, st.attempting
}

func (rig *restartRig) restart(t *testing.T) ctl.RestartStatus {
	t.Helper()
	st, err := rig.m.Status("a1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Restart == nil {
		t.Fatal("agent status has no restart policy")
	}
	return *st.Restart
}

func (rig *restartRig) lastDM(t *testing.T) string {
	t.Helper()
	rig.out.mu.Lock()
	defer rig.out.mu.Unlock()
	if len(rig.out.sent) == 0 {
		t.Fatal("the DM heard nothing")
	}
	return rig.out.sent[len(rig.out.sent)-1].Text
}

func onCrash(maxRestarts, backoffMS, maxBackoffMS int) config.RestartPolicy {
	return config.RestartPolicy{Policy: config.RestartOnCrash, MaxRestarts: maxRestarts, BackoffMS: backoffMS, MaxBackoffMS: maxBackoffMS}
}

func contains(t *testing.T, what, got string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(got, p) {
			t.Errorf("%s = %q; want it to say %q", what, got, p)
		}
	}
}

// A crashed agent with policy on-crash is started again after the
// backoff, with the bindings its crashed session started with; each
// crash in a row doubles the wait (up to max_backoff_ms); after
// max_restarts in a row choird gives up, and status and the DM say so.
func TestRestartPolicyRestartsACrashedAgent(t *testing.T) {
	rig := newRestartRig(t, onCrash(3, 2000, 5000))
	ctx := context.Background()
	if _, err := rig.m.Start(ctx, "a1", lease.Overrides{Workspace: "other"}); err != nil {
		t.Fatalf("Start = %v", err)
	}
	if st := rig.restart(t); st.Policy != "on-crash" || st.MaxRestarts != 3 || st.Restarts != 0 || !st.NextAt.IsZero() {
		t.Errorf("restart status of a running agent = %+v; want on-crash, max 3, nothing pending", st)
	}

	for i, want := range []time.Duration{2 * time.Second, 4 * time.Second, 5 * time.Second} {
		crashed := rig.crash(t)
		if rig.timers.count() != i+1 {
			t.Fatalf("crash %d: %d restarts scheduled; want %d", i+1, rig.timers.count(), i+1)
		}
		if got := rig.timers.last().d; got != want {
			t.Errorf("crash %d: restart scheduled after %s; want %s", i+1, got, want)
		}
		st := rig.restart(t)
		if st.Restarts != i || !st.NextAt.Equal(rig.clock().Add(want)) || st.Backoff != want.String() || !strings.Contains(st.LastCrash, "code 137") {
			t.Errorf("crash %d: restart status = %+v; want %d restarts so far, the next at now+%s, the crash's reason", i+1, st, i, want)
		}
		contains(t, "crash notice", rig.lastDM(t), "a1 stopped unexpectedly", "starts it again in "+want.String(), "choirctl agent stop a1")
		if strings.Contains(rig.lastDM(t), "/start a1") {
			t.Errorf("crash notice = %q; it tells the user to start an agent that restarts by itself", rig.lastDM(t))
		}

		rig.fire(t)
		r := rig.m.run("a1")
		if r == nil || r.getState() != StateRunning {
			t.Fatalf("restart %d: a1 is not running", i+1)
		}
		if r == crashed || r.bindings().Workspace != "other" || r.bindings().DM != "dm1" {
			t.Errorf("restart %d: bindings %+v; want the crashed session's (workspace other)", i+1, r.bindings())
		}
		if st := rig.restart(t); st.Restarts != i+1 || !st.NextAt.IsZero() {
			t.Errorf("restart %d: status = %+v; want %d restarts, nothing pending", i+1, st, i+1)
		}
	}

	rig.crash(t) // the fourth crash in a row
	if rig.timers.count() != 3 {
		t.Errorf("%d restarts scheduled after max_restarts was reached; want 3", rig.timers.count())
	}
	st := rig.restart(t)
	contains(t, "gave_up", st.GaveUp, "3 restarts in a row", "max_restarts")
	if !st.NextAt.IsZero() {
		t.Errorf("next attempt %v after giving up; want none", st.NextAt)
	}
	contains(t, "crash notice", rig.lastDM(t), "restarted it 3 times in a row", "stays stopped", "/start a1")
	if s, _ := rig.m.Status("a1"); s.State != "stopped" {
		t.Errorf("state after giving up = %s; want stopped", s.State)
	}

	// An operator start begins a new count.
	if _, err := rig.m.Start(ctx, "a1", lease.Overrides{}); err != nil {
		t.Fatalf("Start after giving up = %v", err)
	}
	if st := rig.restart(t); st.Restarts != 0 || st.GaveUp != "" {
		t.Errorf("status after an operator start = %+v; want a new count", st)
	}
	rig.crash(t)
	if got := rig.timers.last().d; rig.timers.count() != 4 || got != 2*time.Second {
		t.Errorf("after an operator start, a crash scheduled %d restarts, the last after %s; want 4, 2s", rig.timers.count(), got)
	}
}

// A session that ran RestartStableAfter before it crashed starts the
// count over: the wait is backoff_ms again.
func TestRestartCountStartsOverAfterAStableRun(t *testing.T) {
	rig := newRestartRig(t, onCrash(5, 1000, 60000))
	if _, err := rig.m.Start(context.Background(), "a1", lease.Overrides{}); err != nil {
		t.Fatal(err)
	}
	rig.crash(t)
	rig.fire(t)
	rig.crash(t)
	if got := rig.timers.last().d; got != 2*time.Second {
		t.Fatalf("second crash in a row: wait %s; want 2s", got)
	}
	rig.fire(t)
	rig.advance(RestartStableAfter)
	if st := rig.restart(t); st.Restarts != 0 {
		t.Errorf("restarts shown after a stable run = %d; want 0", st.Restarts)
	}
	rig.crash(t)
	if got := rig.timers.last().d; got != time.Second {
		t.Errorf("crash after %s of running: wait %s; want backoff_ms again (1s)", RestartStableAfter, got)
	}
}

// A restart that fails counts and waits longer; when the last allowed one
// fails, choird gives up, and status and the DM say why.
func TestFailedRestartsBackOffThenGiveUp(t *testing.T) {
	rig := newRestartRig(t, onCrash(2, 500, 60000))
	if _, err := rig.m.Start(context.Background(), "a1", lease.Overrides{}); err != nil {
		t.Fatal(err)
	}
	rig.crash(t)
	rig.d.mu.Lock()
	rig.d.failStart = errors.New("engine says: no space left on device")
	rig.d.mu.Unlock()

	rig.fire(t)
	st := rig.restart(t)
	if st.Restarts != 1 || st.LastError == "" || !strings.Contains(st.LastError, "no space left") {
		t.Errorf("after a failed restart: %+v; want 1 restart and its error", st)
	}
	if got := rig.timers.last().d; rig.timers.count() != 2 || got != time.Second {
		t.Fatalf("after a failed restart: %d scheduled, the last after %s; want 2, 1s (doubled)", rig.timers.count(), got)
	}
	if !st.NextAt.Equal(rig.clock().Add(time.Second)) {
		t.Errorf("next attempt at %v; want now+1s", st.NextAt)
	}

	rig.fire(t)
	st = rig.restart(t)
	contains(t, "gave_up", st.GaveUp, "restart 2 of 2 in a row failed", "no space left on device")
	if rig.timers.count() != 2 || !st.NextAt.IsZero() {
		t.Errorf("after the last failed restart: %d scheduled, next %v; want no more", rig.timers.count(), st.NextAt)
	}
	waitUntil2(t, "the DM to hear that choird gave up", func() bool { return strings.Contains(rig.lastDM(t), "could not start it again") })
	contains(t, "DM", rig.lastDM(t), "could not start it again", "2 restarts in a row failed", "no space left on device", "/start a1")
	if rig.m.run("a1") != nil {
		t.Error("a1 runs after every restart failed")
	}
	if _, held := rig.m.Leases.Holder(lease.Resource{Kind: lease.Workspace, Name: "main"}); held {
		t.Error("a failed restart left its workspace lease behind")
	}
}

// `agent stop` during the backoff cancels the restart (and says so by
// succeeding); so does `agent start`: the old timer then does nothing.
func TestStopOrStartCancelsAPendingRestart(t *testing.T) {
	rig := newRestartRig(t, onCrash(5, 2000, 60000))
	ctx := context.Background()
	if _, err := rig.m.Start(ctx, "a1", lease.Overrides{}); err != nil {
		t.Fatal(err)
	}
	rig.crash(t)
	if err := rig.m.Stop(ctx, "a1"); err != nil {
		t.Fatalf("Stop during the backoff = %v; want the pending restart cancelled", err)
	}
	if !rig.timers.stopped(0) {
		t.Error("the restart's timer was not stopped")
	}
	if st := rig.restart(t); !st.NextAt.IsZero() || st.Restarts != 0 {
		t.Errorf("status after the stop = %+v; want nothing pending", st)
	}
	creates := rig.d.createCount()
	rig.timers.last().f() // a timer that fires anyway does nothing
	if rig.m.run("a1") != nil || rig.d.createCount() != creates {
		t.Error("a cancelled restart started the agent")
	}
	if err := rig.m.Stop(ctx, "a1"); !errors.Is(err, ErrNotRunning) {
		t.Errorf("a second Stop = %v; want not running", err)
	}

	// An operator's start during the backoff: the pending restart is moot.
	if _, err := rig.m.Start(ctx, "a1", lease.Overrides{}); err != nil {
		t.Fatal(err)
	}
	rig.crash(t)
	pending := rig.timers.last()
	if _, err := rig.m.Start(ctx, "a1", lease.Overrides{}); err != nil {
		t.Fatalf("operator Start during the backoff = %v", err)
	}
	running := rig.m.run("a1")
	if st := rig.restart(t); !st.NextAt.IsZero() {
		t.Errorf("status after an operator start = %+v; want nothing pending", st)
	}
	creates = rig.d.createCount()
	pending.f()
	if rig.m.run("a1") != running || rig.d.createCount() != creates {
		t.Error("the pending restart started the agent again after an operator started it")
	}
}

// Only crashes restart: a graceful stop, an agent's TERMINATE_SELF, a
// start that fails before INIT_HELLO, and any crash under policy off do
// not.
func TestOnlyCrashesRestart(t *testing.T) {
	ctx := context.Background()
	t.Run("graceful stop", func(t *testing.T) {
		rig := newRestartRig(t, onCrash(5, 100, 1000))
		rig.m.Start(ctx, "a1", lease.Overrides{})
		if err := rig.m.Stop(ctx, "a1"); err != nil {
			t.Fatal(err)
		}
		if n := rig.timers.count(); n != 0 {
			t.Errorf("%d restarts scheduled after a graceful stop; want none", n)
		}
	})
	t.Run("terminate self", func(t *testing.T) {
		rig := newRestartRig(t, onCrash(5, 100, 1000))
		rig.m.Start(ctx, "a1", lease.Overrides{})
		r := rig.m.run("a1")
		if _, err := rig.m.HandleTerminate(rpc.WithCall(ctx, rpc.Call{SessionID: r.SessionID}), rpc.TerminateReq{Reason: BudgetSpentReason}); err != nil {
			t.Fatal(err)
		}
		n := rig.ends()
		rig.d.kill(r.ContainerID, 0)
		waitUntil2(t, "the session to end", func() bool { return rig.ends() > n })
		if got := rig.store.status(r.SessionID); got != StatusStopped {
			t.Errorf("session = %s; want stopped", got)
		}
		if n := rig.timers.count(); n != 0 {
			t.Errorf("%d restarts scheduled after TERMINATE_SELF; want none", n)
		}
	})
	t.Run("exit before hello", func(t *testing.T) {
		rig := newRestartRig(t, onCrash(5, 100, 1000))
		rig.d.mute = true
		done := make(chan error, 1)
		go func() { _, err := rig.m.Start(ctx, "a1", lease.Overrides{}); done <- err }()
		waitUntil2(t, "the container to start", func() bool { return rig.d.createCount() == 1 })
		rig.d.kill(fmt.Sprintf("c%011d", 1), 1)
		if err := <-done; err == nil || !strings.Contains(err.Error(), "before it said hello") {
			t.Fatalf("Start = %v; want it to fail before hello", err)
		}
		if n := rig.timers.count(); n != 0 {
			t.Errorf("%d restarts scheduled after a start that failed; want none", n)
		}
	})
	t.Run("policy off", func(t *testing.T) {
		rig := newRestartRig(t, config.DefaultRestartPolicy())
		rig.m.Start(ctx, "a1", lease.Overrides{})
		rig.crash(t)
		if n := rig.timers.count(); n != 0 {
			t.Errorf("%d restarts scheduled under policy off; want none", n)
		}
		if st := rig.restart(t); st.Policy != "off" || st.Restarts != 0 || !st.NextAt.IsZero() {
			t.Errorf("status = %+v; want policy off, nothing done", st)
		}
		contains(t, "crash notice", rig.lastDM(t), "/start a1")
	})
	t.Run("no policy written", func(t *testing.T) {
		rig := newRestartRig(t, config.RestartPolicy{})
		rig.m.Start(ctx, "a1", lease.Overrides{})
		rig.crash(t)
		if n := rig.timers.count(); n != 0 {
			t.Errorf("%d restarts scheduled without a policy; want none", n)
		}
		if st := rig.restart(t); st.Policy != "off" {
			t.Errorf("policy shown = %q; want off", st.Policy)
		}
	})
}

// StopRestarts (choird stopping) cancels what is pending, ends an attempt
// waiting in Start, waits for it, and schedules nothing afterwards.
func TestStopRestartsCancelsEverything(t *testing.T) {
	rig := newRestartRig(t, onCrash(5, 100, 1000))
	ctx := context.Background()
	if _, err := rig.m.Start(ctx, "a1", lease.Overrides{}); err != nil {
		t.Fatal(err)
	}
	rig.crash(t)
	rig.d.mu.Lock()
	rig.d.mute = true // the restarted agent never says hello: the attempt waits in Start
	rig.d.mu.Unlock()
	attempt := make(chan struct{})
	creates := rig.d.createCount()
	go func() { rig.timers.last().f(); close(attempt) }()
	waitUntil2(t, "the attempt to wait in Start", func() bool { return rig.d.createCount() > creates })

	rig.m.StopRestarts()
	if rig.m.run("a1") != nil {
		t.Error("StopRestarts returned with the attempt's session still there")
	}
	waitUntil2(t, "the attempt to return", func() bool {
		select {
		case <-attempt:
			return true
		default:
			return false
		}
	})
	if _, held := rig.m.Leases.Holder(lease.Resource{Kind: lease.Workspace, Name: "main"}); held {
		t.Error("the cancelled attempt left its lease behind")
	}

	// Crashes while choird stops are not restarted.
	rig.d.mu.Lock()
	rig.d.mute = false
	rig.d.mu.Unlock()
	if _, err := rig.m.Start(ctx, "a1", lease.Overrides{}); err != nil {
		t.Fatal(err)
	}
	n := rig.timers.count()
	rig.crash(t)
	if rig.timers.count() != n {
		t.Error("a crash after StopRestarts scheduled a restart")
	}
	contains(t, "crash notice", rig.lastDM(t), "/start a1")
}
