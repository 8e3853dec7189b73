package arbiter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"choir/agent/lock"
	"choir/agent/skill"
	"choir/agent/tool"
	"choir/internal/jsonlimit"
	"choir/internal/rpc"
)

// invocation is one proposal on its way through the arbiter. The fields of
// the first group are set by prepare in the submitter's goroutine and never
// change; the second group belongs to the Run goroutine.
type invocation struct {
	p         Proposal
	ctx       context.Context
	lane, job string
	input     json.RawMessage // canonical input; nil when the arguments are not JSON
	badInput  error           // why the arguments are not JSON
	call      *tool.Call      // nil when Prepare refused the call
	prepErr   error
	locks     []lock.Request
	requested []byte // the ToolCallRequested payload
	reply     chan result

	held     *lock.Held
	goAhead  chan struct{} // slow path: closed once ToolCallCommitted is in the log
	waiters  []chan result // duplicate submissions waiting for the same outcome
	proposed time.Time     // when start took it, on Config.Now

	loop bool // the loop breaker answered it (loop.go)

	// Set by the worker before it reports (the report orders them).
	lockWait, ran time.Duration
}

type result struct {
	out Outcome
	err error
}

// report is what an invocation's goroutine tells the Run goroutine: its
// lockset is held (acquired), or the call is over (out).
type report struct {
	inv      *invocation
	acquired bool
	held     *lock.Held
	out      Outcome
	payload  []byte // the ToolResultCommitted payload, built by the worker
}

// ownerQueue runs one owner's invocations one at a time: the lock manager
// lets an owner hold one lockset at a time.
type ownerQueue struct {
	busy    bool
	pending []*invocation
}

// Bounds of a tool call's arguments, checked before they are parsed or
// committed: what the log holds must replicate (the agent protocol refuses
// bodies nested deeper than 128 levels) and stay small. Refused arguments
// are committed only as an excerpt of their text.
const (
	MaxInputBytes = 1 << 20
	MaxInputDepth = 32
	maxRawInput   = 4 << 10
)

// excerpt keeps the start of s, within n bytes, on a rune boundary.
func excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("…[%d bytes omitted]", len(s)-cut)
}

// prepare does the pure work of a proposal in the caller's goroutine, off
// the arbiter's critical path: parse and canonicalise the input, look the
// tool up, validate the input against its schema, compute and translate
// its locks. Nothing here depends on the log.
func (a *Arbiter) prepare(ctx context.Context, p Proposal) *invocation {
	inv := &invocation{p: p, ctx: ctx, reply: make(chan result, 1)}
	inv.lane, inv.job = laneOf(p.Lane)
	in := bytes.TrimSpace(p.Input)
	if len(in) == 0 {
		in = []byte("{}")
	}
	if err := jsonlimit.Check(in, jsonlimit.Limits{MaxBytes: MaxInputBytes, MaxDepth: MaxInputDepth}); err != nil {
		inv.badInput = err
	} else if c, err := Canonical(in); err != nil {
		inv.badInput = err
	} else {
		inv.input = c
	}
	req := CallRequested{ID: p.ID, Input: inv.input, Job: inv.job, Tool: p.Tool, ToolCallID: p.ToolCallID}
	if inv.badInput != nil {
		req.RawInput = excerpt(string(p.Input), maxRawInput)
	}
	inv.requested = req.appendJSON(make([]byte, 0, 128+len(inv.input)))
	a.traceProposed(inv)
	if inv.badInput != nil || strings.HasPrefix(p.Tool, tool.ReservedPrefix) {
		return inv
	}
	if _, err := lock.ParseOwner(string(p.Lane)); err != nil {
		inv.prepErr = tool.Errorf(tool.CodeInternal, "the lane %q is not a lock owner", p.Lane)
		return inv
	}
	inv.call, inv.prepErr = a.cfg.Tools.Prepare(p.Tool, inv.input)
	if inv.call == nil {
		return inv
	}
	for _, l := range inv.call.Locks {
		k, err := lock.ParseKey(l.Key)
		if err != nil {
			inv.prepErr = tool.Errorf(tool.CodeInternal, "%s asks for an invalid lock: %v", p.Tool, err)
			break
		}
		m, err := lock.ParseMode(l.Mode)
		if err != nil {
			inv.prepErr = tool.Errorf(tool.CodeInternal, "%s asks for an invalid lock: %v", p.Tool, err)
			break
		}
		inv.locks = append(inv.locks, lock.Request{Key: k, Mode: m})
	}
	return inv
}

// propose takes a submitted invocation: answer a known ID, or queue it
// behind its owner's running invocation, or start it.
func (a *Arbiter) propose(inv *invocation) {
	id := inv.p.ID
	if out, ok := a.results[id]; ok {
		inv.reply <- a.replay(out, inv)
		return
	}
	if cur, ok := a.inflight[id]; ok {
		if cur.p.Tool != inv.p.Tool {
			inv.reply <- result{err: fmt.Errorf("%q is running %s, not %s: %w", id, cur.p.Tool, inv.p.Tool, ErrIDReused)}
			return
		}
		cur.waiters = append(cur.waiters, inv.reply)
		return
	}
	a.inflight[id] = inv
	q := a.owners[inv.p.Lane]
	if q == nil {
		q = &ownerQueue{}
		a.owners[inv.p.Lane] = q
	}
	if q.busy {
		q.pending = append(q.pending, inv)
		return
	}
	q.busy = true
	a.start(inv)
}

// replay answers a resubmitted ID with its committed outcome.
func (a *Arbiter) replay(out Outcome, inv *invocation) result {
	if out.Tool != inv.p.Tool {
		return result{err: fmt.Errorf("%q ran %s, not %s: %w", out.ID, out.Tool, inv.p.Tool, ErrIDReused)}
	}
	out.Replayed = true
	out.Started = nil
	return result{out: out}
}

// start commits ToolCallRequested and either answers the proposal at once
// (refused, or a skill control call), or takes its locks if they are free
// and hands the call to its own goroutine, which otherwise waits for them.
// Either way the Run goroutine goes back to serving at once.
func (a *Arbiter) start(inv *invocation) {
	a.log.append(inv.lane, ToolCallRequested, inv.requested)
	inv.proposed = a.cfg.Now()

	if out, done := a.loopCheck(inv); done {
		inv.loop = true
		a.finish(inv, out)
		return
	}
	if out, done := a.check(inv); done {
		a.finish(inv, out)
		return
	}
	held, err := a.locks.TryAcquire(inv.p.Lane, inv.locks)
	switch {
	case err == nil:
		inv.held = held
		a.commitCall(inv)
		a.dispatch(job{inv, held})
	case errors.Is(err, lock.ErrWouldBlock):
		inv.goAhead = make(chan struct{})
		a.dispatch(job{inv, nil})
	default:
		a.finish(inv, errorOutcome(tool.Errorf(tool.CodeInternal, "locks for %s: %v", inv.p.Tool, err)))
	}
}

// check validates a proposal in the order the model is best served by:
// the skill engine first (its control tools, then the state's allowlist),
// then the lane's allowlist and the registry, then the input. done reports
// that the proposal is answered without running a tool.
func (a *Arbiter) check(inv *invocation) (out Outcome, done bool) {
	name := inv.p.Tool
	run := inv.p.Skill
	if run != nil && run.Ended() {
		run = nil
	}
	if run != nil {
		switch name {
		case skill.TransitionTool:
			return a.transition(inv, run), true
		case skill.FinishTool:
			return a.finishSkill(inv, run), true
		}
		if err := run.CheckTool(name); err != nil {
			return a.violation(inv, run, err), true
		}
	}
	allowed := inv.p.Allowed == nil || inv.p.Allowed(name)
	if name == StartTool && a.cfg.Skills != nil && allowed {
		return a.startSkill(inv, run), true
	}
	if (name == skill.TransitionTool || name == skill.FinishTool) && a.cfg.Skills != nil && allowed {
		return errorOutcome(tool.Errorf(CodeNoSkill, "no skill is running in this lane, so %s has nothing to act on; start one with %s, or go on without", name, StartTool)), true
	}
	if !allowed || !a.cfg.Tools.Has(name) {
		return errorOutcome(tool.Errorf(tool.CodeUnknownTool,
			"no tool called %q is offered to you; call only the tools listed in this request", name)), true
	}
	if inv.badInput != nil {
		return errorOutcome(tool.Errorf(tool.CodeInvalidInput,
			"the arguments of %s are not one JSON object: %v; send them again as valid JSON", name, inv.badInput)), true
	}
	if inv.prepErr != nil {
		return errorOutcome(inv.prepErr), true
	}
	return Outcome{}, false
}

// job is an invocation handed to a worker, with its locks if start took them.
type job struct {
	inv  *invocation
	held *lock.Held
}

// dispatch hands j to an idle worker goroutine, or starts one. Workers stay
// until Run stops: there are never more than the lanes that ran calls at
// the same time (a lane runs one call at a time), and a warm worker's stack
// has already grown to what tools need.
func (a *Arbiter) dispatch(j job) {
	select {
	case a.jobs <- j:
	default:
		go a.worker(j)
	}
}

func (a *Arbiter) worker(j job) {
	for {
		a.work(j.inv, j.held)
		select {
		case j = <-a.jobs:
		case <-a.stopped:
			return
		}
	}
}

// work runs in the invocation's own goroutine: wait for the locks if start
// could not take them, run the tool, and report back. The lockset travels
// with the report and the Run goroutine releases it once the result is
// committed; whenever it cannot be handed over (Run has stopped), work
// releases it itself, on every path, panics included.
func (a *Arbiter) work(inv *invocation, held *lock.Held) {
	rep := report{inv: inv, held: held}
	handed := false
	defer func() {
		if p := recover(); p != nil {
			rep.out = errorOutcome(tool.Errorf(tool.CodeInternal, "%s failed: panic: %v", inv.p.Tool, p))
			rep.payload = nil
		}
		if !handed {
			handed = a.send(rep)
		}
		if !handed {
			rep.held.Release()
		}
	}()
	if rep.held == nil {
		h, err := a.locks.Acquire(inv.ctx, inv.p.Lane, inv.locks)
		if err != nil {
			te := tool.Errorf(tool.CodeInternal, "locks for %s: %v", inv.p.Tool, err)
			if inv.ctx.Err() != nil {
				te = tool.Errorf(tool.CodeCancelled, "%s was cancelled while it waited for its locks", inv.p.Tool)
			}
			rep.out = errorOutcome(te)
			return
		}
		inv.lockWait = a.cfg.Now().Sub(inv.proposed)
		rep.held = h
		if !a.send(report{inv: inv, acquired: true, held: h}) {
			handed = true // nobody to hand it to; released below
			h.Release()
			return
		}
		select {
		case <-inv.goAhead:
		case <-a.stopped:
			handed = true
			h.Release()
			return
		}
	}
	a.traceLocked(inv)
	began := a.cfg.Now()
	res := inv.call.Run(inv.ctx, tool.Invocation{Workspace: a.cfg.Workspace, CallID: inv.p.ID, Secrets: a.cfg.Secrets})
	inv.ran = a.cfg.Now().Sub(began)
	rep.out = resultOutcome(res)
	rep.out.Output = a.redact(rep.out.Output) // before the model or the log sees it
	rep.payload = inv.resultPayload(rep.out)
}

// resultPayload is the ToolResultCommitted payload of out.
func (inv *invocation) resultPayload(out Outcome) []byte {
	p := ResultCommitted{DurationMS: inv.ran.Milliseconds(), ID: inv.p.ID, Job: inv.job,
		LockWaitMS: inv.lockWait.Milliseconds(), Output: out.Output, Status: string(out.Status),
		Tool: inv.p.Tool, ToolCallID: inv.p.ToolCallID}
	return p.appendJSON(make([]byte, 0, 128+len(out.Output)))
}

// send hands a report to the Run goroutine; false when Run has stopped.
func (a *Arbiter) send(r report) bool {
	select {
	case a.reports <- r:
		return true
	case <-a.stopped:
		return false
	}
}

// report handles what an invocation's goroutine says.
func (a *Arbiter) report(r report) {
	inv := r.inv
	if r.acquired {
		inv.held = r.held
		a.commitCall(inv)
		close(inv.goAhead)
		return
	}
	inv.held = r.held
	a.finishWith(inv, r.out, r.payload)
}

// commitCall commits ToolCallCommitted: the call is checked and holds its
// locks.
func (a *Arbiter) commitCall(inv *invocation) {
	locks := make([]LockHeld, 0, len(inv.locks))
	for _, l := range inv.held.Locks() {
		locks = append(locks, LockHeld{Mode: l.Mode.String(), Resource: string(l.Key)})
	}
	p := CallCommitted{ID: inv.p.ID, Job: inv.job, Locks: locks, Tool: inv.p.Tool}
	a.log.append(inv.lane, ToolCallCommitted, p.appendJSON(make([]byte, 0, 128)))
}

// finish commits the result, then releases the locks (so the next holder's
// ToolCallCommitted always follows this result in the log), answers every
// submitter and starts the owner's next invocation.
func (a *Arbiter) finish(inv *invocation, out Outcome) {
	a.finishWith(inv, out, nil)
}

// finishWith is finish with the result payload built already, or nil.
func (a *Arbiter) finishWith(inv *invocation, out Outcome, payload []byte) {
	out.ID, out.Tool = inv.p.ID, inv.p.Tool
	// Refusals and skill violations quote what the model sent; a tool's
	// output was redacted by its worker already (this pass finds nothing).
	out.Output = a.redact(out.Output)
	if payload == nil {
		payload = inv.resultPayload(out)
	}
	out.Rev = a.log.append(inv.lane, ToolResultCommitted, payload).Rev
	if !inv.loop {
		a.loopResult(inv, out)
	}
	released := 0
	if inv.held != nil {
		released = len(inv.locks)
	}
	inv.held.Release()
	inv.held = nil
	a.traceFinished(inv, out, released)

	delete(a.inflight, inv.p.ID)
	kept := out
	kept.Started = nil
	a.results[inv.p.ID] = kept
	inv.reply <- result{out: out}
	for _, w := range inv.waiters {
		w <- a.replay(kept, inv)
	}

	q := a.owners[inv.p.Lane]
	if len(q.pending) == 0 {
		q.busy = false // the entry stays: lanes are few and come back
		return
	}
	next := q.pending[0]
	q.pending = q.pending[1:]
	a.start(next)
}

// commit appends one arbiter event; its payload type writes canonical JSON.
func (a *Arbiter) commit(lane, typ string, payload any) rpc.Event {
	raw, err := json.Marshal(payload)
	if err != nil {
		panic(fmt.Sprintf("arbiter: marshal %s: %v", typ, err)) // our own types always marshal
	}
	return a.log.append(lane, typ, raw)
}

// resultOutcome turns a tool result into an outcome.
func resultOutcome(res tool.Result) Outcome {
	raw, err := json.Marshal(res)
	if err == nil {
		raw, err = Canonical(raw)
	}
	if err != nil {
		return errorOutcome(tool.Errorf(tool.CodeBadOutput, "the tool's result is not JSON: %v", err))
	}
	st := res.Status
	if st == "" {
		st = tool.StatusSuccess
	}
	return Outcome{Status: st, Output: raw}
}

// errorOutcome is the outcome of a structured error.
func errorOutcome(err error) Outcome {
	return resultOutcome(tool.ErrorResult(err))
}
