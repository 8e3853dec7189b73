package lane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"choir/agent/arbiter"
	"choir/agent/lock"
	"choir/agent/skill"
	"choir/agent/tool"
	"choir/internal/openai"
	"choir/internal/rpc"
)

// Resuming a session (design §13.2). The session reads choird's newest
// snapshot and the stored events the lanes need (TailFrom), the arbiter
// restores its log from them (committing an interrupted result for each
// call that was pending), and Resume rebuilds the lanes to the last
// acknowledged revision before Run: each lane's working memory from the
// snapshot, its window from the log; the session budgets spent, from the
// snapshot and the events after it; the skill runs; the core jobs that
// were open, which go on; and the edge's turn, which goes on when the
// user's last message was not yet answered. Tool calls the model asked
// for that never reached the arbiter are answered as interrupted at Run,
// before any lane calls the model again. Nothing is run twice: a tool
// call with a committed result is never proposed again, its result is in
// the window.

// Resume is what a resumed session gives the lanes.
type Resume struct {
	// Snapshot is §13.4's snapshot at SnapshotRev (Snapshot's JSON), nil
	// when choird held none.
	Snapshot    json.RawMessage
	SnapshotRev int64
	// Events are the log as the arbiter restored it: the stored events
	// after TailFrom, and the interrupted results it committed.
	Events []rpc.Event
}

// Resumed says what the lanes took back, for the user to be told.
type Resumed struct {
	Jobs       []string // the core jobs that go on
	Turn       bool     // the edge answers the user's last message
	Unanswered int      // tool calls never started, answered as interrupted
	Skills     []string // skill runs that go on, by lane
}

// resumeState is what Run starts from.
type resumeState struct {
	jobs       []*job
	turn       *item
	unanswered []unanswered
}

type unanswered struct {
	owner lock.Owner
	id    string
	call  arbiter.ModelToolCall
}

// TailFrom is the revision after which a resumed session needs the stored
// events (Hooks.TailFrom): the oldest window, pinned message or open core
// job the snapshot names, and at most rev.
func TailFrom(raw json.RawMessage, rev int64) int64 {
	var s Snapshot
	if json.Unmarshal(raw, &s) != nil {
		return 0
	}
	from := rev
	low := func(r int64) {
		if r > 0 && r-1 < from {
			from = r - 1
		}
	}
	for _, b := range s.EventWindowBoundary {
		low(b)
	}
	for _, m := range s.LaneState.Memory {
		for _, k := range m.Kept {
			low(k)
		}
		low(m.StartedRev)
	}
	return max(from, 0)
}

// owner is the lane an event belongs to.
func eventOwner(e rpc.Event, job string) lock.Owner {
	if e.Lane == arbiter.LaneCore && job != "" {
		if o, err := lock.Core(job); err == nil {
			return o
		}
	}
	return lock.Edge
}

// Resume rebuilds the lanes from a resumed session's state; call it once,
// before Run.
func (l *Lane) Resume(r Resume) (Resumed, error) {
	l.mu.Lock()
	running := l.running
	l.mu.Unlock()
	if running {
		return Resumed{}, errors.New("lane: Resume after Run")
	}
	var snap Snapshot
	if len(r.Snapshot) > 0 {
		if err := json.Unmarshal(r.Snapshot, &snap); err != nil {
			return Resumed{}, fmt.Errorf("lane: resume: the snapshot at revision %d: %w", r.SnapshotRev, err)
		}
		l.edge.mem.Restore(snap.memoryState(lock.Edge))
	}
	after := func(e rpc.Event) bool { return e.Rev > r.SnapshotRev }

	// The session budgets spent.
	used := snap.LaneState.Used
	type jobFold struct {
		j          *job
		steps      int
		tools      int
		injections int
		first      time.Time // its first event after the snapshot
		last       time.Time
	}
	jobs := map[string]*jobFold{}
	var order []string
	open := func(js JobStatus, startedRev int64, began time.Time, fromSnap bool) {
		j, err := l.buildJob(js.Start)
		if err != nil {
			l.cfg.Log.Warn("a core job cannot be resumed", "job", js.Name, "error", err.Error())
			return
		}
		j.id = js.ID
		j.start.JobID = js.ID
		j.startedRev = startedRev
		f := &jobFold{j: j, first: began, last: began}
		if fromSnap {
			f.steps, f.tools, f.injections = js.Steps, js.ToolCalls, js.Injections
			if pos, ok := snap.LaneState.Memory[string(j.a.owner)]; ok && startedRev == 0 {
				j.startedRev = pos.StartedRev
			}
			j.a.mem.Restore(snap.memoryState(j.a.owner))
			if left, ok := js.Remaining[BudgetJobWallTime]; ok {
				j.begun = time.Now().Add(-(j.lim.wall - time.Duration(left)*time.Millisecond))
			}
			f.first = time.Time{}
		}
		if _, dup := jobs[js.Name]; !dup {
			order = append(order, js.Name)
		}
		jobs[js.Name] = f
	}
	for _, js := range snap.OpenJobs {
		if !js.Ended {
			open(js, 0, time.Time{}, true)
		}
	}

	var lastUser *rpc.Event
	var lastUserP userPayload
	turnDone := true
	answered := map[string]bool{}
	var asked []unanswered
	requests := map[string]json.RawMessage{} // choir.skill.start inputs by invocation id
	var f fields
	for i := range r.Events {
		e := r.Events[i]
		f = fields{}
		json.Unmarshal(e.Payload, &f)
		switch e.Type {
		case arbiter.UserMsg:
			if e.Lane == arbiter.LaneEdge {
				lastUser, turnDone = &r.Events[i], false
				lastUserP = userPayload{}
				json.Unmarshal(e.Payload, &lastUserP)
			}
		case arbiter.ModelOutput:
			var p output
			json.Unmarshal(e.Payload, &p)
			if after(e) {
				used.Tokens += tokensOf(e.Payload)
			}
			if e.Lane == arbiter.LaneEdge && (len(p.ToolCalls) == 0 || p.Error != "") {
				turnDone = true
			}
			if jf := jobs[p.Job]; e.Lane == arbiter.LaneCore && jf != nil && after(e) {
				jf.steps++
			}
			o := eventOwner(e, p.Job)
			for n, c := range p.ToolCalls {
				asked = append(asked, unanswered{owner: o, id: fmt.Sprintf("%s/%d/%d", o, e.Rev, n), call: c})
			}
		case arbiter.ToolCallRequested:
			if after(e) {
				used.ToolCalls++
				if jf := jobs[f.Job]; e.Lane == arbiter.LaneCore && jf != nil && f.Tool != FinishTool {
					jf.tools++
				}
			}
			if f.Tool == arbiter.StartTool {
				var p arbiter.CallRequested
				json.Unmarshal(e.Payload, &p)
				requests[p.ID] = p.Input
			}
		case arbiter.ToolResultCommitted, arbiter.Cancelled:
			if f.ID != "" {
				answered[f.ID] = true
			}
		case arbiter.CoreStarted:
			var p startedPayload
			json.Unmarshal(e.Payload, &p)
			if after(e) {
				used.CoreJobs++
				open(JobStatus{Name: p.Job, ID: p.JobID, Start: p.Start}, e.Rev, e.Time, false)
			} else if jf := jobs[p.Job]; jf != nil && jf.j.id == p.JobID {
				jf.j.startedRev = e.Rev
			}
		case arbiter.CoreStopped:
			var p stoppedPayload
			json.Unmarshal(e.Payload, &p)
			if jf := jobs[p.Job]; jf != nil && jf.j.id == p.JobID {
				delete(jobs, p.Job)
			}
		case arbiter.InjectedInstruction:
			if jf := jobs[f.Job]; e.Lane == arbiter.LaneCore && jf != nil && after(e) {
				jf.injections++
			}
		}
		if e.Lane == arbiter.LaneCore {
			if jf := jobs[f.Job]; jf != nil {
				if jf.first.IsZero() && after(e) {
					jf.first = e.Time
				}
				jf.last = e.Time
			}
		}
	}
	l.session.mu.Lock()
	l.session.tokens, l.session.tools, l.session.jobs = used.Tokens, used.ToolCalls, used.CoreJobs
	l.session.mu.Unlock()
	l.spawned = used.CoreJobs

	st := &resumeState{}
	var out Resumed
	for _, name := range order {
		jf := jobs[name]
		if jf == nil {
			continue
		}
		j := jf.j
		j.mu.Lock()
		j.steps, j.tools, j.injections = jf.steps, jf.tools, jf.injections
		j.mu.Unlock()
		if !jf.first.IsZero() {
			// It ran from its first event to its last: that much of its
			// wall time is gone; the time the agent was down is not.
			j.begun = j.begun.Add(-jf.last.Sub(jf.first))
		}
		j.a.seen = max(j.startedRev, j.a.mem.State().FoldedThrough)
		if run := l.replaySkill(j.a.owner, snap.SkillState, r, requests); run != nil {
			j.a.setSkill(run)
			out.Skills = append(out.Skills, string(j.a.owner)+": "+run.Skill())
		}
		st.jobs = append(st.jobs, j)
		out.Jobs = append(out.Jobs, name)
	}
	if run := l.replaySkill(lock.Edge, snap.SkillState, r, requests); run != nil {
		l.edge.setSkill(run)
		out.Skills = append(out.Skills, "edge: "+run.Skill())
	}
	if lastUser != nil && !turnDone {
		st.turn = &item{msg: rpc.UserMessage{ID: lastUserP.ID, Text: lastUserP.Text, Attachments: lastUserP.Attachments}, resumed: lastUser.Rev}
		out.Turn = true
	}
	goesOn := map[lock.Owner]bool{lock.Edge: out.Turn}
	for _, j := range st.jobs {
		goesOn[j.a.owner] = true
	}
	for _, u := range asked {
		if !answered[u.id] && goesOn[u.owner] {
			st.unanswered = append(st.unanswered, u)
		}
	}
	out.Unanswered = len(st.unanswered)
	l.mu.Lock()
	l.resume = st
	l.mu.Unlock()
	l.cfg.Log.Info("lanes resumed", "snapshot_rev", r.SnapshotRev, "events", len(r.Events), "jobs", len(out.Jobs),
		"turn", out.Turn, "unanswered", out.Unanswered, "tokens_used", used.Tokens, "tool_calls_used", used.ToolCalls)
	return out, nil
}

// replaySkill rebuilds a lane's skill run: the snapshot's, then the
// transitions committed after it (a start begins a new run with its input,
// a finish or a failure ends it). A run that cannot be rebuilt is dropped
// with a log line; the model then sees only its past in the window.
func (l *Lane) replaySkill(owner lock.Owner, snaps map[string]skill.Snapshot, r Resume, requests map[string]json.RawMessage) *skill.Run {
	if l.cfg.Skills == nil {
		return nil
	}
	var run *skill.Run
	if s, ok := snaps[string(owner)]; ok && s.Status == skill.StatusRunning {
		var err error
		if run, err = l.cfg.Skills.Restore(s); err != nil {
			l.cfg.Log.Warn("a skill run cannot be resumed", "lane", string(owner), "skill", s.Skill, "error", err.Error())
			run = nil
		}
	}
	for _, e := range r.Events {
		if e.Type != arbiter.SkillTransition || e.Rev <= r.SnapshotRev {
			continue
		}
		var p arbiter.SkillTransitionPayload
		if json.Unmarshal(e.Payload, &p) != nil || eventOwner(e, p.Job) != owner {
			continue
		}
		switch {
		case p.On == "start":
			var args struct {
				Input json.RawMessage `json:"input"`
			}
			json.Unmarshal(requests[p.ID], &args)
			started, err := l.cfg.Skills.Start(p.Skill, args.Input)
			if err != nil {
				l.cfg.Log.Warn("a skill run cannot be resumed", "lane", string(owner), "skill", p.Skill, "error", err.Error())
			}
			run = started
			if run != nil {
				run.SetRetryBudget(l.cfg.Budgets.PerStepSkillRetries)
			}
		case p.Status != string(skill.StatusRunning):
			run = nil
		case run != nil:
			if _, err := run.Transition(p.On); err != nil {
				l.cfg.Log.Warn("a skill run cannot be resumed", "lane", string(owner), "skill", p.Skill, "error", err.Error())
				run = nil
			}
		}
	}
	if run != nil && run.Ended() {
		return nil
	}
	return run
}

// tokensOf is the tokens a ModelOutput payload records, else its text's
// estimate (bytes / 4).
func tokensOf(payload json.RawMessage) int64 {
	var p struct {
		Text  string `json:"text"`
		Usage *struct {
			Total int64 `json:"total_tokens"`
		} `json:"usage"`
	}
	json.Unmarshal(payload, &p)
	if p.Usage != nil && p.Usage.Total > 0 {
		return p.Usage.Total
	}
	return int64(len(p.Text) / 4)
}

// buildJob makes a job for start, not yet running (spawn and Resume).
func (l *Lane) buildJob(start CoreJobStart) (*job, error) {
	raw, err := json.Marshal(start)
	if err != nil {
		return nil, err
	}
	id := start.JobID
	start, schema, err := parseStart(raw, l.coreTool)
	if err != nil {
		return nil, err
	}
	start.JobID = id
	owner, err := lock.Core(start.JobName)
	if err != nil {
		return nil, err
	}
	j := &job{l: l, name: start.JobName, id: start.JobID, start: start, schema: schema,
		lim: limitsFor(l.cfg.Budgets, start), done: make(chan struct{}), begun: time.Now()}
	if len(start.ToolConstraints.AllowedTools) > 0 {
		j.allowed = map[string]bool{}
		for _, n := range start.ToolConstraints.AllowedTools {
			j.allowed[n] = true
		}
	}
	j.sm = newMachine(CoreIdle, CoreTransitions, string(owner), l.cfg.Log)
	j.a = newActor(l, owner, j)
	return j, nil
}

// startResumed runs at the start of Run: the tool calls never started are
// answered as interrupted, the resumed jobs start again where they were,
// and the edge's unfinished turn goes first in its queue.
func (l *Lane) startResumed(ctx context.Context) error {
	l.mu.Lock()
	st := l.resume
	l.resume = nil
	l.mu.Unlock()
	if st == nil {
		return nil
	}
	actors := map[lock.Owner]*actor{lock.Edge: l.edge}
	for _, j := range st.jobs {
		actors[j.a.owner] = j.a
	}
	for _, u := range st.unanswered {
		a := actors[u.owner]
		name := a.canonical(u.call.Name, new(openai.NameMap))
		err := a.refuse(ctx, u.id, openai.ToolCall{ID: u.call.ID, Name: u.call.Name, Arguments: u.call.Arguments}, name,
			tool.Errorf(tool.CodeInterrupted, "the agent stopped before this call started; it was not run. Call it again if it is still needed."))
		if err != nil {
			return err
		}
	}
	l.mu.Lock()
	for _, j := range st.jobs {
		j.ctx, j.cancel = context.WithCancelCause(l.coreCtx)
		j.resumed = true
		j.sm.to(CoreCreated, "resumed")
		l.jobs[j.name] = j
		l.wg.Add(1)
		go j.run()
	}
	if st.turn != nil {
		l.queue = append([]item{*st.turn}, l.queue...)
	}
	l.mu.Unlock()
	if st.turn != nil {
		l.signal()
	}
	return nil
}
