package lane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"choir/agent/arbiter"
	"choir/agent/lock"
	"choir/agent/skill"
	"choir/agent/tool"
	"choir/internal/logs"
	"choir/internal/openai"
)

// ModelClient is what a lane needs of the model API; *openai.Client has it.
type ModelClient interface {
	Chat(ctx context.Context, req openai.ChatRequest) (*openai.ChatResponse, error)
	ChatWithRateLimitRetry(ctx context.Context, req openai.ChatRequest, rl openai.RateLimitRetry) (*openai.ChatResponse, error)
}

var _ ModelClient = (*openai.Client)(nil)

// Settings are the model settings of one call, read afresh before each call
// so that a config change applies to the next one.
type Settings struct {
	Model string
	// Temperature and ReasoningEffort nil are not sent (config null).
	Temperature     *float64
	ReasoningEffort *string
	// RateLimitWait is rate_limit_retry_ms: the wait after a 429 that gave
	// no Retry-After; zero means openai.DefaultRateLimitWait.
	RateLimitWait time.Duration
}

// Identity holds the edge lane's never-compacted identity files.
type Identity struct {
	UserMD string // USER.md: who the user is
	SoulMD string // SOUL.md: the agent's personality
}

// Defaults of Config.
const (
	DefaultEventWindow = 50
	DefaultMaxSteps    = 16
)

// DefaultInstructions are the edge lane's behavioural instructions, the
// first part of its system prompt.
const DefaultInstructions = `You are the user's personal agent, talking with them in a direct message. ` +
	`Answer their message. You can act only through the tools offered in this request: ` +
	`call them when the task needs the workspace or the outside world, and answer in plain text when you are done. ` +
	`A tool result is JSON; an error result says what was wrong and what to do instead.`

// Config is what a lane works with.
type Config struct {
	// Model answers chat requests; required.
	Model ModelClient
	// Settings gives the model settings; required, called before each call.
	Settings func() Settings
	// Arbiter commits every event and runs every tool call; required.
	Arbiter *arbiter.Arbiter
	// Tools is the registry the arbiter runs; the lane offers the tools
	// exposed to the edge.
	Tools *tool.Registry
	// Skills, when set, are offered through arbiter.StartTool; the arbiter
	// must have the same registry (arbiter.Config.Skills).
	Skills *skill.Registry
	// Identity is put in every prompt.
	Identity Identity
	// Instructions replace DefaultInstructions when set.
	Instructions string
	// EventWindow is how many earlier events (messages) the prompt shows;
	// default DefaultEventWindow.
	EventWindow int
	// MaxSteps bounds the model calls of one turn; default DefaultMaxSteps.
	MaxSteps int
	// Notify tells the user something while a turn goes on: the model is
	// rate-limited and the lane waits to retry. It may be nil.
	Notify func(msg string)
	// Log receives the lane's own records; nil discards them.
	Log *slog.Logger
}

// Lane is the edge lane of one session: it answers user messages, one turn
// at a time. Its methods are safe for concurrent use; turns take turns.
type Lane struct {
	cfg     Config
	owner   lock.Owner
	offered map[string]bool // names the lane may propose outside a skill
	control map[string]string

	mu     sync.Mutex
	seen   int64      // the last revision taken from the log
	hist   []entry    // rendered events of this lane, oldest first
	active *skill.Run // the running skill, or nil
}

// New checks cfg and returns an idle lane.
func New(cfg Config) (*Lane, error) {
	switch {
	case cfg.Model == nil:
		return nil, errors.New("lane: Config.Model is nil")
	case cfg.Settings == nil:
		return nil, errors.New("lane: Config.Settings is nil")
	case cfg.Arbiter == nil:
		return nil, errors.New("lane: Config.Arbiter is nil")
	case cfg.Tools == nil:
		return nil, errors.New("lane: Config.Tools is nil")
	}
	if cfg.Instructions == "" {
		cfg.Instructions = DefaultInstructions
	}
	if cfg.EventWindow <= 0 {
		cfg.EventWindow = DefaultEventWindow
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = DefaultMaxSteps
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Skills != nil && len(cfg.Skills.Names()) == 0 {
		cfg.Skills = nil // nothing to start
	}
	l := &Lane{cfg: cfg, owner: lock.Edge, offered: map[string]bool{}, control: map[string]string{}}
	for _, t := range cfg.Tools.LLMTools(tool.ForLane(tool.Edge)) {
		l.offered[t.Name] = true
	}
	if cfg.Skills != nil {
		l.offered[arbiter.StartTool] = true
	}
	for _, n := range []string{arbiter.StartTool, skill.TransitionTool, skill.FinishTool} {
		l.control[openai.WireName(n)] = n
	}
	return l, nil
}

// Skill returns the running skill, or nil.
func (l *Lane) Skill() *skill.Run {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.active
}

// Handle answers one user message: it commits the message, calls the model
// with the edge prompt, runs the tool calls the model asks for through the
// arbiter and calls the model again, until the model answers in text or the
// turn reaches MaxSteps. A failed model call is not an error: the reply
// then says what failed (design §7.7) and the lane is ready for the next
// message. The error is ctx's, or the arbiter's when it has stopped.
func (l *Lane) Handle(ctx context.Context, message string) (reply string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	defer func() {
		if err != nil && ctx.Err() != nil {
			// The turn was cut short: say so in the log, whatever ctx.
			l.cfg.Arbiter.Record(context.WithoutCancel(ctx), l.owner, arbiter.Cancelled, cancelledPayload{Reason: ctx.Err().Error()})
		}
	}()
	l.sync()
	l.trim()
	if _, err := l.cfg.Arbiter.Record(ctx, l.owner, arbiter.UserMsg, arbiter.UserMsgPayload{Text: message}); err != nil {
		return "", err
	}
	cur := len(l.hist)
	l.sync()

	for step := 0; ; step++ {
		if step == l.cfg.MaxSteps {
			reply = fmt.Sprintf("I stopped after %d model calls without finishing; tell me how to go on.", step)
			return reply, l.fail(ctx, "", "max_steps exceeded", reply)
		}
		if err := l.stepSkill(ctx); err != nil {
			return "", err
		}
		req, names, err := l.request(cur)
		if err != nil {
			return "", err
		}
		resp, err := l.call(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			reply = "the model failed: " + err.Error()
			l.cfg.Log.Warn("model call failed", logs.KeyLane, string(l.owner), logs.KeyError, err.Error())
			return reply, l.fail(ctx, req.Model, err.Error(), reply)
		}
		ev, err := l.cfg.Arbiter.Record(ctx, l.owner, arbiter.ModelOutput, outputPayload(req.Model, resp))
		if err != nil {
			return "", err
		}
		if len(resp.ToolCalls) == 0 {
			l.sync()
			if resp.Content == "" && resp.Refusal != "" {
				return resp.Refusal, nil
			}
			return resp.Content, nil
		}
		for i, tc := range resp.ToolCalls {
			if err := l.propose(ctx, fmt.Sprintf("%s/%d/%d", l.owner, ev.Rev, i), tc, names); err != nil {
				return "", err
			}
		}
		l.sync()
	}
}

// fail records the failed end of a turn as a ModelOutput carrying the error;
// it is logged and replicated, and left out of later prompts.
func (l *Lane) fail(ctx context.Context, model, cause, reply string) error {
	_, err := l.cfg.Arbiter.Record(ctx, l.owner, arbiter.ModelOutput, arbiter.ModelOutputPayload{Model: model, Text: reply, Error: cause})
	l.sync()
	return err
}

type cancelledPayload struct {
	Reason string `json:"reason"`
}

// call makes one model call with the settings of the moment and the §7.7
// answer to a 429: tell the user, wait, retry once.
func (l *Lane) call(ctx context.Context, req openai.ChatRequest) (*openai.ChatResponse, error) {
	rl := openai.RateLimitRetry{DefaultWait: l.cfg.Settings().RateLimitWait}
	if l.cfg.Notify != nil {
		rl.Notify = func(wait time.Duration) {
			l.cfg.Notify(fmt.Sprintf("The model is rate-limited; I will try again in %s.", wait.Round(time.Millisecond)))
		}
	}
	return l.cfg.Model.ChatWithRateLimitRetry(ctx, req, rl)
}

// stepSkill counts a model step of the running skill. A skill past its
// max_steps has failed: the lane records it and goes on without it.
func (l *Lane) stepSkill(ctx context.Context) error {
	run := l.active
	if run == nil {
		return nil
	}
	if run.Ended() {
		l.active = nil
		return nil
	}
	if err := run.Step(); err == nil {
		return nil
	}
	l.active = nil
	_, err := l.cfg.Arbiter.Record(ctx, l.owner, arbiter.SkillTransition, arbiter.SkillTransitionPayload{
		Skill: run.Skill(), From: run.State(), On: "fail", To: run.State(), Status: string(run.Status()), Reason: run.Reason(),
	})
	l.sync()
	return err
}

// propose sends one tool call to the arbiter and keeps a skill it starts.
func (l *Lane) propose(ctx context.Context, id string, tc openai.ToolCall, names *openai.NameMap) error {
	run := l.active
	out, err := l.cfg.Arbiter.Submit(ctx, arbiter.Proposal{
		ID:         id,
		Lane:       l.owner,
		ToolCallID: tc.ID,
		Tool:       l.canonical(tc.Name, names),
		Input:      []byte(tc.Arguments),
		Allowed:    l.allowed,
		Skill:      run,
	})
	if err != nil {
		return err
	}
	if out.Started != nil {
		l.active = out.Started
	}
	if l.active != nil && l.active.Ended() {
		l.active = nil
	}
	return nil
}

// allowed is the lane's allowlist: the tools offered to the edge, and the
// skill start tool when there are skills.
func (l *Lane) allowed(name string) bool { return l.offered[name] }

// canonical maps the name a model called back to a canonical name: through
// the request's map, else the registry and the skill control tools (a tool
// not offered now still gets a precise answer from the arbiter), else the
// name as sent, which the arbiter answers with unknown_tool.
func (l *Lane) canonical(wire string, names *openai.NameMap) string {
	if c, err := names.Canonical(wire); err == nil {
		return c
	}
	if c, ok := l.cfg.Tools.LookupWire(wire); ok {
		return c
	}
	if c, ok := l.control[wire]; ok {
		return c
	}
	return strings.TrimSpace(wire)
}
