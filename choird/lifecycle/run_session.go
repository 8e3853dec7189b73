package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"choir/choird/lease"
	"choir/internal/config"
	"choir/internal/docker"
	"choir/internal/rpc"
)

// Session kinds, as the store records them: an agent has at most one
// interactive session, and any number of run sessions beside it.
const (
	SessionInteractive = "interactive"
	SessionRun         = "run"
)

// LabelRun on a run session's container names the run it performs; the
// orphan sweep at start-up removes it with every other managed container
// of this installation, and CrashStaleSessions ends its session as
// crashed (never restarted, never told to a DM).
const LabelRun = "choir.run"

// Performance is one headless run session (issue 16): the director's run
// RunID performed by agent AgentID in a container of its own, beside the
// agent's interactive session if it runs.
type Performance struct {
	RunID, AgentID string
	Worktree       string // host directory mounted at /workspace ("" = an empty scratch workspace)
	WorkspaceRO    bool   // mount it read-only
	Objective      string // the first (and only) user message of the run session
	// Tools are the tool names the session may offer (exact names); the
	// answer's path, choir.dm.send, is always open.
	Tools []string
	// Network false: NetworkMode none, model calls through choird
	// (ModelProxy).
	Network bool
	// Credentials: the agent's bound secrets and git identity given;
	// false: none (with Network, the model's key only).
	Credentials bool
	Tokens      int64         // token budget of the session (0 = the config's)
	ToolCalls   int           // tool-call budget (0 = the config's)
	WallTime    time.Duration // 0 = no limit beyond ctx
}

// Outcome is how a run session ended.
type Outcome struct {
	SessionID string
	Answer    string // the agent's final reply to the objective
	// ErrorReply: the reply was the agent's error (the model failed, a
	// budget ran out), not an answer to the objective.
	ErrorReply bool
	Status     string // RunAnswered, RunBudget, RunTimeout, RunCrashed, RunStopped
	Reason     string
	// NetworkAttempts is how many times something in the run's container
	// tried to reach the network directly (no route: counted by the
	// kernel, netattempts.go), as last read before the container went.
	NetworkAttempts int64
}

// Outcome statuses.
const (
	RunAnswered = "answered" // the agent replied and its lanes were idle
	RunBudget   = "budget"   // the session's budget was spent (§7.6)
	RunTimeout  = "timeout"  // past WallTime
	RunCrashed  = "crashed"  // the container exited or stopped heartbeating
	RunStopped  = "stopped"  // ctx was cancelled, or the agent ended the session itself
)

// runIDPattern keeps a run id fit for a container name and a directory.
var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// runPoll is how often Perform looks whether an answered session's lanes
// are idle (their reports arrive after heartbeats).
const runPoll = 100 * time.Millisecond

// performing is the run-session side of a Run (Run.perf): the brief, the
// captured answer, and the end.
type performing struct {
	p       Performance
	run     *Run
	sockDir string // the run's own socket directory, removed at the end
	scratch string // the scratch workspace, removed at the end ("" = none)

	mu         sync.Mutex
	objective  string // the objective's message id
	answer     string
	answered   bool
	errorReply bool
	answeredAt time.Time
	changed    chan struct{} // a reply arrived (capacity 1)
	ended      chan struct{} // closed by endedRun
	endStatus  string
	endReason  string
}

// brief adds a run session's brief to its INIT_HELLO answer; nil (an
// interactive session) adds nothing.
func (p *performing) brief(resp *rpc.InitHelloResp) {
	if p == nil {
		return
	}
	resp.Run = &rpc.RunBrief{ID: p.p.RunID, Tools: slices.Clone(p.p.Tools)}
}

// secrets is what GET_SECRETS grants a run session of bound: everything
// with Credentials, else only its models' keys (none when they go through
// choird), no git identity, Notion, email, voice or MCP secret.
func (p *performing) secrets(bound []string, c *config.Config) []string {
	if p == nil || p.p.Credentials {
		return bound
	}
	if p.run.ModelProxy {
		return nil
	}
	b := p.run.bindings()
	models := c.BoundSecrets(b.LLM, b.CoreLLM, b.SummaryLLM, "", "", "", "")
	return slices.DeleteFunc(bound, func(n string) bool { return !slices.Contains(models, n) })
}

// budgets puts a run's own token and tool-call budgets into the session's
// config (the agent's lanes read them there, §7.6).
func (p *performing) budgets(d *config.Dynamic) {
	if p == nil {
		return
	}
	if p.p.Tokens > 0 {
		d.Tunables.Budgets.TotalSessionTokens = int(min(p.p.Tokens, int64(^uint32(0)>>1)))
	}
	if p.p.ToolCalls > 0 {
		d.Tunables.Budgets.MaxToolCallsPerSession = p.p.ToolCalls
	}
}

// deliver takes what a run session sends to "its DM": the first reply to
// the objective is the answer; notices and core reports are dropped (a
// run has no DM).
func (p *performing) deliver(callID string, msg rpc.DMSend) rpc.HostToolResp {
	p.mu.Lock()
	take := !p.answered && (msg.Kind == rpc.DMReply || msg.Kind == rpc.DMError) && (msg.ReplyTo == "" || msg.ReplyTo == p.objective)
	if take {
		p.answer, p.answered, p.errorReply, p.answeredAt = msg.Text, true, msg.Kind == rpc.DMError, time.Now()
	}
	p.mu.Unlock()
	if take {
		select {
		case p.changed <- struct{}{}:
		default:
		}
	}
	return rpc.HostToolResp{CallID: callID, Status: rpc.ToolSuccess, Output: json.RawMessage(`{"status":"success","summary":"recorded as the run's answer"}`)}
}

// reply is the answer so far.
func (p *performing) reply() (text string, answered, isError bool, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.answer, p.answered, p.errorReply, p.answeredAt
}

func (r *Run) kind() string {
	if r.perf != nil {
		return SessionRun
	}
	return ""
}

func (r *Run) runID() string {
	if r.perf != nil {
		return r.perf.p.RunID
	}
	return ""
}

// endedRun finishes a run session's end (end calls it once the container
// is gone and the end recorded): its socket directory and scratch
// workspace are removed, and Perform learns how it ended. A run holds no
// lease, no DM and no restart policy of the agent's, so there is nothing
// else to give back or tell.
func (m *Manager) endedRun(r *Run, status, reason string) {
	p := r.perf
	if err := os.RemoveAll(p.sockDir); err != nil {
		m.logf(r, "remove the run's socket directory failed", "error", err.Error())
	}
	if p.scratch != "" {
		if err := os.RemoveAll(p.scratch); err != nil {
			m.logf(r, "remove the run's scratch workspace failed", "error", err.Error())
		}
	}
	m.logf(r, "run session ended", "run_id", p.p.RunID, "status", status, "reason", reason)
	p.mu.Lock()
	p.endStatus, p.endReason = status, reason
	p.mu.Unlock()
	close(p.ended)
}

// Perform runs a headless run session and returns how it ended. The
// session runs in a container of its own, named choir-<agent>-<run id>
// and labelled choir.run, from the agent's current image, with the
// worktree at /workspace, beside the agent's interactive session (if it
// runs; it takes none of its leases). The objective is the session's one
// user message; the agent's reply is the Answer. Once the agent has
// answered and its edge lane is idle the session is stopped gracefully
// (its log flushed) and ended. Every path (ctx cancelled, WallTime, a
// crash, a spent budget) stops the container, records the session's end,
// and removes what the run took. An error means the session could not
// start; once it has, every end is an Outcome.
func (m *Manager) Perform(ctx context.Context, p Performance) (Outcome, error) {
	var wall <-chan time.Time
	if p.WallTime > 0 {
		t := time.NewTimer(p.WallTime)
		defer t.Stop()
		wall = t.C
	}
	r, err := m.startRun(ctx, p)
	if err != nil {
		return Outcome{}, err
	}
	perf := r.perf
	out := func(status, reason string) Outcome {
		answer, _, _, _ := perf.reply()
		n, _ := r.NetAttempts()
		return Outcome{SessionID: r.SessionID, Answer: answer, Status: status, Reason: reason, NetworkAttempts: n}
	}
	// stopNow ends the session at once (the container stopped by the
	// engine) and says how.
	stopNow := func(status, reason string) Outcome {
		m.end(r, StatusStopped, reason)
		return out(status, reason)
	}
	timeout := func() Outcome {
		return stopNow(RunTimeout, fmt.Sprintf("run %s: past its wall time of %s", p.RunID, p.WallTime))
	}
	cancelled := func() Outcome {
		return stopNow(RunStopped, fmt.Sprintf("run %s: cancelled (%v)", p.RunID, context.Cause(ctx)))
	}

	// Until INIT_HELLO.
	ready := m.ReadyTimeout
	if ready == 0 {
		ready = DefaultReadyTimeout
	}
	rt := time.NewTimer(ready)
	defer rt.Stop()
	select {
	case <-r.ready:
	case <-r.exited:
		if why := r.refusal(); why != "" {
			m.end(r, StatusStopped, "INIT_HELLO refused: "+why)
			return out(RunCrashed, "INIT_HELLO refused: "+why), nil
		}
		reason := fmt.Sprintf("container exited with code %d before INIT_HELLO%s", r.exitCode, m.logTail(r.ContainerID))
		m.end(r, StatusCrashed, reason)
		return out(RunCrashed, reason), nil
	case <-perf.ended:
		return m.endedOutcome(r), nil
	case <-rt.C:
		return stopNow(RunCrashed, fmt.Sprintf("run %s: the agent did not say hello within %s", p.RunID, ready)), nil
	case <-wall:
		return timeout(), nil
	case <-ctx.Done():
		return cancelled(), nil
	}

	// The objective, as the session's first user message.
	msgID := rpc.NewRequestID()
	perf.mu.Lock()
	perf.objective = msgID
	perf.mu.Unlock()
	if _, ok := m.Sessions.Publish(r.SessionID, rpc.EventUserMessage, rpc.UserMessage{ID: msgID, From: "director", Text: p.Objective}); !ok {
		return stopNow(RunCrashed, fmt.Sprintf("run %s: the objective could not be given to the session (it is no longer open)", p.RunID)), nil
	}
	m.logf(r, "run objective given", "run_id", p.RunID, "message_id", msgID)

	tick := time.NewTicker(runPoll)
	defer tick.Stop()
	for {
		select {
		case <-perf.ended:
			return m.endedOutcome(r), nil
		case <-wall:
			return timeout(), nil
		case <-ctx.Done():
			return cancelled(), nil
		case <-perf.changed:
		case <-tick.C:
		}
		if !m.runDone(r) {
			continue
		}
		return m.finishRun(ctx, r, wall), nil
	}
}

// runDone says whether an answered run session may be stopped: its edge
// lane reports idle (or reported nothing), or, after an error reply, the
// session did not end by itself within two heartbeats (a spent budget
// ends it just after its error reply).
func (m *Manager) runDone(r *Run) bool {
	_, answered, isError, at := r.perf.reply()
	if !answered {
		return false
	}
	if isError {
		l, _ := m.Config()
		return time.Since(at) > 2*time.Duration(max(l.Config.HeartbeatIntervalMS, 100))*time.Millisecond
	}
	r.mu.Lock()
	edge, ok := r.lanes[rpc.LaneEdge]
	r.mu.Unlock()
	return !ok || edge.State == "EDGE_IDLE" || edge.State == "EDGE_TERMINATED"
}

// finishRun stops an answered session gracefully, as Stop does (shutdown,
// the agent's final heartbeat and TERMINATE_SELF), bounded by the grace,
// WallTime and ctx, and ends it.
func (m *Manager) finishRun(ctx context.Context, r *Run, wall <-chan time.Time) Outcome {
	p := r.perf
	if r.Offline {
		m.readNet(r) // before the agent exits and its namespace goes (netattempts.go)
	}
	r.setState(StateStopping)
	m.Sessions.Publish(r.SessionID, "shutdown", map[string]string{"reason": "run answered"})
	l, _ := m.Config()
	grace := time.Duration(l.Config.SessionSummaryTimeoutMS)*time.Millisecond + StopGraceExtra
	t := time.NewTimer(grace)
	defer t.Stop()
	status, reason := RunAnswered, fmt.Sprintf("run %s answered", p.p.RunID)
	if _, _, isError, _ := p.reply(); isError {
		reason += " with an error reply"
	}
	select {
	case <-r.exited:
	case <-p.ended: // ended meanwhile by another path (heartbeats stopped)
		o := m.endedOutcome(r)
		o.Status = RunAnswered
		_, _, o.ErrorReply, _ = p.reply()
		return o
	case <-t.C:
		reason += "; the agent did not exit within " + grace.String() + " of the shutdown: its container was stopped"
	case <-wall:
		reason += "; its wall time ran out during the graceful stop: its container was stopped"
	case <-ctx.Done():
		reason += "; cancelled during the graceful stop: its container was stopped"
	}
	m.end(r, StatusStopped, reason)
	answer, _, isError, _ := p.reply()
	n, _ := r.NetAttempts()
	return Outcome{SessionID: r.SessionID, Answer: answer, Status: status, Reason: reason, ErrorReply: isError, NetworkAttempts: n}
}

// endedOutcome is the Outcome of a session that ended by another path
// than Perform's: it crashed, or the agent ended it (a spent budget).
func (m *Manager) endedOutcome(r *Run) Outcome {
	p := r.perf
	p.mu.Lock()
	status, reason, answer := p.endStatus, p.endReason, p.answer
	p.mu.Unlock()
	o := Outcome{SessionID: r.SessionID, Answer: answer, Reason: reason}
	o.NetworkAttempts, _ = r.NetAttempts()
	switch {
	case strings.Contains(reason, "session budget spent"):
		o.Status = RunBudget
	case status == StatusCrashed:
		o.Status = RunCrashed
	default:
		o.Status = RunStopped
	}
	return o
}

// startRun checks the performance, records the run session and starts its
// container; on any failure what it took is given back.
func (m *Manager) startRun(ctx context.Context, p Performance) (*Run, error) {
	if !runIDPattern.MatchString(p.RunID) {
		return nil, fmt.Errorf("perform: run id %q is not a run id (letters, digits, '_', '.', '-'; at most 64)", p.RunID)
	}
	if strings.TrimSpace(p.Objective) == "" {
		return nil, fmt.Errorf("perform run %s: the objective is empty: a run session needs one user message", p.RunID)
	}
	if p.Tokens < 0 || p.ToolCalls < 0 || p.WallTime < 0 {
		return nil, fmt.Errorf("perform run %s: negative budget (tokens %d, tool calls %d, wall time %s)", p.RunID, p.Tokens, p.ToolCalls, p.WallTime)
	}
	l, version := m.Config()
	// The agent's default bindings, without taking a lease: the run has
	// its own worktree, and no DM, Notion or email (exclusive resources
	// of the agent's interactive session, and side effects outside the
	// run's transaction); without credentials, no git identity or voice
	// either.
	b, _, err := lease.Resolve(l.Config, p.AgentID, lease.Overrides{})
	if err != nil {
		return nil, fmt.Errorf("perform run %s: %w", p.RunID, err)
	}
	b.DM, b.Notion, b.Email = "", "", ""
	if !p.Credentials {
		b.GitIdentity, b.VoiceProfile = "", ""
	}
	wsPath, scratch := p.Worktree, ""
	if wsPath == "" {
		if scratch, err = m.scratchWorkspace(l.Config, p, b.Workspace); err != nil {
			return nil, err
		}
		wsPath = scratch
	}
	removeScratch := func() {
		if scratch != "" {
			os.RemoveAll(scratch)
		}
	}
	if _, err := workspaceOwner("of run "+p.RunID, wsPath); err != nil {
		removeScratch()
		return nil, fmt.Errorf("perform run %s: %w", p.RunID, err)
	}
	image, imageVersion, err := m.latestImage(ctx, p.AgentID)
	if err != nil {
		removeScratch()
		return nil, fmt.Errorf("perform run %s: %w", p.RunID, err)
	}
	r := &Run{
		AgentID: p.AgentID, SessionID: rpc.NewRequestID(), Image: image, ImageVersion: imageVersion,
		Bindings: b, started: b, StartedAt: m.now(), token: rpc.NewToken(),
		ready: make(chan struct{}), exited: make(chan struct{}), state: StateStarting,
		configVersion: version, lanes: map[string]rpc.StatusReq{}, ModelProxy: !p.Network, Offline: !p.Network,
	}
	r.perf = &performing{p: p, run: r, scratch: scratch, changed: make(chan struct{}, 1), ended: make(chan struct{}),
		sockDir: filepath.Join(m.Home.SocksDir(), "run", p.AgentID+"-"+p.RunID)}
	rec := SessionRecord{SessionID: r.SessionID, AgentID: p.AgentID, LeaseID: r.SessionID, Status: StatusActive, StartedAt: r.StartedAt,
		Bindings: b, Image: image, Kind: SessionRun, RunID: p.RunID, Instance: m.Instance}
	if err := m.Store.CreateSession(ctx, rec); err != nil {
		removeScratch()
		return nil, fmt.Errorf("perform run %s: record the run session of %s: %w", p.RunID, p.AgentID, err)
	}
	m.mu.Lock()
	if m.runs == nil {
		m.runs, m.sessions = map[string]*Run{}, map[string]*Run{}
	}
	m.sessions[r.SessionID] = r // not m.runs: that is the agent's interactive session
	m.mu.Unlock()
	m.Sessions.Open(r.SessionID, r.AgentID, r.token)
	if err := m.launchRun(ctx, r, wsPath); err != nil {
		m.end(r, StatusStopped, "run session start failed: "+err.Error())
		return nil, fmt.Errorf("perform run %s: %w", p.RunID, err)
	}
	m.logf(r, "run session container started", "run_id", p.RunID, "container", shortID(r.ContainerID), "image", image,
		"network", p.Network, "credentials", p.Credentials, "workspace_ro", p.WorkspaceRO, "tools", strings.Join(p.Tools, ","))
	return r, nil
}

// scratchWorkspace makes an empty workspace for a run without a worktree,
// under choird's home, owned like the agent's workspace when choird runs
// as root (tools never run as root).
func (m *Manager) scratchWorkspace(c *config.Config, p Performance, workspace string) (string, error) {
	base := filepath.Join(m.Home.Dir, "runs")
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", fmt.Errorf("perform run %s: create %s: %w", p.RunID, base, err)
	}
	dir, err := os.MkdirTemp(base, p.RunID+"-")
	if err != nil {
		return "", fmt.Errorf("perform run %s: create its scratch workspace: %w", p.RunID, err)
	}
	if os.Geteuid() == 0 {
		ws, ok := c.Workspaces[workspace]
		owner, err := workspaceOwner(workspace, ws.Path)
		if !ok || err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("perform run %s: its scratch workspace needs an owner, the owner of workspace %q: %v", p.RunID, workspace, err)
		}
		if err := errors.Join(os.Chown(dir, owner.uid, owner.gid), os.Chmod(base, 0o711)); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("perform run %s: give its scratch workspace to uid %d: %w", p.RunID, owner.uid, err)
		}
	}
	return dir, nil
}

// launchRun creates and starts a run session's container: the §15.3
// profile of an agent's, with the worktree (read-only when asked), the
// run's own socket directory, no network without Network, and the
// choir.run label.
func (m *Manager) launchRun(ctx context.Context, r *Run, wsPath string) error {
	l, _ := m.Config()
	p := r.perf.p
	sockDir := r.perf.sockDir
	if err := os.MkdirAll(filepath.Dir(sockDir), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(sockDir), err)
	}
	spec := Spec{
		AgentID: r.AgentID, SessionID: r.SessionID, LeaseToken: r.token, Instance: m.Instance, Image: r.Image,
		WorkspacePath: wsPath, SocketDir: sockDir, HeartbeatMS: l.Config.HeartbeatIntervalMS,
		Limits: l.Config.Container,
	}
	return m.container(ctx, r, "choir-"+r.AgentID+"-"+p.RunID, spec, func(cfg *docker.ContainerConfig, hc *docker.HostConfig) {
		cfg.Labels[LabelRun] = p.RunID
		hc.Mounts[0].ReadOnly = p.WorkspaceRO
	})
}
