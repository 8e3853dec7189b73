package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"choir/agent/builtin"
	"choir/choird/control"
	"choir/choird/headless"
	"choir/choird/headless/mood"
	"choir/choird/headless/objects"
	"choir/choird/headless/runner"
	"choir/choird/headless/sched"
	"choir/choird/headless/signoff"
	"choir/choird/headless/verify"
	"choir/choird/headless/worktree"
	"choir/choird/lifecycle"
	"choir/choird/store"
	"choir/internal/config"
	"choir/internal/docker"
)

// startHeadless starts the director loop of headless runs (issue 16):
// it settles the runs a previous choird left half done, then performs
// queued runs and the agents' schedules until stop is called (runs in
// progress stop where they are; the next start settles them).
func startHeadless(plane *control.Plane, st *store.Store, director *headless.Director, gate *signoff.Gate, agents *lifecycle.Manager,
	dc *docker.Client, home config.Home, instance string, log *slog.Logger, evidence evidenceFunc) (stop func(), err error) {
	wts, err := worktree.New(filepath.Join(home.Dir, "worktrees"))
	if err != nil {
		return nil, err
	}
	objs, err := objects.Open(objectsDir(home))
	if err != nil {
		return nil, err
	}
	cfg := func() *config.Config { return plane.Config().Config }
	r := &runner.Runner{
		Director: director, Worktrees: wts, Objects: objs, Log: log,
		Evidence: evidence, // kb.go: the knowledge base's pointers for the context pack
		Verify:   hotVerifier{base: verify.Runner{Docker: dc, Objects: objs, Instance: instance}, limits: func() config.ContainerLimits { return cfg().Container }},
		Sessions: runSessions{agents},
		Agent:    func(ctx context.Context, id string) (runner.Agent, error) { return runAgent(ctx, cfg(), id) },
		Moods:    func() (mood.Set, error) { return mood.Resolve(cfg().Headless) },
		// headless/runner/split.go: how often a work item may be split on request
		MaxSplits: func() int { return cfg().Headless.MaxSplitsOrDefault() },
		Verifiers: func(name string) (verify.Verifier, bool) {
			var defs map[string]config.VerifierDef
			if h := cfg().Headless; h != nil {
				defs = h.Verifiers
			}
			d, ok := defs[name]
			return verify.Verifier{Name: name, Command: d.Command, Timeout: d.Timeout()}, ok
		},
		Notify: func(agentID, text string) { notifyDM(plane, agents, agentID, text, false, "run report", log) },
		// a run that waits for a human asks through the approval pipeline
		Approvals: gate,

		// headless/runner/pack.go: the context pack's budget (a change needs a restart)
		PackTokens: cfg().Headless.PackTokens(),
	}
	// headless/runner/context.go: choirctl run context
	plane.SetRunContexts(runner.Contexts{Director: director, Objects: objs})
	kick := director.Changed // the knowledge base's (kb.go), when it runs
	director.Changed = func(id string, k headless.Kind) {
		r.Kick()
		if kick != nil {
			kick(id, k)
		}
	}
	schedules, err := sched.FromConfig(cfg())
	if err != nil {
		return nil, fmt.Errorf("headless schedules: %w", err)
	}
	var s *sched.Scheduler
	if len(schedules) > 0 {
		s = sched.New(st.Fires(), schedules, sched.Options{})
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := r.Recover(ctx); err != nil {
			log.Warn("headless runs not all recovered", "error", err)
		}
		r.Loop(ctx, cfg().Headless.MaxRunsOrDefault(), s)
	}()
	return func() { cancel(); <-done }, nil
}

// objectsDir is the headless runs' content-addressed object store.
func objectsDir(home config.Home) string { return filepath.Join(home.Dir, "objects") }

// runGate is the human sign-off on headless runs (choird/headless/signoff):
// startGateway connects it to the approval service, whose run_commit
// approvals it decides runs by, and startHeadless's runner asks it when a
// run waits for a human.
func runGate(director *headless.Director, home config.Home, log *slog.Logger) *signoff.Gate {
	g := &signoff.Gate{Director: director, Log: log}
	if objs, err := objects.Open(objectsDir(home)); err != nil {
		log.Warn("run approvals will name files without their diff stat", "error", err)
	} else {
		g.Patches = objs
	}
	return g
}

// runAgent is what a run needs of its agent, from the running config.
func runAgent(ctx context.Context, c *config.Config, id string) (runner.Agent, error) {
	a, ok := c.Agents[id]
	if !ok {
		return runner.Agent{}, fmt.Errorf("agent %s: %w", id, runner.ErrNoAgent)
	}
	ws, ok := c.Workspaces[a.Defaults.Workspace]
	if !ok {
		return runner.Agent{}, fmt.Errorf("agent %s: its workspace %q is not in config.json", id, a.Defaults.Workspace)
	}
	gi := c.GitIdentities[a.Defaults.GitIdentity]
	who := worktree.Identity{Name: gi.Name, Email: gi.Email}
	if who.Name == "" || who.Email == "" {
		who = worktree.Identity{Name: "choir agent " + id, Email: id + "@choir.invalid"}
	}
	return runner.Agent{Repo: ws.Path, Image: "choir-agent-" + id + ":latest", Identity: who,
		// The built-in tools: their traits are known (mood.KnownTraits).
		// Repo and MCP tools are not offered to runs yet.
		Tools: builtin.Names()}, nil
}

// runSessions performs run sessions with the lifecycle.
type runSessions struct{ m *lifecycle.Manager }

func (s runSessions) Perform(ctx context.Context, t runner.Task) (runner.Outcome, error) {
	out, err := s.m.Perform(ctx, lifecycle.Performance{RunID: t.RunID, AgentID: t.AgentID, Worktree: t.Worktree, WorkspaceRO: t.WorkspaceRO,
		Objective: t.Objective, Tools: t.Tools, Network: t.Network, Credentials: t.Credentials,
		Tokens: t.Tokens, ToolCalls: t.ToolCalls, WallTime: t.WallTime})
	return runner.Outcome{SessionID: out.SessionID, Answer: out.Answer, Status: out.Status, Reason: out.Reason, ErrorReply: out.ErrorReply,
		NetworkAttempts: out.NetworkAttempts}, err
}

// hotVerifier runs each verifier with the container limits of the running
// config at that moment (config.json's container, applied by choirctl
// config apply), not those choird started with.
type hotVerifier struct {
	base   verify.Runner
	limits func() config.ContainerLimits
}

func (v hotVerifier) Run(ctx context.Context, req verify.Request) (verify.Result, error) {
	r := v.base
	r.Limits = v.limits()
	return r.Run(ctx, req)
}
