package arbiter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"choir/agent/lock"
	"choir/agent/redact"
	"choir/agent/skill"
	"choir/agent/tool"
	"choir/internal/rpc"
)

// Errors of the arbiter itself. A refused proposal is not an error: it is
// committed with an error result, which the model receives.
var (
	// ErrClosed reports a call after Run has returned.
	ErrClosed = errors.New("arbiter: stopped")
	// ErrIDReused reports an invocation id resubmitted for another tool.
	ErrIDReused = errors.New("arbiter: invocation id already used for another tool")
	// ErrNotRecordable reports Record of a type only the arbiter appends.
	ErrNotRecordable = errors.New("arbiter: event type cannot be recorded by a lane")
)

// Config is what an Arbiter works with.
type Config struct {
	// Tools is the tool registry; required.
	Tools *tool.Registry
	// Skills, when set, lets lanes start skills with StartTool.
	Skills *skill.Registry
	// Locks is the lock manager; nil uses a private one.
	Locks *lock.Manager
	// Workspace is the absolute path of the workspace root tools run in.
	Workspace string
	// Secrets resolves the secret resources a tool names (tool.Call.Run
	// asks it for those only); nil binds none.
	Secrets tool.SecretFunc
	// Redactor replaces the values of the session's secrets in every event
	// before it is committed and hashed, and in every outcome a lane
	// receives, so what the model sees, what the log holds and what
	// heartbeats replicate are the same redacted text. nil redacts nothing.
	Redactor *redact.Redactor
	// Now is the clock events are stamped with and tool calls timed by
	// (lock waits, durations); nil is time.Now.
	Now func() time.Time
	// Loops are the loop breaker's limits of the moment (loop.go); nil
	// or zero fields use the defaults.
	Loops func() LoopLimits
	// Log receives the tool call traces (§22.1): proposal, lock
	// acquisition and release, result; nil discards them. It should carry
	// the session id; each record names its lane.
	Log *slog.Logger
}

// Proposal is one tool call a lane asks the arbiter to run.
type Proposal struct {
	// ID identifies the invocation in the session. A proposal whose ID has
	// committed a result already gets that result back without running
	// again; one whose ID is still running waits for the same result.
	ID string
	// Lane is the lane proposing: lock.Edge or lock.Core(job). It owns the
	// locks while the call runs.
	Lane lock.Owner
	// ToolCallID is the model's id for the call, kept in the events so that
	// the lane can answer it with a tool message.
	ToolCallID string
	// Tool is the canonical tool name (choir.fs.read), a skill control tool
	// (choir.skill.*) or, when the lane could not map the model's name, the
	// name as the model sent it.
	Tool string
	// Input is the arguments as the model sent them: a JSON object, or
	// anything else, which is refused with invalid_input. Empty means {}.
	Input json.RawMessage
	// Allowed is the lane's allowlist: the tools offered to the lane. A name
	// it refuses gets the same unknown_tool answer as a name that does not
	// exist, so nothing hidden is revealed. nil allows every tool.
	Allowed func(name string) bool
	// Skill is the lane's active skill run, or nil. While it runs, only its
	// current state's tools and its control tools are accepted.
	Skill *skill.Run
}

// Outcome is what a proposal came to.
type Outcome struct {
	ID   string
	Tool string
	// Status is success or error.
	Status tool.Status
	// Output is the JSON the model receives as the tool message: a tool
	// result, a structured error or a skill violation.
	Output json.RawMessage
	// Rev is the revision of the ToolResultCommitted event.
	Rev int64
	// Replayed reports that this submission ran nothing: the result is
	// the one committed for the same ID.
	Replayed bool
	// Started is the skill run a choir.skill.start call began; the lane
	// passes it as Proposal.Skill from now on.
	Started *skill.Run
	// Halt, when set, is why the loop breaker stopped the lane (the
	// output is a loop_halted error): the lane ends its turn or job and
	// says so.
	Halt string
}

// Arbiter owns the commit log of one session. Create it with New, run it
// with Run; its methods are safe for concurrent use.
type Arbiter struct {
	cfg   Config
	locks *lock.Manager
	log   commitLog

	submits chan *invocation
	records chan *recordReq
	reports chan report
	jobs    chan job      // idle workers wait here
	stopped chan struct{} // closed when Run returns

	// Owned by the Run goroutine.
	inflight map[string]*invocation
	results  map[string]Outcome
	owners   map[lock.Owner]*ownerQueue
	loops    map[lock.Owner]*loopState
}

// New returns an arbiter for cfg. Nothing is served until Run.
func New(cfg Config) *Arbiter {
	if cfg.Tools == nil {
		panic("arbiter.New: Config.Tools is nil")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	a := &Arbiter{
		cfg:      cfg,
		locks:    cfg.Locks,
		submits:  make(chan *invocation, 64),
		records:  make(chan *recordReq, 64),
		reports:  make(chan report, 64),
		jobs:     make(chan job),
		stopped:  make(chan struct{}),
		inflight: map[string]*invocation{},
		results:  map[string]Outcome{},
		owners:   map[lock.Owner]*ownerQueue{},
		loops:    map[lock.Owner]*loopState{},
	}
	if a.locks == nil {
		a.locks = new(lock.Manager)
	}
	a.log.clock = cfg.Now
	a.log.redact = a.redact
	return a
}

// Run serves proposals and records until ctx ends, then returns nil. Calls
// waiting on the arbiter then fail with ErrClosed; invocations still
// running finish under their own contexts and release their locks, but
// their results are no longer committed. Run is called once.
func (a *Arbiter) Run(ctx context.Context) error {
	defer close(a.stopped)
	for {
		select {
		case <-ctx.Done():
			return nil
		case inv := <-a.submits:
			a.propose(inv)
		case r := <-a.records:
			e := a.log.append(r.lane, r.typ, r.payload)
			a.loopRecorded(r.owner, r.typ)
			r.reply <- e
		case rep := <-a.reports:
			a.report(rep)
		}
	}
}

// Submit proposes a tool call and waits for its outcome: a committed
// result, whether the call ran, was refused or was answered from an earlier
// submission of the same ID. The error is ctx's when ctx ends first (the
// call still completes and commits its result, cancelled if it depended on
// ctx), ErrClosed, or ErrIDReused.
func (a *Arbiter) Submit(ctx context.Context, p Proposal) (Outcome, error) {
	inv := a.prepare(ctx, p)
	select {
	case a.submits <- inv:
	case <-a.stopped:
		return Outcome{}, ErrClosed
	case <-ctx.Done():
		return Outcome{}, ctx.Err()
	}
	select {
	case r := <-inv.reply:
		return r.out, r.err
	case <-a.stopped:
		return Outcome{}, ErrClosed
	case <-ctx.Done():
		return Outcome{}, ctx.Err()
	}
}

// recordReq asks the Run goroutine to append one event.
type recordReq struct {
	owner     lock.Owner
	lane, typ string
	payload   []byte
	reply     chan rpc.Event
}

// Record commits an event that is not a tool call: UserMsg, ModelOutput,
// SkillTransition, MemoryWriteCommitted, CoreStarted, CoreStopped,
// InjectedInstruction or Cancelled (the tool events are the arbiter's own).
// payload is marshalled to JSON and committed in canonical form; a core
// lane's payload should name its job as "job". It returns the committed
// event.
func (a *Arbiter) Record(ctx context.Context, lane lock.Owner, typ string, payload any) (rpc.Event, error) {
	if !recordable[typ] {
		return rpc.Event{}, fmt.Errorf("record %q: %w", typ, ErrNotRecordable)
	}
	if lane != "" {
		if _, err := lock.ParseOwner(string(lane)); err != nil {
			return rpc.Event{}, fmt.Errorf("record %s: %w", typ, err)
		}
	}
	raw, err := json.Marshal(payload)
	if err == nil {
		raw, err = Canonical(raw)
	}
	if err != nil {
		return rpc.Event{}, fmt.Errorf("record %s: payload: %w", typ, err)
	}
	l, _ := laneOf(lane)
	r := &recordReq{owner: lane, lane: l, typ: typ, payload: raw, reply: make(chan rpc.Event, 1)}
	select {
	case a.records <- r:
	case <-a.stopped:
		return rpc.Event{}, ErrClosed
	case <-ctx.Done():
		return rpc.Event{}, ctx.Err()
	}
	select {
	case e := <-r.reply:
		return e, nil
	case <-a.stopped:
		return rpc.Event{}, ErrClosed
	}
}

// Events returns a copy of the committed events after rev afterRev, in
// order: what a heartbeat replicates after the last acknowledged revision.
func (a *Arbiter) Events(afterRev int64) []rpc.Event { return a.log.since(afterRev) }

// EventsAfter returns a copy of at most max committed events after rev
// afterRev, in order: one heartbeat's worth of a backlog, without copying
// the rest.
func (a *Arbiter) EventsAfter(afterRev int64, max int) []rpc.Event {
	if max < 0 {
		max = 0
	}
	return a.log.sinceN(afterRev, max)
}

// Head returns the latest revision and its hash (0 and "" for an empty log).
func (a *Arbiter) Head() (rev int64, hash string) { return a.log.head() }

// HashAt returns the hash of revision rev, "" for rev 0 (a heartbeat's
// hash_prev), and false for a revision the log does not hold.
func (a *Arbiter) HashAt(rev int64) (string, bool) { return a.log.hashAt(rev) }

// Wait blocks until the log holds revision rev, or ctx ends.
func (a *Arbiter) Wait(ctx context.Context, rev int64) error { return a.log.wait(ctx, rev) }

// Locks returns the lock manager the arbiter acquires from.
func (a *Arbiter) Locks() *lock.Manager { return a.locks }

// redact returns a canonical JSON document with the secret values replaced,
// still canonical: doc itself when it holds none.
func (a *Arbiter) redact(doc []byte) []byte {
	out := a.cfg.Redactor.JSON(doc)
	if len(out) == len(doc) && (len(doc) == 0 || &out[0] == &doc[0]) {
		return doc
	}
	if c, err := Canonical(out); err == nil {
		return c
	}
	return out
}
