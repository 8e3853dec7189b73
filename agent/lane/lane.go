package lane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"choir/agent/arbiter"
	"choir/agent/lock"
	"choir/agent/skill"
	"choir/agent/tool"
	"choir/internal/config"
	"choir/internal/openai"
	"choir/internal/rpc"
)

// ModelClient is what a lane needs of the model API; *openai.Client has it.
type ModelClient interface {
	Chat(ctx context.Context, req openai.ChatRequest) (*openai.ChatResponse, error)
	ChatWithRateLimitRetry(ctx context.Context, req openai.ChatRequest, rl openai.RateLimitRetry) (*openai.ChatResponse, error)
}

var _ ModelClient = (*openai.Client)(nil)

// Settings are the model settings of one call, read afresh at the start of
// each call so that a config change applies to the next one, never to a
// call in flight.
type Settings struct {
	Model string
	// Temperature and ReasoningEffort nil are not sent (config null).
	Temperature     *float64
	ReasoningEffort *string
	// RateLimitWait is rate_limit_retry_ms: the wait after a 429 that gave
	// no Retry-After; zero means openai.DefaultRateLimitWait.
	RateLimitWait time.Duration
	// CallTimeout is llm_call_timeout_ms: one call's limit, the wait after
	// a 429 included; zero leaves only the lane's context.
	CallTimeout time.Duration
	// ContextWindow is the model's context window in tokens, which sets
	// the compaction threshold; zero means config.DefaultContextWindow.
	ContextWindow int
}

// Identity holds the never-compacted identity files.
type Identity struct {
	UserMD     string // USER.md: who the user is (edge only)
	SoulMD     string // SOUL.md: the edge's personality
	SoulCoreMD string // SOUL-CORE.md: the core jobs' personality
}

// Defaults of Config.
const (
	DefaultEventWindow = 50
	DefaultMaxSteps    = 16
)

// Config is what a lane works with.
type Config struct {
	// SessionID makes core job ids (tokens); they die with the session.
	SessionID string
	// Model answers the edge's chat requests; required.
	Model ModelClient
	// Settings gives the edge's model settings; required, called at the
	// start of each call.
	Settings func() Settings
	// CoreModel and CoreSettings are the core jobs'; nil means the edge's.
	CoreModel    ModelClient
	CoreSettings func() Settings
	// CompactionModel and CompactionSettings make the working-memory
	// compaction calls of every lane; nil means the lane's own.
	CompactionModel    ModelClient
	CompactionSettings func() Settings
	// SummaryModel and SummarySettings make the session summary call; nil
	// means the edge's.
	SummaryModel    ModelClient
	SummarySettings func() Settings
	// Arbiter commits every event and runs every tool call; required.
	Arbiter *arbiter.Arbiter
	// Tools is the registry the arbiter runs; it should hold Tools() so
	// that the edge can spawn core jobs and both lanes can use working
	// memory. Each lane is offered the tools exposed to it.
	Tools *tool.Registry
	// Skills, when set, are offered through arbiter.StartTool; the arbiter
	// must have the same registry (arbiter.Config.Skills).
	Skills *skill.Registry
	// Identity is put in every prompt of its lane.
	Identity Identity
	// Instructions and CoreInstructions replace DefaultInstructions and
	// DefaultCoreInstructions when set.
	Instructions     string
	CoreInstructions string
	// EventWindow is N, the events a prompt shows before the current
	// message; default DefaultEventWindow (tunable event_window).
	EventWindow int
	// CompactionThresholdPercent is compaction_threshold_percent; default
	// 80.
	CompactionThresholdPercent int
	// MaxSteps bounds the model calls of one edge turn; default
	// DefaultMaxSteps.
	MaxSteps int
	// Budgets are the session and job budgets (tunables.budgets); zero
	// fields take the design's defaults.
	Budgets config.Budgets
	// Reply delivers the edge's answer to each user message (DMSend kind
	// reply, or error when Reply.Error). Handle's answers go to its caller
	// instead.
	Reply func(Reply)
	// Report delivers the report of a core job: kind ReportCompleted or
	// ReportTerminated once per job (mandatory, design §7.1), or an
	// intermediate event type (need_info; progress, plan, partial_result
	// for verbose jobs). The lead maps it to DMSend core_report with
	// Core=job. It may be called after Run's context has ended.
	Report func(job, kind, text string)
	// Notify tells the user something while the lanes work: the model is
	// rate-limited, working memory was compacted (DMSend notice).
	Notify func(msg string)
	// EndSession ends the session (TERMINATE_SELF with reason, after a
	// final heartbeat): the edge calls it once a session budget is spent
	// (design §7.6), after telling the user through Notify. nil ends only
	// the lanes.
	EndSession func(reason string)
	// Log receives the lane's records; nil discards them.
	Log *slog.Logger
}

// Reply is the edge's answer to one user message.
type Reply struct {
	ReplyTo string // the rpc.UserMessage.ID answered
	Text    string
	// Error marks a failure reported instead of an answer (§7.7).
	Error bool
	// Cores names the core jobs this turn started; each sends one report.
	Cores []string
}

// Errors of the lane.
var (
	// ErrStopped: the lane has terminated (Run returned).
	ErrStopped = errors.New("lane: stopped")
	// ErrNotRunning: the call needs Run to be serving.
	ErrNotRunning = errors.New("lane: Run is not serving")
)

// Lane is the cognition of one session: the edge lane, which answers user
// messages one at a time, and the core jobs it spawns, each in its own
// goroutine. Run serves it; its other methods are safe for concurrent use.
type Lane struct {
	cfg     Config
	session *session
	edge    *actor
	sm      *machine[EdgeState]
	events  *stream
	control map[string]string // wire names of the skill control tools

	mu       sync.Mutex
	running  bool
	closing  bool // no new core job: Run is stopping them
	stopped  bool
	runCtx   context.Context
	coreCtx  context.Context
	stopCore context.CancelCauseFunc
	queue    []item
	wake     chan struct{}
	inbox    []rpc.Injection
	seenIDs  map[string]bool
	idOrder  []string        // seenIDs, oldest first, to bound it
	jobs     map[string]*job // running, by name
	ended    []*job          // the last maxEnded jobs that ended
	spawned  int64
	wg       sync.WaitGroup // running jobs

	turnCores []string // jobs started by the current turn
	resume    *resumeState
}

// item is one queued user message.
type item struct {
	msg   rpc.UserMessage
	reply chan Reply // Handle's; nil sends to Config.Reply
	// resumed is the revision of the UserMsg of a turn a resumed session
	// goes on with: it is in the log already.
	resumed int64
}

// maxEnded bounds the ended jobs choir.core.list and Status remember.
const maxEnded = 16

// New checks cfg and returns an idle lane. Run serves it.
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
	if cfg.CoreModel == nil {
		cfg.CoreModel = cfg.Model
	}
	if cfg.CoreSettings == nil {
		cfg.CoreSettings = cfg.Settings
	}
	if cfg.Instructions == "" {
		cfg.Instructions = DefaultInstructions
	}
	if cfg.CoreInstructions == "" {
		cfg.CoreInstructions = DefaultCoreInstructions
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
	cfg.Budgets = budgets(cfg.Budgets)
	l := &Lane{
		cfg:     cfg,
		session: &session{lim: cfg.Budgets},
		events:  newStream(),
		control: map[string]string{},
		wake:    make(chan struct{}, 1),
		seenIDs: map[string]bool{},
		jobs:    map[string]*job{},
	}
	for _, n := range []string{arbiter.StartTool, skill.TransitionTool, skill.FinishTool} {
		l.control[openai.WireName(n)] = n
	}
	l.sm = newMachine(EdgeIdle, EdgeTransitions, string(lock.Edge), cfg.Log)
	l.edge = newActor(l, lock.Edge, nil)
	return l, nil
}

// Run serves the lane until ctx ends: it answers queued user messages one
// full cycle each, in order, appends injections at safe points, and relays
// the core jobs' events. When ctx ends, every core job is cancelled and
// reported, the edge is TERMINATED, and Run returns nil (a clean stop).
// An error means the lane could not go on (the arbiter stopped). Run is
// called once.
func (l *Lane) Run(ctx context.Context) error {
	l.mu.Lock()
	if l.running || l.stopped {
		l.mu.Unlock()
		return errors.New("lane: Run called twice")
	}
	l.running = true
	l.runCtx = ctx
	l.coreCtx, l.stopCore = context.WithCancelCause(ctx)
	l.edge.life = ctx
	l.mu.Unlock()

	relayed := make(chan struct{})
	go func() { defer close(relayed); l.events.serve(l.relay) }()

	fatal := l.startResumed(ctx)
	var spent *BudgetError
	for fatal == nil && spent == nil {
		it, ok := l.next(ctx)
		if !ok {
			break
		}
		if fatal = l.cycle(ctx, it); fatal == nil {
			spent = l.session.spent()
		}
	}
	cause := errSessionStopped
	switch {
	case fatal != nil:
		cause = fmt.Errorf("%w: %v", errEdgeFailed, fatal)
	case spent != nil:
		cause = spent
		if l.cfg.Notify != nil {
			l.cfg.Notify(sessionSpent(spent))
		}
	}
	l.mu.Lock()
	l.closing = true // every wg.Add happened before this
	l.mu.Unlock()
	l.stopCore(cause)
	l.wg.Wait()
	l.events.close()
	<-relayed

	l.mu.Lock()
	l.stopped = true
	pending := l.queue
	l.queue = nil
	l.mu.Unlock()
	for _, it := range pending {
		switch {
		case it.reply != nil:
			close(it.reply)
		case spent != nil && l.cfg.Reply != nil:
			l.cfg.Reply(Reply{ReplyTo: it.msg.ID, Error: true, Text: "Not answered. " + sessionSpent(spent)})
		}
	}
	if spent != nil {
		l.sm.to(EdgeTerminated, "BudgetExceeded")
		l.cfg.Arbiter.Record(context.WithoutCancel(ctx), lock.Edge, arbiter.Cancelled, cancelledPayload{Reason: spent.Error()})
		l.cfg.Log.Warn("session budget spent: ending the session", "budget", spent.Budget, "limit", spent.Limit)
		if l.cfg.EndSession != nil {
			l.cfg.EndSession("session budget spent: " + spent.Error())
		}
		return nil
	}
	l.sm.to(EdgeTerminated, "Cancel")
	l.cfg.Arbiter.Record(context.WithoutCancel(ctx), lock.Edge, arbiter.Cancelled, cancelledPayload{Reason: "the session stopped"})
	if fatal != nil && ctx.Err() == nil {
		return fatal
	}
	return nil
}

// sessionSpent tells the user that a session budget is spent and the
// session ends (design §7.6), and how to go on.
func sessionSpent(b *BudgetError) string {
	return fmt.Sprintf("This session's %s budget (%d) is spent, and budgets are never reset during a session, so the session ends now. "+
		"Start a new session to go on: /start, or `choirctl agent start <agent>`.", b.Budget, b.Limit)
}

var (
	errSessionStopped = errors.New("the session stopped")
	errEdgeFailed     = errors.New("the edge lane failed")
)

// next waits for the next queued message, delivering injections that
// arrive while the edge is idle (its safe point). false when ctx ends.
func (l *Lane) next(ctx context.Context) (item, bool) {
	for {
		l.edge.deliverInjections(ctx)
		l.mu.Lock()
		if len(l.queue) > 0 {
			it := l.queue[0]
			l.queue = l.queue[1:]
			l.mu.Unlock()
			return it, true
		}
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return item{}, false
		case <-l.wake:
		}
	}
}

func (l *Lane) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Post queues a user message for the edge. Messages are answered one at a
// time in the order posted, each through Config.Reply. A message whose ID
// was seen before is dropped (delivery may repeat): Post reports false.
func (l *Lane) Post(m rpc.UserMessage) bool {
	return l.post(item{msg: m})
}

func (l *Lane) post(it item) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped || !l.remember("msg:"+it.msg.ID) {
		return false
	}
	l.queue = append(l.queue, it)
	l.signal()
	return true
}

// remember records an id, with mu held; false when it was seen.
func (l *Lane) remember(id string) bool {
	if id == "msg:" || id == "inj:" {
		return true
	}
	if l.seenIDs[id] {
		return false
	}
	l.seenIDs[id] = true
	l.idOrder = append(l.idOrder, id)
	if len(l.idOrder) > maxIDs {
		delete(l.seenIDs, l.idOrder[0])
		l.idOrder = l.idOrder[1:]
	}
	return true
}

// maxIDs bounds the message and injection ids remembered: at-least-once
// delivery only repeats recent ones.
const maxIDs = 4096

// Handle posts text as a user message and waits for its answer: the reply,
// or the failure the user would be told (§7.7). The answer comes once Run
// serves the queue; ctx bounds the wait only.
func (l *Lane) Handle(ctx context.Context, text string) (string, error) {
	ch := make(chan Reply, 1)
	if !l.post(item{msg: rpc.UserMessage{Text: text}, reply: ch}) {
		return "", ErrStopped
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return "", ErrStopped
		}
		return r.Text, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Inject appends /inject text to the edge's context at its next safe
// point: after the model reply or tool results being handled, or at once
// when the edge is idle. It is not queued as a message and gets no reply
// of its own. A repeated ID is dropped.
func (l *Lane) Inject(in rpc.Injection) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped || !l.remember("inj:"+in.ID) {
		return
	}
	l.inbox = append(l.inbox, in)
	l.signal()
}

// takeInbox returns and clears the pending injections.
func (l *Lane) takeInbox() []rpc.Injection {
	l.mu.Lock()
	defer l.mu.Unlock()
	in := l.inbox
	l.inbox = nil
	return in
}

// Cancel cancels the running core job called name (the cancel push event)
// and waits until it has terminated, or ctx ends. Its report follows.
func (l *Lane) Cancel(ctx context.Context, name string) error {
	_, err := l.cancelJob(ctx, name, "", errCancelled)
	return err
}

// Compact compacts the edge lane's working memory now (/compact, choirctl
// session compact) and waits for it, or for ctx. The lane keeps working
// meanwhile; the user is told through Config.Notify when it is done.
func (l *Lane) Compact(ctx context.Context) error {
	l.mu.Lock()
	base := l.runCtx
	l.mu.Unlock()
	if base == nil {
		return ErrNotRunning
	}
	select {
	case err := <-l.edge.mem.Compact(base):
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// State returns the edge's state.
func (l *Lane) State() EdgeState { return l.sm.get() }

// Skill returns the edge's running skill, or nil.
func (l *Lane) Skill() *skill.Run { return l.edge.skill() }
