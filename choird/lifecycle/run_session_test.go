package lifecycle

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/choird/lease"
	"choir/internal/config"
	"choir/internal/docker"
	"choir/internal/rpc"
)

// runEngine is agentEngine whose containers say hello for run sessions
// too, noting what each container was made with.
type runEngine struct {
	*agentEngine
	mu      sync.Mutex
	created map[string]*docker.HostConfig // by name
	labels  map[string]map[string]string
	cmds    map[string][]string
	names   []string
}

func (d *runEngine) ContainerCreate(ctx context.Context, name string, cfg *docker.ContainerConfig, hc *docker.HostConfig) (docker.CreateResponse, error) {
	resp, err := d.agentEngine.ContainerCreate(ctx, name, cfg, hc)
	d.mu.Lock()
	d.created[name], d.labels[name] = hc, cfg.Labels
	if d.cmds == nil {
		d.cmds = map[string][]string{}
	}
	d.cmds[name] = cfg.Cmd
	d.names = append(d.names, name)
	d.mu.Unlock()
	return resp, err
}

func (d *runEngine) ContainerStart(_ context.Context, id string) error {
	go func() {
		d.m.mu.Lock()
		var r *Run
		for _, run := range d.m.sessions {
			if run.ContainerID == id {
				r = run
			}
		}
		d.m.mu.Unlock()
		if r != nil {
			ctx := rpc.WithCall(context.Background(), rpc.Call{SessionID: r.SessionID})
			d.m.HandleInitHello(ctx, rpc.InitHelloReq{AgentID: r.AgentID, SessionID: r.SessionID, ImageVersion: r.ImageVersion})
		}
	}()
	return nil
}

// runSessions is the push stream: it keeps the user messages given, and
// on shutdown the agent says TERMINATE_SELF and exits.
type runSessions struct {
	m  *Manager
	d  *runEngine
	mu sync.Mutex
	// msgs are the user messages by session.
	msgs map[string][]rpc.UserMessage
}

func (s *runSessions) Open(string, string, string) {}
func (s *runSessions) Close(string)                {}
func (s *runSessions) Publish(sessionID, typ string, data any) (string, bool) {
	r := s.m.bySession(sessionID)
	if r == nil {
		return "", false
	}
	switch typ {
	case rpc.EventUserMessage:
		s.mu.Lock()
		s.msgs[sessionID] = append(s.msgs[sessionID], data.(rpc.UserMessage))
		s.mu.Unlock()
	case "shutdown":
		s.m.HandleTerminate(rpc.WithCall(context.Background(), rpc.Call{SessionID: sessionID}), rpc.TerminateReq{Reason: "shutdown requested"})
		s.d.kill(r.ContainerID, 0)
	}
	return "", true
}

// objective waits for the run session's one user message.
func (s *runSessions) objective(t *testing.T, sessionID func() string) (string, rpc.UserMessage) {
	t.Helper()
	var id string
	var msg rpc.UserMessage
	waitUntil(t, "the objective", func() bool {
		id = sessionID()
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.msgs[id]) == 1 && id != "" {
			msg = s.msgs[id][0]
			return true
		}
		return false
	})
	return id, msg
}

type runRig struct {
	*restartRig
	e  *runEngine
	ss *runSessions
	ws string
}

func newRunRig(t *testing.T) *runRig {
	t.Helper()
	rig := newRestartRig(t, config.RestartPolicy{Policy: config.RestartOnCrash, MaxRestarts: 3, BackoffMS: 1000, MaxBackoffMS: 1000})
	e := &runEngine{agentEngine: rig.d, created: map[string]*docker.HostConfig{}, labels: map[string]map[string]string{}}
	ss := &runSessions{m: rig.m, d: e, msgs: map[string][]rpc.UserMessage{}}
	rig.m.Docker, rig.m.Sessions = e, ss
	l, _ := rig.m.Config()
	l.Config.NotionIntegrations = map[string]config.Notion{"wiki": {Secret: "notion-key"}}
	a := l.Config.Agents["a1"]
	a.Defaults.Notion = "wiki"
	l.Config.Agents["a1"] = a
	mc := l.Config.Models["m"]
	mc.Secret = "llm"
	l.Config.Models["m"] = mc
	l.Secrets["llm"], l.Secrets["notion-key"] = "sk-1", "nt-1"
	return &runRig{restartRig: rig, e: e, ss: ss, ws: l.Config.Workspaces["other"].Path}
}

// runSession is the session id of the run session now running, "" if none.
func (rig *runRig) runSession() string {
	rig.m.mu.Lock()
	defer rig.m.mu.Unlock()
	for id, r := range rig.m.sessions {
		if r.perf != nil {
			return id
		}
	}
	return ""
}

func (rig *runRig) perform(ctx context.Context, p Performance) <-chan Outcome {
	done := make(chan Outcome, 1)
	go func() {
		out, err := rig.m.Perform(ctx, p)
		if err != nil {
			out.Reason = "error: " + err.Error()
		}
		done <- out
	}()
	return done
}

func wait(t *testing.T, ch <-chan Outcome) Outcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(time.Minute):
		t.Fatal("Perform did not return")
		return Outcome{}
	}
}

// A run session beside the interactive one: its brief, budgets, secrets,
// container and answer; whatever ended it, the interactive session keeps
// its leases and nothing is restarted or told to the DM.
func TestPerformBesideTheInteractiveSession(t *testing.T) {
	rig := newRunRig(t)
	ctx := context.Background()
	st, err := rig.m.Start(ctx, "a1", lease.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	interactive := st.SessionID

	// Answered.
	done := rig.perform(ctx, Performance{RunID: "r-1", AgentID: "a1", Worktree: rig.ws, WorkspaceRO: true, Objective: "do it",
		Tools: []string{"choir.fs.read"}, Network: false, Tokens: 5000, ToolCalls: 7})
	sid, msg := rig.ss.objective(t, rig.runSession)
	if msg.Text != "do it" || msg.ID == "" {
		t.Errorf("the objective was given as %+v", msg)
	}
	call := rpc.WithCall(ctx, rpc.Call{SessionID: sid})
	hello, err := rig.m.HandleInitHello(call, rpc.InitHelloReq{AgentID: "a1", SessionID: sid, ImageVersion: "v1"})
	if err != nil || hello.Run == nil || hello.Run.ID != "r-1" || !slices.Equal(hello.Run.Tools, []string{"choir.fs.read"}) || !hello.ModelProxy || hello.ResourceBindings.DM != "" || hello.ResourceBindings.Notion != "" || hello.ResourceBindings.GitIdentity != "" {
		t.Errorf("INIT_HELLO of the run = %+v, %v; want its brief, model proxy, no DM, Notion or git identity", hello, err)
	}
	sec, err := rig.m.HandleSecrets(call, rpc.SecretReq{})
	if err != nil || len(sec.Secrets) != 0 {
		t.Errorf("secrets of a run without network or credentials = %v, %v; want none", sec.Secrets, err)
	}
	if _, err := rig.m.HandleSecrets(call, rpc.SecretReq{Resources: []string{"notion-key"}}); err == nil {
		t.Error("a run without credentials was given the Notion key")
	}
	cfg, err := rig.m.HandleFetchConfig(call, rpc.ConfigReq{})
	var dyn config.Dynamic
	if err != nil || json.Unmarshal(cfg.Config, &dyn) != nil || dyn.Tunables.Budgets.TotalSessionTokens != 5000 || dyn.Tunables.Budgets.MaxToolCallsPerSession != 7 {
		t.Errorf("the run's config budgets = %+v, %v; want 5000 tokens, 7 tool calls", dyn.Tunables.Budgets, err)
	}
	// A notice is not the answer; the reply to the objective is.
	for _, m := range []rpc.DMSend{{Kind: rpc.DMNotice, Text: "fyi"}, {Kind: rpc.DMReply, ReplyTo: "someone-else", Text: "no"}, {Kind: rpc.DMReply, ReplyTo: msg.ID, Text: "the answer"}} {
		in, _ := json.Marshal(m)
		if resp, err := rig.m.HandleHostTool(call, rpc.HostToolReq{ToolName: rpc.HostToolDMSend, CallID: "c", Input: in}); err != nil || resp.Status != rpc.ToolSuccess {
			t.Errorf("dm.send %+v = %+v, %v", m, resp, err)
		}
	}
	out := wait(t, done)
	if out.Status != RunAnswered || out.Answer != "the answer" || out.SessionID != sid {
		t.Fatalf("Perform = %+v; want answered \"the answer\"", out)
	}
	name := "choir-a1-r-1"
	rig.e.mu.Lock()
	hc, labels := rig.e.created[name], rig.e.labels[name]
	rig.e.mu.Unlock()
	if hc == nil || hc.NetworkMode != "none" || !hc.Mounts[0].ReadOnly || hc.Mounts[0].Source != rig.ws || labels[LabelRun] != "r-1" {
		t.Errorf("container %s: %+v labels %v; want network none, the worktree read-only, label choir.run=r-1", name, hc, labels)
	}
	if s := rig.store.status(sid); s != StatusStopped {
		t.Errorf("the run session is %q; want stopped", s)
	}
	if rig.store.sessions[sid].Kind != SessionRun || rig.store.sessions[sid].RunID != "r-1" {
		t.Errorf("the run session was recorded as %+v", rig.store.sessions[sid])
	}

	// Crashed, spent budget, cancelled, timed out.
	for _, c := range []struct {
		name, want string
		end        func(r *Run, cancel context.CancelFunc)
		wall       time.Duration
	}{
		{"crash", RunCrashed, func(r *Run, _ context.CancelFunc) { rig.d.kill(r.ContainerID, 2) }, 0},
		{"budget", RunBudget, func(r *Run, _ context.CancelFunc) {
			rig.m.HandleTerminate(rpc.WithCall(ctx, rpc.Call{SessionID: r.SessionID}), rpc.TerminateReq{Reason: "session budget spent: tokens 5000 of 5000"})
			rig.d.kill(r.ContainerID, 0)
		}, 0},
		{"cancel", RunStopped, func(_ *Run, cancel context.CancelFunc) { cancel() }, 0},
		{"timeout", RunTimeout, func(*Run, context.CancelFunc) {}, 50 * time.Millisecond},
	} {
		cctx, cancel := context.WithCancel(ctx)
		done := rig.perform(cctx, Performance{RunID: "r-" + c.name, AgentID: "a1", Objective: "go", Tools: []string{"choir.fs.read"}, Network: true, WallTime: c.wall})
		sid, _ := rig.ss.objective(t, rig.runSession)
		c.end(rig.m.bySession(sid), cancel)
		out := wait(t, done)
		cancel()
		if out.Status != c.want || out.SessionID != sid {
			t.Errorf("%s: Perform = %+v; want %s", c.name, out, c.want)
		}
		waitUntil(t, c.name+": the run session ended", func() bool { return rig.m.bySession(sid) == nil })
		if s := rig.store.status(sid); s == StatusActive {
			t.Errorf("%s: the run session is still active", c.name)
		}
		if left, _ := filepath.Glob(filepath.Join(rig.m.Home.Dir, "runs", "r-"+c.name+"-*")); len(left) != 0 {
			t.Errorf("%s: its scratch workspace is left: %v", c.name, left)
		}
		if _, err := os.Stat(filepath.Join(rig.m.Home.SocksDir(), "run", "a1-r-"+c.name)); !os.IsNotExist(err) {
			t.Errorf("%s: its socket directory is left (%v)", c.name, err)
		}
	}

	// The interactive session went on, its lease held, nothing restarted
	// or told to its DM.
	st, err = rig.m.Status("a1")
	if err != nil || st.State != StateRunning || st.SessionID != interactive {
		t.Errorf("the interactive session: %+v, %v; want %s running", st, err, interactive)
	}
	if holder, held := rig.m.Leases.Holder(lease.Resource{Kind: lease.Workspace, Name: "main"}); !held || holder != "a1" {
		t.Errorf("workspace main is held by %q (%v); want a1's interactive session", holder, held)
	}
	if n := rig.timers.count(); n != 0 {
		t.Errorf("%d restarts scheduled; a run session is never restarted", n)
	}
	rig.out.mu.Lock()
	sent := len(rig.out.sent)
	rig.out.mu.Unlock()
	if sent != 0 {
		t.Errorf("%d messages went to the DM; a run has none", sent)
	}
}

// Perform refuses what is not a run, before anything is recorded or
// created, saying what was wrong.
func TestPerformRefusesBadInput(t *testing.T) {
	rig := newRunRig(t)
	rootOwned := t.TempDir() // owned by the test's user: refused only when that is root
	ok := Performance{RunID: "r-1", AgentID: "a1", Objective: "go", Tools: []string{"choir.fs.read"}}
	for _, c := range []struct {
		name string
		edit func(p *Performance)
		want string
	}{
		{"no run id", func(p *Performance) { p.RunID = "" }, "run id"},
		{"path in run id", func(p *Performance) { p.RunID = "../../etc" }, "run id"},
		{"space in run id", func(p *Performance) { p.RunID = "r 1" }, "run id"},
		{"long run id", func(p *Performance) { p.RunID = "r-" + strings.Repeat("a", 70) }, "run id"},
		{"leading dash", func(p *Performance) { p.RunID = "-r" }, "run id"},
		{"slash", func(p *Performance) { p.RunID = "r/1" }, "run id"},
		{"empty objective", func(p *Performance) { p.Objective = " \n\t" }, "objective is empty"},
		{"negative tokens", func(p *Performance) { p.Tokens = -1 }, "negative budget"},
		{"negative tool calls", func(p *Performance) { p.ToolCalls = -5 }, "negative budget"},
		{"negative wall time", func(p *Performance) { p.WallTime = -time.Second }, "negative budget"},
		{"unknown agent", func(p *Performance) { p.AgentID = "nobody" }, `no agent named "nobody"`},
		{"missing worktree", func(p *Performance) { p.Worktree = filepath.Join(rootOwned, "gone") }, "not a directory"},
		{"worktree is a file", func(p *Performance) {
			f := filepath.Join(rootOwned, "file")
			os.WriteFile(f, nil, 0o644)
			p.Worktree = f
		}, "not a directory"},
	} {
		p := ok
		c.edit(&p)
		out, err := rig.m.Perform(context.Background(), p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Perform = %+v, %v; want an error saying %q", c.name, out, err, c.want)
		}
	}
	if n := rig.e.createCount(); n != 0 {
		t.Errorf("%d containers created for refused runs", n)
	}
	if len(rig.store.sessions) != 0 {
		t.Errorf("refused runs recorded sessions: %v", rig.store.sessions)
	}
	if left, _ := os.ReadDir(filepath.Join(rig.m.Home.Dir, "runs")); len(left) != 0 {
		t.Errorf("refused runs left scratch workspaces: %v", left)
	}
}

// After a choird crash, a run session found active is ended as crashed
// like any other, but neither restarted nor told to the agent's DM.
func TestStaleRunSessionsAreNotRestartedOrTold(t *testing.T) {
	rig := newRunRig(t)
	ctx := context.Background()
	rig.store.CreateSession(ctx, SessionRecord{SessionID: "run-s", AgentID: "a1", Status: StatusActive, Kind: SessionRun, RunID: "r-9",
		Bindings: rpc.ResourceBindings{DM: "dm1"}})
	rig.store.CreateSession(ctx, SessionRecord{SessionID: "int-s", AgentID: "a1", Status: StatusActive, Bindings: rpc.ResourceBindings{DM: "dm1"}})
	if n, err := rig.m.CrashStaleSessions(ctx); err != nil || n != 2 {
		t.Fatalf("CrashStaleSessions = %d, %v; want 2", n, err)
	}
	rig.m.AfterStart(ctx)
	if s := rig.store.status("run-s"); s != StatusCrashed {
		t.Errorf("the stale run session is %q; want crashed", s)
	}
	rig.out.mu.Lock()
	defer rig.out.mu.Unlock()
	if len(rig.out.sent) != 1 || !strings.Contains(rig.out.sent[0].Text, "choird restarted") {
		t.Errorf("DM notices %+v; want one, for the interactive session only", rig.out.sent)
	}
	if n := rig.timers.count(); n != 1 {
		t.Errorf("%d restarts scheduled; want 1, the interactive session's", n)
	}
}
