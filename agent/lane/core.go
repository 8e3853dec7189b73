package lane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"choir/agent/arbiter"
	"choir/agent/tool"
	"choir/internal/jsonschema"
	"choir/internal/openai"
)

// job is one core job: its CoreJobStart, its state machine, its budgets and
// its own lane (actor) with its own working memory. It runs in its own
// goroutine under the session's context.
type job struct {
	l       *Lane
	name    string
	id      string
	start   CoreJobStart
	schema  *jsonschema.Schema // of the final result; nil accepts any
	allowed map[string]bool    // tool_constraints.allowed_tools; nil: all
	lim     jobLimits
	a       *actor
	sm      *machine[CoreState]
	ctx     context.Context
	cancel  context.CancelCauseFunc
	done    chan struct{}
	begun   time.Time
	resumed bool // a resumed session's open job: its CoreStarted is in the log

	mu         sync.Mutex
	over       bool // the job has ended: its token is void
	inbox      []string
	steps      int
	tools      int
	injections int
	final      *FinalResult
	failure    *JobError
	last       *CoreEvent // the last progress, plan or partial result
	inFlight   string     // the tool running, if any
	startedRev int64      // the revision of its CoreStarted
}

// Causes of a job's termination besides budgets and model errors.
var errCancelled = errors.New("cancelled by the edge")

// spawn validates a CoreJobStart and starts its job (IDLE -> CREATED): the
// name must be free among running jobs and max_core_jobs not spent.
func (l *Lane) spawn(input json.RawMessage) (*job, error) {
	start, schema, err := parseStart(input, l.coreTool)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.coreCtx == nil || l.closing {
		return nil, tool.Errorf(tool.CodeInternal, "the lane is not running; no core job can start")
	}
	if _, ok := l.jobs[start.JobName]; ok {
		return nil, tool.Errorf(CodeJobNameInUse, "a core job called %q is running; choose another name, or use %s to give it new instructions", start.JobName, InjectTool)
	}
	if err := l.session.takeJob(); err != nil {
		return nil, err.(*BudgetError).toolError()
	}
	l.spawned++
	start.JobID = jobID(l.cfg.SessionID, start.JobName, l.spawned)
	j, err := l.buildJob(start)
	if err != nil {
		return nil, tool.Errorf(tool.CodeInvalidInput, "%v", err)
	}
	j.schema = schema
	j.ctx, j.cancel = context.WithCancelCause(l.coreCtx)
	j.sm.to(CoreCreated, "CoreJobStart")
	l.jobs[j.name] = j
	l.wg.Add(1)
	go j.run()
	return j, nil
}

// coreTool reports whether core jobs can be offered name.
func (l *Lane) coreTool(name string) bool {
	if name == arbiter.StartTool {
		return l.cfg.Skills != nil
	}
	t, ok := l.cfg.Tools.Lookup(name)
	return ok && t.Runtime().Exposure.Offers(tool.Core)
}

// allows reports whether the job's tool constraints let it use name; the
// job's own protocol tools are always allowed.
func (j *job) allows(name string) bool {
	return j.allowed == nil || j.allowed[name] || name == FinishTool || name == ReportTool
}

func (j *job) run() {
	defer j.l.wg.Done()
	defer close(j.done)
	j.end(j.work())
}

// work is the job from CREATED to the end: nil when it completed, else why
// it terminated.
func (j *job) work() error {
	a := j.a
	j.sm.to(CoreInitializing, "load task, context, set budgets")
	ctx, stop := context.WithTimeoutCause(j.ctx, j.lim.wall, &BudgetError{BudgetJobWallTime, j.lim.wall.Milliseconds()})
	defer stop()
	a.life = ctx
	if !j.resumed {
		ev, err := j.l.cfg.Arbiter.Record(ctx, a.owner, arbiter.CoreStarted, startedPayload{Job: j.name, JobID: j.id, Start: j.start})
		if err != nil {
			return cause(ctx, err)
		}
		a.seen = ev.Rev // the job sees its own events from here on
		j.mu.Lock()
		j.startedRev = ev.Rev
		j.mu.Unlock()
	} else {
		a.sync() // its work so far, from the resumed log
	}
	j.sm.to(CoreReasoning, "LLM call")
	for {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if err := j.deliver(ctx); err != nil {
			return cause(ctx, err)
		}
		j.mu.Lock()
		if j.steps >= j.lim.steps {
			j.mu.Unlock()
			return &BudgetError{BudgetJobSteps, int64(j.lim.steps)}
		}
		j.steps++
		j.mu.Unlock()
		a.setSteps(a.step() + 1)
		if err := a.stepSkill(ctx); err != nil {
			return cause(ctx, err)
		}
		set := a.settings()
		req, names, err := a.request(set)
		if err != nil {
			return err
		}
		resp, err := a.call(ctx, req, set)
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			var be *BudgetError
			if errors.As(err, &be) {
				return be
			}
			a.fail(ctx, req.Model, err.Error(), "")
			return &modelError{err}
		}
		ev, err := a.recordOutput(ctx, req.Model, resp)
		if err != nil {
			return cause(ctx, err)
		}
		a.sync()
		if len(resp.ToolCalls) == 0 {
			return j.answer(resp.Content) // REASONING -> COMPLETED on FinalResult
		}
		a.maybeCompact()
		for i, tc := range resp.ToolCalls {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			id := fmt.Sprintf("%s/%d/%d", a.owner, ev.Rev, i)
			name := a.canonical(tc.Name, names)
			if name != FinishTool {
				j.mu.Lock()
				spent := j.tools >= j.lim.tools
				if !spent {
					j.tools++
				}
				j.mu.Unlock()
				if spent {
					return &BudgetError{BudgetJobToolCalls, int64(j.lim.tools)}
				}
				j.emit(CoreEvent{Type: EventToolProposal, Text: name, Data: proposalData(name, tc.Arguments)})
			}
			j.sm.to(CoreWaitingTool, "ToolProposal")
			j.setInFlight(name)
			err := j.tool(ctx, id, tc, name)
			j.setInFlight("")
			j.sm.to(CoreReasoning, "ToolResult")
			if err != nil {
				return cause(ctx, err)
			}
			if why := a.takeHalt(); why != "" {
				return &loopError{why}
			}
			if j.result() != nil {
				return nil
			}
		}
		a.sync()
		a.maybeCompact()
	}
}

// proposalData is a tool_proposal event's data: {tool, args}, the arguments
// as sent when they are JSON of at most 1 KiB, else as a cut string.
func proposalData(name, args string) json.RawMessage {
	var a any = json.RawMessage(args)
	if len(args) > 1024 || !json.Valid([]byte(args)) {
		a = cutText(args, 1024)
	}
	data, _ := json.Marshal(map[string]any{"tool": name, "args": a})
	return data
}

// tool runs one call, or refuses it past max_tool_calls_per_session.
func (j *job) tool(ctx context.Context, id string, tc openai.ToolCall, name string) error {
	if name != FinishTool {
		if err := j.l.session.takeTool(); err != nil {
			return j.a.refuse(ctx, id, tc, name, err.(*BudgetError).toolError())
		}
	}
	return j.a.propose(ctx, id, tc, name)
}

// answeredWithResult is the summary of a final result that a job gave as
// its answer's text when it has an output_schema.
const answeredWithResult = "the job answered with its result"

// answer takes a model reply without tool calls as the job's final answer
// (§7.3: REASONING -> COMPLETED on FinalResult): its text is the summary
// the user's report carries. A job with an output_schema must deliver a
// result: the text is then that result, JSON (bare or in one fenced block)
// that satisfies the schema, or the job terminates with invalid_result,
// the text quoted. A reply with neither text nor tool calls says nothing:
// the job terminates as on a malformed response (§7.7).
func (j *job) answer(text string) error {
	text = strings.TrimSpace(text)
	if text == "" {
		return &modelError{errors.New("the model answered with neither text nor a tool call")}
	}
	fr := FinalResult{Summary: text}
	if j.schema != nil {
		raw := []byte(unfence(text))
		if !json.Valid(raw) {
			return &resultError{fmt.Sprintf("the job has an output_schema but answered with text that is not JSON "+
				"(it must call %s with a result, or answer with the result alone); its answer: %s", FinishTool, cutText(text, 500))}
		}
		if err := j.schema.Validate(raw); err != nil {
			return &resultError{fmt.Sprintf("the job's answer does not match its output_schema: %v; its answer: %s", err, cutText(text, 500))}
		}
		fr = FinalResult{Summary: answeredWithResult, Result: raw}
	}
	j.mu.Lock()
	j.final = &fr
	j.mu.Unlock()
	return nil
}

// unfence returns the content of a text that is one Markdown code block
// (``` or ```json), else the text.
func unfence(text string) string {
	rest, ok := strings.CutPrefix(text, "```")
	if !ok {
		return text
	}
	nl := strings.IndexByte(rest, '\n')
	if nl < 0 || strings.TrimSpace(rest[:nl]) != "" && strings.TrimSpace(rest[:nl]) != "json" {
		return text
	}
	body, ok := strings.CutSuffix(rest[nl+1:], "```")
	if !ok || strings.Contains(body, "```") {
		return text
	}
	return strings.TrimSpace(body)
}

// resultError is a final answer that does not give the result the job's
// output_schema asks for.
type resultError struct{ msg string }

func (e *resultError) Error() string { return e.msg }

// loopError is the loop breaker's stop (arbiter/loop.go).
type loopError struct{ why string }

func (e *loopError) Error() string { return "the loop breaker stopped the job: " + e.why }

// modelError is a failed model call, which terminates a job (§7.7).
type modelError struct{ err error }

func (e *modelError) Error() string { return "the model failed: " + e.err.Error() }
func (e *modelError) Unwrap() error { return e.err }

// cause prefers the context's cause when it has ended.
func cause(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// end takes the job to COMPLETED or TERMINATED, voids its token, commits
// CoreStopped and sends the final event, which the edge reports.
func (j *job) end(err error) {
	var ev CoreEvent
	if err == nil {
		j.sm.to(CoreCompleted, "FinalResult")
		data, _ := json.Marshal(j.result())
		ev = CoreEvent{Type: EventFinalResult, Text: j.result().Summary, Data: data}
	} else {
		je, on := classify(err)
		j.sm.to(CoreTerminated, on)
		j.mu.Lock()
		j.failure = &je
		j.mu.Unlock()
		data, _ := json.Marshal(je)
		ev = CoreEvent{Type: EventError, Text: je.Message, Data: data}
	}
	j.mu.Lock()
	j.over = true
	p := stoppedPayload{Error: j.failure, Final: j.final, Job: j.name, JobID: j.id, State: j.sm.get().String(), Steps: j.steps, ToolCalls: j.tools}
	j.mu.Unlock()
	j.cancel(errJobEnded)

	l := j.l
	l.mu.Lock()
	if l.jobs[j.name] == j {
		delete(l.jobs, j.name)
	}
	l.ended = append(l.ended, j)
	if n := len(l.ended) - maxEnded; n > 0 {
		l.ended = slices.Delete(l.ended, 0, n)
	}
	l.mu.Unlock()
	l.cfg.Arbiter.Record(context.WithoutCancel(j.ctx), j.a.owner, arbiter.CoreStopped, p)
	j.emit(ev)
}

var errJobEnded = errors.New("the job ended")

// classify names a termination's cause for the error event and the
// transition.
func classify(err error) (JobError, string) {
	var be *BudgetError
	var me *modelError
	switch {
	case errors.As(err, &be):
		return JobError{Code: CodeBudgetExceeded, Message: be.Error()}, "BudgetExceeded"
	case errors.As(err, new(*loopError)):
		return JobError{Code: arbiter.CodeLoopHalted, Message: err.Error()}, "Error"
	case errors.As(err, new(*resultError)):
		return JobError{Code: CodeInvalidResult, Message: err.Error()}, "Error"
	case errors.Is(err, errCancelled):
		return JobError{Code: tool.CodeCancelled, Message: "the job was cancelled"}, "Cancel"
	case errors.As(err, &me):
		code := "llm_error"
		if k := openai.KindOf(me.err); k == openai.KindTimeout {
			code = "llm_timeout"
		}
		return JobError{Code: code, Message: me.Error()}, "LLM error"
	case errors.Is(err, errSessionStopped), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return JobError{Code: tool.CodeCancelled, Message: "the session stopped while the job ran"}, "Cancel"
	case errors.Is(err, errEdgeFailed):
		return JobError{Code: tool.CodeCancelled, Message: err.Error()}, "Cancel"
	}
	return JobError{Code: tool.CodeInternal, Message: err.Error()}, "Error"
}

// emit sends an event of the job to the edge.
func (j *job) emit(ev CoreEvent) {
	ev.Job, ev.JobID = j.name, j.id
	switch ev.Type {
	case EventProgress, EventPlan, EventPartialResult, EventThoughtSummary, EventNeedInfo:
		j.mu.Lock()
		e := ev
		j.last = &e
		j.mu.Unlock()
	}
	j.l.events.send(ev, j.start.Verbosity)
}

func (j *job) result() *FinalResult {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.final
}

func (j *job) setInFlight(name string) {
	j.mu.Lock()
	j.inFlight = name
	j.mu.Unlock()
}

func (j *job) state() CoreState { return j.sm.get() }

// inject queues an instruction for the job's next safe point. Past
// per_job_max_injections the job is terminated with that reason.
func (j *job) inject(text string) error {
	j.mu.Lock()
	if j.over {
		j.mu.Unlock()
		return tool.Errorf(CodeJobEnded, "core job %s has ended; its id is void", j.name)
	}
	if j.injections >= j.lim.injections {
		j.mu.Unlock()
		be := &BudgetError{BudgetJobInjections, int64(j.lim.injections)}
		j.cancel(be)
		return tool.Errorf(CodeBudgetExceeded, "%s; core job %s is terminated", be.Error(), j.name)
	}
	j.injections++
	j.inbox = append(j.inbox, text)
	j.mu.Unlock()
	return nil
}

// deliver commits the pending injections at a safe point (REASONING ->
// REASONING on InstructionInjected); the next prompt shows them.
func (j *job) deliver(ctx context.Context) error {
	j.mu.Lock()
	in := j.inbox
	j.inbox = nil
	j.mu.Unlock()
	for _, text := range in {
		j.sm.to(CoreReasoning, "InstructionInjected")
		if _, err := j.l.cfg.Arbiter.Record(ctx, j.a.owner, arbiter.InjectedInstruction, injectionPayload{From: "edge", Job: j.name, Text: text}); err != nil {
			return err
		}
	}
	if len(in) > 0 {
		j.a.sync()
	}
	return nil
}

// finish checks a final result against the output schema and keeps it.
func (j *job) finish(input json.RawMessage) error {
	var fr FinalResult
	if err := json.Unmarshal(input, &fr); err != nil {
		return tool.Errorf(tool.CodeInvalidInput, "%v", err)
	}
	if j.schema != nil {
		if len(fr.Result) == 0 {
			return &tool.Error{Code: CodeInvalidResult, Message: "the job has an output_schema: give the result that matches it",
				Failures: []tool.FieldFailure{{Path: "/result", Message: "required"}}}
		}
		if err := j.schema.Validate(fr.Result); err != nil {
			te := &tool.Error{Code: CodeInvalidResult, Message: fmt.Sprintf("the result does not match the job's output_schema: %v; fix it and call %s again", err, FinishTool)}
			var ve *jsonschema.ValidationError
			if errors.As(err, &ve) {
				for _, f := range ve.Failures {
					te.Failures = append(te.Failures, tool.FieldFailure{Path: "/result" + f.Path, Message: f.Message})
				}
			}
			return te
		}
	}
	j.mu.Lock()
	j.final = &fr
	j.mu.Unlock()
	return nil
}

// coresRunning counts the running jobs.
func (l *Lane) coresRunning() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.jobs)
}

// runningNames lists the running jobs, sorted.
func (l *Lane) runningNames() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	names := make([]string, 0, len(l.jobs))
	for n := range l.jobs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// lookup finds a running job by name (and id, when given: a token that is
// not the running job's is void), or says why there is none.
func (l *Lane) lookup(name, id string) (*job, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if j, ok := l.jobs[name]; ok && (id == "" || id == j.id) {
		return j, nil
	}
	for _, j := range slices.Backward(l.ended) {
		if j.name == name || id != "" && j.id == id {
			return nil, tool.Errorf(CodeJobEnded, "core job %s (%s) has ended (%s); its id is void: spawn a new job to go on", j.name, j.id, j.state())
		}
	}
	if id != "" {
		return nil, tool.Errorf(CodeJobEnded, "the job id %q is not a running job's; it is void", id)
	}
	return nil, tool.Errorf(CodeUnknownJob, "no core job called %q is running; %s lists them", name, ListTool)
}

// injectJob relays an instruction to a running job.
func (l *Lane) injectJob(name, id, text string) (*job, error) {
	j, err := l.lookup(name, id)
	if err != nil {
		return nil, err
	}
	return j, j.inject(text)
}

// cancelJob cancels a running job and waits until it has ended or ctx ends.
func (l *Lane) cancelJob(ctx context.Context, name, id string, why error) (*job, error) {
	j, err := l.lookup(name, id)
	if err != nil {
		return nil, err
	}
	j.cancel(why)
	select {
	case <-j.done:
		return j, nil
	case <-ctx.Done():
		return j, ctx.Err()
	}
}

// relay delivers a core event to the user, as its job's verbosity says,
// through Config.Report. It runs in the stream's goroutine.
func (l *Lane) relay(ev CoreEvent, verbosity string) {
	if l.cfg.Report == nil || !relayed(ev.Type, verbosity) {
		return
	}
	kind, text := reportText(ev)
	l.cfg.Report(ev.Job, kind, text)
}
