// Package assembly assembles choir-agent once its session is open: the tool
// registry (the workspace tools, the lanes' own tools, the propose meta
// tools, and the external tools baked into /choir/tools), the skills, the
// arbiter and the lanes, with the model settings and secrets read from the
// session at every call. It connects them to the session: user messages
// and injections from the push channel go to the edge lane (each message
// once, by id), replies, core reports and notices go back to the bound DM
// through choird's choir.dm.send, and the arbiter's log is what heartbeats
// replicate.
package assembly

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"choir/agent/arbiter"
	"choir/agent/builtin"
	"choir/agent/gitident"
	"choir/agent/lane"
	"choir/agent/lock"
	"choir/agent/session"
	"choir/agent/skill"
	mcptool "choir/agent/tool/mcp"
	"choir/internal/config"
	"choir/internal/openai"
	"choir/internal/rpc"
)

// Config says where the image's content and the workspace are.
type Config struct {
	ChoirDir  string // /choir: tools/, skills/, USER.md, SOUL.md, SOUL-CORE.md
	Workspace string // /workspace
	Log       *slog.Logger
	// GitDir holds the git identity's files (gitident.Dir; "": none) and
	// GitHelper is git-cred-helper's path.
	GitDir, GitHelper string
}

// Runtime is one agent's cognition inside its container.
type Runtime struct {
	cfg  Config
	cp   rpc.ControlPlane
	sess *session.Session
	log  *slog.Logger

	arb    *arbiter.Arbiter
	lane   *lane.Lane
	cancel context.CancelFunc
	done   sync.WaitGroup

	mu      sync.Mutex
	dyn     config.Dynamic // parsed once per config version
	dynVer  int64
	dynOK   bool
	seen    map[string]bool // user message ids already queued
	order   []string        // oldest first, to bound seen
	clients map[string]*openai.Client
	git     *gitident.Service // nil without GitDir
	mcp     *mcptool.Set      // the MCP servers (mcp.go)
	// fallbacksTold holds the fallback notices given this turn (models.go).
	fallbacksTold map[string]bool
	spend         *spendState // SPEND, the caps' reservations (spend.go)
	// carrier reaches the model calls choird carries (modelproxy.go).
	carrier modelCarrier
}

// maxSeen bounds the remembered message ids (at-least-once delivery only
// repeats recent messages).
const maxSeen = 4096

// New prepares the runtime; Attach connects it to the session's hooks.
// Everything the runtime sends (through cp, to the model, to its log) is
// redacted with the session's Redactor.
func New(cp rpc.ControlPlane, sess *session.Session, cfg Config) *Runtime {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Runtime{cfg: cfg, cp: session.Redacted(cp, sess.Redactor), sess: sess, log: sess.Redactor.Logger(log),
		seen: map[string]bool{}, clients: map[string]*openai.Client{}, spend: newSpendState(cp), carrier: carrierOf(cp)}
}

// Attach installs the runtime in the session's hooks.
func (rt *Runtime) Attach() {
	rt.sess.Hooks = session.Hooks{
		Opened: rt.open,
		Push:   rt.push,
		Events: rt.events, Head: rt.head, HashAt: rt.hashAt,
		Stopping: rt.stop,
		Summary:  rt.summary,
		Status:   func() []rpc.StatusReq { return rt.status() },
		Snapshot: rt.snapshot, SnapshotCadence: rt.snapshotCadence,
		Notify: rt.notify, TailFrom: lane.TailFrom,
	}
}

func (rt *Runtime) arbiter() *arbiter.Arbiter {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.arb
}

// open builds everything and starts the arbiter and the lanes.
func (rt *Runtime) open(ctx context.Context) error {
	id := readIdentity(rt.cfg.ChoirDir, rt.log)
	rt.useTunnel() // tunnel.go: before any tool connects
	rt.startGit()
	propose := func(ctx context.Context, kind string, payload json.RawMessage) (string, string, error) {
		resp, err := rt.cp.RequestApproval(ctx, rpc.ApprovalReq{RequestType: kind, Payload: payload})
		return resp.ApprovalID, resp.Status, err
	}
	host := func(ctx context.Context, name, callID string, input json.RawMessage) (json.RawMessage, error) {
		resp, err := rt.cp.ExecuteHostTool(ctx, rpc.HostToolReq{ToolName: name, CallID: callID, Input: input})
		if err != nil {
			return nil, err
		}
		return resp.Output, nil
	}
	var known func(string) bool // the registry, once built, for proposed skills
	builtins := builtin.Tools(builtin.Deps{Host: host, Propose: propose, Dynamic: rt.dynamic, SessionID: rt.sess.ID().SessionID,
		Known: func(name string) bool { return known != nil && known(name) }})
	builtins = append(builtins, rt.runHostTools(host)...) // run_tools.go: a run session's notes and requests
	tools, err := rt.loadTools(builtins)                  // mcp.go: and the MCP servers' tools
	if err != nil {
		return fmt.Errorf("load tools: %w", err)
	}
	known = tools.Has
	skills, err := loadSkills(filepath.Join(rt.cfg.ChoirDir, "skills"), tools.Has)
	if err != nil {
		return err
	}
	tools = rt.runTools(tools)        // run.go: a run session's tools only
	startable := rt.runSkills(skills) // run.go: none in a run session
	arb := arbiter.New(arbiter.Config{Tools: tools, Skills: startable, Locks: &lock.Manager{}, Workspace: rt.cfg.Workspace,
		Secrets: rt.secret, Redactor: rt.sess.Redactor, Log: rt.log,
		Loops: func() arbiter.LoopLimits { // hot-reloadable; zero (an older choird) means the defaults
			lb := rt.dynamic().Tunables.LoopBreaker
			return arbiter.LoopLimits{Repeats: lb.Repeats, StaleSteps: lb.StaleSteps}
		}})
	dyn := rt.dynamic()
	ln, err := lane.New(lane.Config{
		SessionID: rt.sess.ID().SessionID,
		Model:     modelClient{rt, edgeModel},
		Settings:  func() lane.Settings { return rt.settings(edgeModel) },
		// The core jobs' own model (§7.1, §21.2), chosen per call too.
		CoreModel:    modelClient{rt, coreModel},
		CoreSettings: func() lane.Settings { return rt.settings(coreModel) },
		// Compaction and the session summary: summary_llm, else the edge's.
		CompactionModel:    modelClient{rt, summaryModel},
		CompactionSettings: func() lane.Settings { return rt.settings(summaryModel) },
		SummaryModel:       modelClient{rt, summaryModel},
		SummarySettings:    func() lane.Settings { return rt.settings(summaryModel) },
		// A spent session budget ends the session (§7.6).
		EndSession: rt.sess.End,
		Arbiter:    arb, Tools: tools, Skills: startable, Identity: id,
		EventWindow: dyn.Tunables.EventWindow, CompactionThresholdPercent: dyn.Tunables.CompactionThresholdPercent,
		Budgets: dyn.Tunables.Budgets,
		Reply:   rt.reply, Report: rt.report, Notify: rt.notify,
		Log: rt.log, // each lane record names its lane
	})
	if err != nil {
		return fmt.Errorf("start the lanes: %w", err)
	}
	notice, err := rt.resume(arb, ln)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	rt.mu.Lock()
	rt.arb, rt.lane, rt.cancel = arb, ln, cancel
	rt.mu.Unlock()
	rt.done.Add(2)
	go func() {
		defer rt.done.Done()
		if err := arb.Run(runCtx); err != nil && !errors.Is(err, context.Canceled) {
			rt.log.Error("arbiter stopped", "error", err.Error())
		}
	}()
	go func() {
		defer rt.done.Done()
		if err := ln.Run(runCtx); err != nil && !errors.Is(err, context.Canceled) {
			rt.log.Error("lanes stopped", "error", err.Error())
		}
	}()
	rt.log.Info("runtime ready", "tools", len(tools.Names()), "skills", len(skills.Names()), "run", rt.sess.RunBrief != nil)
	if notice != "" {
		rt.notify(notice)
	}
	return nil
}

// stop ends the lanes (running core jobs are cancelled and reported) and
// the arbiter, so the final heartbeat carries everything committed.
func (rt *Runtime) stop(ctx context.Context) {
	defer rt.stopGit()
	defer rt.stopMCP()
	rt.mu.Lock()
	cancel := rt.cancel
	rt.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	done := make(chan struct{})
	go func() { rt.done.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		rt.log.Warn("lanes did not stop in time")
	}
}

// push handles what the session does not: messages, injections, cancels,
// compaction, approval decisions.
func (rt *Runtime) push(ev rpc.PushEvent) {
	rt.mu.Lock()
	ln := rt.lane
	rt.mu.Unlock()
	if ln == nil {
		return
	}
	switch ev.Type {
	case rpc.EventUserMessage:
		var m rpc.UserMessage
		if err := json.Unmarshal(ev.Data, &m); err != nil || m.ID == "" {
			rt.log.Warn("malformed user message", "event", ev.ID)
			return
		}
		if !rt.firstTime(m.ID) {
			rt.log.Debug("user message already queued", "id", m.ID)
			return
		}
		if rt.mcpAnswer(m) { // mcp.go: the answer to an MCP server's question
			return
		}
		if !ln.Post(m) {
			rt.log.Warn("user message not queued: the lanes are stopping", "id", m.ID)
		}
	case rpc.EventInject:
		var in rpc.Injection
		if json.Unmarshal(ev.Data, &in) == nil && in.Text != "" && rt.firstTime("inject:"+in.ID) {
			ln.Inject(in)
		}
	case rpc.EventCancel:
		var c rpc.CancelCore
		if json.Unmarshal(ev.Data, &c) == nil && c.JobName != "" {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := ln.Cancel(ctx, c.JobName); err != nil {
				rt.notify(fmt.Sprintf("could not cancel %s: %v", c.JobName, err))
			}
		}
	case rpc.EventCompact:
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := ln.Compact(ctx); err != nil {
			rt.notify("compaction: " + err.Error())
		}
	case rpc.EventApproval:
		var d rpc.ApprovalDecision
		if json.Unmarshal(ev.Data, &d) == nil {
			rt.notify(fmt.Sprintf("approval %s was %s", d.ApprovalID, d.Status))
		}
	default:
		rt.log.Debug("push event ignored", "type", ev.Type)
	}
}

// firstTime remembers an id and says whether it is new.
func (rt *Runtime) firstTime(id string) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.seen[id] {
		return false
	}
	rt.seen[id] = true
	rt.order = append(rt.order, id)
	if len(rt.order) > maxSeen {
		delete(rt.seen, rt.order[0])
		rt.order = rt.order[1:]
	}
	return true
}

func (rt *Runtime) status() []rpc.StatusReq {
	rt.mu.Lock()
	ln := rt.lane
	rt.mu.Unlock()
	if ln == nil {
		return nil
	}
	return rt.withMCPStatus(ln.Status()) // mcp.go
}

// send delivers a message to the bound DM through choird.
func (rt *Runtime) send(msg rpc.DMSend) {
	input, _ := json.Marshal(msg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resp, err := rt.cp.ExecuteHostTool(ctx, rpc.HostToolReq{ToolName: rpc.HostToolDMSend, CallID: rpc.NewRequestID(), Input: input})
	if err == nil && resp.Status != rpc.ToolSuccess {
		err = fmt.Errorf("%s", resp.Output)
	}
	if err != nil {
		rt.log.Warn("message to the DM not delivered", "kind", msg.Kind, "error", err.Error())
	}
}

func (rt *Runtime) reply(r lane.Reply) {
	rt.turnEnded()
	kind := rpc.DMReply
	if r.Error {
		kind = rpc.DMError
	}
	rt.send(rpc.DMSend{Kind: kind, ReplyTo: r.ReplyTo, Text: r.Text, Cores: r.Cores, Files: rt.outgoing()})
}

func (rt *Runtime) report(job, kind, text string) {
	rt.send(rpc.DMSend{Kind: rpc.DMCoreReport, Core: job, Text: text, Files: rt.outgoing()})
}

// outgoing lists the files staged in .choirtmp/send/ (§15.1): whatever a
// tool put there goes out with the next reply or report, and choird
// removes each once delivered. Secret values are redacted from their names
// and from the content of text files first (see redactStaged).
func (rt *Runtime) outgoing() []string {
	dir := filepath.Join(rt.cfg.Workspace, ".choirtmp", "send")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var files []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			files = append(files, ".choirtmp/send/"+rt.redactStaged(dir, e.Name()))
		}
	}
	return files
}

func (rt *Runtime) notify(text string) { rt.send(rpc.DMSend{Kind: rpc.DMNotice, Text: text}) }

// dynamic is the hot-reloadable config the session holds now, parsed once
// per config version.
func (rt *Runtime) dynamic() config.Dynamic {
	version := rt.sess.ConfigVersion()
	rt.mu.Lock()
	if rt.dynOK && rt.dynVer == version {
		defer rt.mu.Unlock()
		return rt.dyn
	}
	var d config.Dynamic
	if raw := rt.sess.Config(); raw != nil {
		json.Unmarshal(raw, &d)
	}
	if d.Tunables.EventWindow == 0 {
		d.Tunables = config.DefaultTunables()
	}
	changed := rt.dynOK
	rt.dyn, rt.dynVer, rt.dynOK = d, version, true
	rt.mu.Unlock()
	if changed {
		rt.refreshGit() // the identity's name, email or hosts may be new
	}
	return d
}

// readIdentity reads the identity files; a missing one is empty, logged.
func readIdentity(dir string, log *slog.Logger) lane.Identity {
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			log.Warn("identity file missing", "file", name)
			return ""
		}
		return string(data)
	}
	return lane.Identity{UserMD: read("USER.md"), SoulMD: read("SOUL.md"), SoulCoreMD: read("SOUL-CORE.md")}
}

// loadSkills loads /choir/skills with the built-ins; without the directory
// only the built-ins are there.
func loadSkills(dir string, known func(string) bool) (*skill.Registry, error) {
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		if err := os.MkdirAll(filepath.Join(os.TempDir(), "choir-no-skills"), 0o755); err != nil {
			return nil, err
		}
		dir = filepath.Join(os.TempDir(), "choir-no-skills")
	}
	reg, err := skill.LoadDir(dir, known)
	if err != nil {
		return nil, fmt.Errorf("load skills: %w", err)
	}
	return reg, nil
}
