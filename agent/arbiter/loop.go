package arbiter

import (
	"fmt"
	"hash/fnv"
	"slices"

	"choir/agent/lock"
	"choir/agent/skill"
	"choir/agent/tool"
)

// The loop breaker stops a lane that goes round in circles before a budget
// does: a model that proposes the same call again and again, sends call
// after call that cannot be used (§8.2: arguments that are not JSON, tools
// that are not offered), or takes step after step without learning
// anything new. It watches each lane (the edge, each core job) over one
// turn or one job: a UserMsg the edge records starts a new turn, a
// CoreStarted a new job. When a lane trips it, the proposal is refused,
// not run, with a structured loop_detected error that says why; if the
// lane trips it again at a later model step, the proposal is refused with
// loop_halted and Outcome.Halt says why, which ends the turn or the job
// (the lane tells the DM). Skill control calls and proposals a skill
// refuses are left to the skill engine's own retry budget.

// LoopLimits are the loop breaker's tunables (config: loop_breaker).
type LoopLimits struct {
	// Repeats trips the breaker when a lane proposes the same tool with
	// the same canonical arguments this many times in a row, or this many
	// unusable calls in a row; 0 means DefaultLoopRepeats.
	Repeats int
	// StaleSteps trips it when this many model steps in a row that
	// proposed calls got back no tool result the lane had not had already
	// in this turn or job; 0 means DefaultLoopStaleSteps.
	StaleSteps int
}

// Defaults of LoopLimits, also config.json's.
const (
	DefaultLoopRepeats    = 3
	DefaultLoopStaleSteps = 6
)

// Error codes of the loop breaker.
const (
	// CodeLoopDetected: the call was not run; the lane repeats itself.
	CodeLoopDetected = "loop_detected"
	// CodeLoopHalted: the lane repeated itself after loop_detected; its
	// turn or job ends.
	CodeLoopHalted = "loop_halted"
)

func (l LoopLimits) withDefaults() LoopLimits {
	if l.Repeats <= 0 {
		l.Repeats = DefaultLoopRepeats
	}
	if l.StaleSteps <= 0 {
		l.StaleSteps = DefaultLoopStaleSteps
	}
	return l
}

// loopKind is how the breaker counts a proposal.
type loopKind int

const (
	loopCall     loopKind = iota // a call of an offered tool: counted
	loopUnusable                 // arguments not JSON, or a tool not offered
	loopSkill                    // a skill control call or a call the skill refuses: not counted
)

// loopState is one lane's record over its current turn or job. Owned by the
// Run goroutine.
type loopState struct {
	last     uint64 // fingerprint of the last counted proposal (0: none)
	repeats  int    // how many times in a row it was proposed
	unusable int    // unusable proposals in a row

	step      int  // model steps recorded so far
	stepCalls int  // proposals of the current step
	stepNew   bool // the current step got a new tool result
	stale     int  // finished steps in a row with calls and no new result

	warnedStep int // the step of the last loop_detected, or -1
	results    map[uint64]struct{}
}

func newLoopState() *loopState {
	return &loopState{warnedStep: -1, results: map[uint64]struct{}{}}
}

func (a *Arbiter) loopState(owner lock.Owner) *loopState {
	s := a.loops[owner]
	if s == nil {
		s = newLoopState()
		a.loops[owner] = s
	}
	return s
}

// loopRecorded follows a lane's recorded events: a new turn or job starts
// afresh, a model reply starts a new step, an ended job is forgotten.
func (a *Arbiter) loopRecorded(owner lock.Owner, typ string) {
	switch typ {
	case UserMsg, CoreStarted:
		a.loops[owner] = newLoopState()
	case CoreStopped:
		delete(a.loops, owner) // the job is over; a new one starts afresh
	case ModelOutput:
		s := a.loopState(owner)
		if s.stepCalls > 0 {
			if s.stepNew {
				s.stale = 0
			} else {
				s.stale++
			}
		}
		s.step++
		s.stepCalls, s.stepNew = 0, false
	}
}

// loopKindOf classifies a proposal with pure checks only (check, which
// follows, may start or move a skill).
func (a *Arbiter) loopKindOf(inv *invocation) loopKind {
	name := inv.p.Tool
	switch name {
	case StartTool, skill.TransitionTool, skill.FinishTool:
		return loopSkill
	}
	if run := inv.p.Skill; run != nil && !run.Ended() && !slices.Contains(run.AllowedTools(), name) {
		return loopSkill
	}
	if inv.badInput != nil || (inv.p.Allowed != nil && !inv.p.Allowed(name)) || !a.cfg.Tools.Has(name) {
		return loopUnusable
	}
	return loopCall
}

// loopCheck counts a proposal and answers it when it trips the breaker:
// loop_detected the first time, loop_halted (with Outcome.Halt) when the
// lane trips it again at a later step.
func (a *Arbiter) loopCheck(inv *invocation) (Outcome, bool) {
	lim := LoopLimits{}
	if a.cfg.Loops != nil {
		lim = a.cfg.Loops()
	}
	lim = lim.withDefaults()
	s := a.loopState(inv.p.Lane)
	s.stepCalls++
	kind := a.loopKindOf(inv)
	if kind == loopSkill {
		s.last, s.repeats, s.unusable = 0, 0, 0
		return Outcome{}, false
	}
	fp := fingerprint(inv.p.Tool, inv.input)
	if inv.input == nil {
		fp = fingerprint(inv.p.Tool, []byte(inv.p.Input))
	}
	if fp == s.last {
		s.repeats++
	} else {
		s.last, s.repeats = fp, 1
	}
	if kind == loopUnusable {
		s.unusable++
	} else {
		s.unusable = 0
	}
	var why string
	switch {
	case s.repeats >= lim.Repeats:
		why = fmt.Sprintf("%s was proposed with the same arguments %d times in a row", inv.p.Tool, s.repeats)
	case s.unusable >= lim.Repeats:
		why = fmt.Sprintf("%d tool calls in a row could not be used (arguments that are not one JSON object, or a tool that is not offered)", s.unusable)
	case s.stale >= lim.StaleSteps:
		why = fmt.Sprintf("the last %d model steps got back no tool result that was not known already", s.stale)
	default:
		return Outcome{}, false
	}
	if s.warnedStep >= 0 && s.warnedStep < s.step {
		out := errorOutcome(tool.Errorf(CodeLoopHalted, "stopped by the loop breaker: %s, after being told so; the call was not run", why))
		out.Halt = why + ", after the loop breaker had said so"
		return out, true
	}
	s.warnedStep = s.step
	return errorOutcome(tool.Errorf(CodeLoopDetected,
		"not run: %s. Its result would not change. Use the results you have, try a different approach, or answer in text; "+
			"one more repeat ends this turn or job", why)), true
}

// loopResult notes a committed tool result of a lane: a result it had not
// had before in this turn or job is progress.
func (a *Arbiter) loopResult(inv *invocation, out Outcome) {
	s := a.loopState(inv.p.Lane)
	fp := fingerprint(inv.p.Tool, out.Output)
	if _, ok := s.results[fp]; !ok {
		s.results[fp] = struct{}{}
		s.stepNew = true
	}
}

// fingerprint hashes a tool name and a JSON document.
func fingerprint(name string, doc []byte) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write(doc)
	if v := h.Sum64(); v != 0 {
		return v
	}
	return 1
}
