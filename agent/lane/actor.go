package lane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"choir/agent/arbiter"
	"choir/agent/lock"
	"choir/agent/memory"
	"choir/agent/skill"
	"choir/agent/tool"
	"choir/internal/logs"
	"choir/internal/openai"
	"choir/internal/rpc"
)

// actor is one reasoning lane: the edge, or one core job. It keeps the
// lane's view of the commit log (its working memory), builds its prompts,
// and makes its model calls and tool calls. Only the lane's own goroutine
// calls the model and proposes; tools it proposes run while it waits.
type actor struct {
	l       *Lane
	owner   lock.Owner
	job     *job // nil for the edge
	kind    tool.Lane
	model   ModelClient
	mem     *memory.Memory
	offered map[string]bool // what the arbiter accepts from this lane

	defsOnce sync.Once
	defs     []tool.LLMTool // the tools offered, the same at every call (prompt.go)

	// Owned by the lane's goroutine.
	life  context.Context // bounds compactions: the session, or the job
	seen  int64           // the last revision taken from the log
	pin   int64           // the revision of the message being answered
	fixed int             // estimated tokens of the last prompt's fixed content

	mu     sync.Mutex
	active *skill.Run // the running skill, or nil
	halt   string     // why the loop breaker stopped the turn or job, or ""
	steps  int        // model calls of the current turn (edge) or job

	meter meter // the lane's model calls (telemetry.go)
}

func newActor(l *Lane, owner lock.Owner, j *job) *actor {
	a := &actor{l: l, owner: owner, job: j, kind: tool.Edge, model: l.cfg.Model, offered: map[string]bool{}}
	if j != nil {
		a.kind, a.model = tool.Core, l.cfg.CoreModel
	}
	for _, t := range l.cfg.Tools.LLMTools(a.filter()) {
		a.offered[t.Name] = true
	}
	if l.cfg.Skills != nil && (j == nil || j.allows(arbiter.StartTool)) {
		a.offered[arbiter.StartTool] = true
		a.offered[skill.TransitionTool] = true
		a.offered[skill.FinishTool] = true
	}
	a.mem = memory.New(memory.Config{
		Lane:             string(owner),
		Window:           l.cfg.EventWindow,
		ThresholdPercent: l.cfg.CompactionThresholdPercent,
		ContextWindow:    func() int { return a.settings().ContextWindow },
		Chat:             a.compactionCall,
		Resolve:          l.resolve,
		Commit:           a.commitWrite,
		Notify:           l.cfg.Notify,
		Log:              l.cfg.Log,
	})
	return a
}

// filter keeps the registry's tools this lane is offered: those exposed to
// it and, for a core job, those its tool constraints allow.
// settings are the lane's model settings of the moment.
func (a *actor) settings() Settings {
	if a.job != nil {
		return a.l.cfg.CoreSettings()
	}
	return a.l.cfg.Settings()
}

func (a *actor) filter() tool.Filter {
	f := tool.ForLane(a.kind)
	if a.job == nil || a.job.allowed == nil {
		return f
	}
	return tool.All(f, func(t tool.Tool) bool { return a.job.allows(t.Name()) })
}

func (a *actor) skill() *skill.Run {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.active
}

func (a *actor) setSkill(r *skill.Run) {
	a.mu.Lock()
	a.active = r
	a.mu.Unlock()
}

func (a *actor) step() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.steps
}

func (a *actor) setSteps(n int) {
	a.mu.Lock()
	a.steps = n
	a.mu.Unlock()
}

// jobName is "" for the edge.
func (a *actor) jobName() string {
	if a.job == nil {
		return ""
	}
	return a.job.name
}

// sync takes the lane's new events from the log into its working memory.
func (a *actor) sync() {
	for _, e := range a.l.cfg.Arbiter.Events(a.seen) {
		a.seen = e.Rev
		if m, ok := a.render(e); ok {
			a.mem.Add(memory.Entry{Rev: e.Rev, Hash: e.Hash, Type: e.Type, Msg: m}, e.Rev == a.pin)
		}
	}
}

// maybeCompact measures the window after a model reply or tool results and
// starts a compaction in the background when it is due.
func (a *actor) maybeCompact() {
	if a.life != nil {
		a.mem.Maybe(a.life, a.fixed)
	}
}

// call makes one model call with settings set, taken at its start: the
// session token budget is checked first, llm_call_timeout_ms bounds it, and
// a 429 is answered as §7.7 says (tell the user, wait, retry once). The
// tokens used count against the session; the call is logged and its usage
// and latency go in the ModelOutput that records the reply (telemetry.go).
func (a *actor) call(ctx context.Context, req openai.ChatRequest, set Settings) (*openai.ChatResponse, error) {
	if err := a.l.session.checkTokens(); err != nil {
		return nil, err
	}
	if set.CallTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, set.CallTimeout)
		defer cancel()
	}
	rl := openai.RateLimitRetry{DefaultWait: set.RateLimitWait}
	if notify := a.l.cfg.Notify; notify != nil {
		rl.Notify = func(wait time.Duration) {
			notify(fmt.Sprintf("The model is rate-limited; I will try again in %s.", wait.Round(time.Millisecond)))
		}
	}
	began := time.Now()
	ctx, info := a.metered(ctx, purposeTurn)
	resp, err := a.model.ChatWithRateLimitRetry(ctx, req, rl)
	a.observe(info, req, resp, err, time.Since(began))
	return resp, err
}

// compactionCall is the working memory's model call: the lane's model and
// settings, its timeout and token budget, no retry.
func (a *actor) compactionCall(ctx context.Context, req openai.ChatRequest) (*openai.ChatResponse, error) {
	if err := a.l.session.checkTokens(); err != nil {
		return nil, err
	}
	set, model := a.settings(), a.model
	if a.l.cfg.CompactionModel != nil {
		model = a.l.cfg.CompactionModel
	}
	if a.l.cfg.CompactionSettings != nil {
		set = a.l.cfg.CompactionSettings()
	}
	req.Model, req.Temperature, req.ReasoningEffort = set.Model, set.Temperature, set.ReasoningEffort
	if set.CallTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, set.CallTimeout)
		defer cancel()
	}
	began := time.Now()
	ctx, info := a.metered(ctx, purposeCompaction)
	resp, err := model.Chat(ctx, req)
	a.observe(info, req, resp, err, time.Since(began))
	return resp, err
}

// usage is the tokens a call used: as the provider reported them, else
// estimated (bytes / 4).
func usage(req openai.ChatRequest, resp *openai.ChatResponse) int64 {
	if n := resp.Usage.TotalTokens; n > 0 {
		return int64(n)
	}
	if n := resp.Usage.PromptTokens + resp.Usage.CompletionTokens; n > 0 {
		return int64(n)
	}
	n := memory.MessageTokens(resp.Message())
	for _, m := range req.Messages {
		n += memory.MessageTokens(m)
	}
	return int64(n)
}

// commitWrite records an applied compaction: MemoryWriteCommitted.
func (a *actor) commitWrite(ctx context.Context, w memory.Write) error {
	_, err := a.l.cfg.Arbiter.Record(ctx, a.owner, arbiter.MemoryWriteCommitted, writePayload{Write: w, Job: a.jobName()})
	return err
}

type writePayload struct {
	memory.Write
	Job string `json:"job,omitempty"`
}

// output is the ModelOutput payload of a lane: arbiter.ModelOutputPayload
// with the job named for a core lane, and the call's latency and token
// usage (§22.1).
type output struct {
	Error     string                  `json:"error,omitempty"`
	Job       string                  `json:"job,omitempty"`
	LatencyMS int64                   `json:"latency_ms,omitempty"`
	Model     string                  `json:"model,omitempty"`
	Text      string                  `json:"text"`
	ToolCalls []arbiter.ModelToolCall `json:"tool_calls,omitempty"`
	Usage     *callUsage              `json:"usage,omitempty"`
}

func (a *actor) output(model string, resp *openai.ChatResponse) output {
	p := output{Job: a.jobName(), Model: model, Text: resp.Content}
	p.Usage, p.LatencyMS = a.meter.forOutput(resp)
	if p.Text == "" {
		p.Text = resp.Refusal
	}
	for _, c := range resp.ToolCalls {
		p.ToolCalls = append(p.ToolCalls, arbiter.ModelToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	return p
}

// recordOutput commits a model reply.
func (a *actor) recordOutput(ctx context.Context, model string, resp *openai.ChatResponse) (rpc.Event, error) {
	return a.l.cfg.Arbiter.Record(ctx, a.owner, arbiter.ModelOutput, a.output(model, resp))
}

// fail records a failed model call as a ModelOutput carrying the error; it
// is logged and replicated, and left out of later prompts.
func (a *actor) fail(ctx context.Context, model, cause, text string) error {
	a.l.cfg.Log.Warn("model call failed", logs.KeyLane, string(a.owner), logs.KeyError, cause)
	_, err := a.l.cfg.Arbiter.Record(ctx, a.owner, arbiter.ModelOutput, output{Error: cause, Job: a.jobName(), Model: model, Text: text})
	a.sync()
	return err
}

// stepSkill counts a model step of the running skill. A skill past its
// max_steps has failed: the lane records it and goes on without it.
func (a *actor) stepSkill(ctx context.Context) error {
	run := a.skill()
	if run == nil {
		return nil
	}
	if run.Ended() {
		a.setSkill(nil)
		return nil
	}
	if err := run.Step(); err == nil {
		return nil
	}
	a.setSkill(nil)
	_, err := a.l.cfg.Arbiter.Record(ctx, a.owner, arbiter.SkillTransition, arbiter.SkillTransitionPayload{
		Job: a.jobName(), Skill: run.Skill(), From: run.State(), On: "fail", To: run.State(), Status: string(run.Status()), Reason: run.Reason(),
	})
	a.sync()
	return err
}

// callerKey carries the proposing actor to the lane's own tools, which the
// arbiter runs in its worker with the proposal's context.
type callerKey struct{}

// propose sends one tool call to the arbiter and keeps a skill it starts.
func (a *actor) propose(ctx context.Context, id string, tc openai.ToolCall, name string) error {
	run := a.skill()
	// tool_call_timeout_ms caps every call, whatever its tool's timeout.
	ctx = tool.WithTimeoutCap(ctx, time.Duration(a.l.cfg.Budgets.ToolCallTimeoutMS)*time.Millisecond)
	out, err := a.l.cfg.Arbiter.Submit(context.WithValue(ctx, callerKey{}, a), arbiter.Proposal{
		ID:         id,
		Lane:       a.owner,
		ToolCallID: tc.ID,
		Tool:       name,
		Input:      []byte(tc.Arguments),
		Allowed:    a.allowed,
		Skill:      run,
	})
	if err != nil {
		return err
	}
	if out.Halt != "" {
		a.mu.Lock()
		a.halt = out.Halt
		a.mu.Unlock()
	}
	if out.Started != nil {
		out.Started.SetRetryBudget(a.l.cfg.Budgets.PerStepSkillRetries)
		a.setSkill(out.Started)
	}
	if r := a.skill(); r != nil && r.Ended() {
		a.setSkill(nil)
	}
	return nil
}

// allowed is the lane's allowlist for the arbiter: the tools it is
// offered. A name outside it gets unknown_tool, naming nothing.
func (a *actor) allowed(name string) bool { return a.offered[name] }

// refused is the payload of a Cancelled event that answers a tool call the
// lane refused before proposing it (a spent budget, a tool the edge may not
// use while cores run). The lane shows Output as the call's result.
type refused struct {
	ID         string          `json:"id"`
	Job        string          `json:"job,omitempty"`
	Output     json.RawMessage `json:"output"`
	Reason     string          `json:"reason"`
	Tool       string          `json:"tool"`
	ToolCallID string          `json:"tool_call_id"`
}

// refuse answers a tool call with a structured error without running it.
func (a *actor) refuse(ctx context.Context, id string, tc openai.ToolCall, name string, terr *tool.Error) error {
	out, _ := json.Marshal(tool.ErrorResult(terr))
	_, err := a.l.cfg.Arbiter.Record(ctx, a.owner, arbiter.Cancelled, refused{
		ID: id, Job: a.jobName(), Output: out, Reason: terr.Code, Tool: name, ToolCallID: tc.ID,
	})
	return err
}

// canonical maps the name a model called back to a canonical name: through
// the request's map, else the registry and the skill control tools (a tool
// not offered now still gets a precise answer from the arbiter), else the
// name as sent, which the arbiter answers with unknown_tool.
func (a *actor) canonical(wire string, names *openai.NameMap) string {
	if c, err := names.Canonical(wire); err == nil {
		return c
	}
	if c, ok := a.l.cfg.Tools.LookupWire(wire); ok {
		return c
	}
	if c, ok := a.l.control[wire]; ok {
		return c
	}
	return strings.TrimSpace(wire)
}

// errFatal reports whether err ends the lane rather than the turn: the
// context ended or the arbiter stopped.
func errFatal(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, arbiter.ErrClosed)
}
