package skill

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func startBuildFeature(t *testing.T) *Run {
	t.Helper()
	r, err := NewRun(readSpec(t, "skills/build_feature.json"), json.RawMessage(`{"feature":"dark mode"}`))
	if err != nil {
		t.Fatalf("NewRun(build_feature) = %v", err)
	}
	return r
}

// TestRunAllStates walks build_feature through every state and every
// transition, as a lane would: a step, a tool call, an event.
func TestRunAllStates(t *testing.T) {
	r := startBuildFeature(t)
	path := []struct {
		state     string
		objective string
		tools     []string
		events    []string
		tool      string
		on        string
	}{
		{"understand", "Clarify and restate the requirement.", []string{"choir.memory.query"}, []string{"complete"}, "choir.memory.query", "complete"},
		{"plan", "Produce an implementation plan.", []string{"choir.memory.query"}, []string{"complete", "revise"}, "", "revise"},
		{"understand", "Clarify and restate the requirement.", []string{"choir.memory.query"}, []string{"complete"}, "", "complete"},
		{"plan", "Produce an implementation plan.", []string{"choir.memory.query"}, []string{"complete", "revise"}, "choir.memory.query", "complete"},
		{"modify", "Apply changes to files.", []string{"choir.fs.read", "choir.fs.write"}, []string{"complete"}, "choir.fs.write", "complete"},
		{"validate", "Verify correctness.", []string{"choir.fs.read"}, []string{"complete", "fail"}, "choir.fs.read", "fail"},
		{"modify", "Apply changes to files.", []string{"choir.fs.read", "choir.fs.write"}, []string{"complete"}, "choir.fs.read", "complete"},
		{"validate", "Verify correctness.", []string{"choir.fs.read"}, []string{"complete", "fail"}, "", "complete"},
	}
	for i, p := range path {
		if err := r.Step(); err != nil {
			t.Fatalf("step %d: Step() = %v", i, err)
		}
		if got := r.State(); got != p.state {
			t.Fatalf("step %d: State() = %q; want %q", i, got, p.state)
		}
		if got := r.Objective(); got != p.objective {
			t.Errorf("step %d: Objective() = %q; want %q", i, got, p.objective)
		}
		if got := r.AllowedTools(); !slices.Equal(got, p.tools) {
			t.Errorf("step %d: AllowedTools() = %v; want %v", i, got, p.tools)
		}
		if got := r.Transitions(); !slices.Equal(got, p.events) {
			t.Errorf("step %d: Transitions() = %v; want %v", i, got, p.events)
		}
		if p.tool != "" {
			if err := r.CheckTool(p.tool); err != nil {
				t.Errorf("step %d: CheckTool(%s) = %v; want nil", i, p.tool, err)
			}
		}
		want := ""
		if i+1 < len(path) {
			want = path[i+1].state
		} else {
			want = "done"
		}
		if got, err := r.Transition(p.on); got != want || err != nil {
			t.Fatalf("step %d: Transition(%s) = %q, %v; want %q, nil", i, p.on, got, err, want)
		}
	}

	// In done, build_feature owes its output: the run waits for finish.
	if got := r.Status(); got != StatusRunning {
		t.Fatalf("in done with an output_schema: Status() = %q; want running", got)
	}
	if got := r.Objective(); got != finishObjective {
		t.Errorf("in done: Objective() = %q; want %q", got, finishObjective)
	}
	if got := r.AllowedTools(); len(got) != 0 || got == nil {
		t.Errorf("in done: AllowedTools() = %#v; want empty, not nil", got)
	}
	if err := r.Step(); err != nil {
		t.Fatalf("finish step: Step() = %v", err)
	}
	out := json.RawMessage(`{"summary":"added dark mode","files":["ui/theme.go"]}`)
	if err := r.Finish(out); err != nil {
		t.Fatalf("Finish(%s) = %v", out, err)
	}
	if r.Status() != StatusDone || !r.Ended() || string(r.Output()) != string(out) || r.Steps() != 9 {
		t.Errorf("after Finish: status %q, ended %v, output %s, steps %d; want done, true, %s, 9",
			r.Status(), r.Ended(), r.Output(), r.Steps(), out)
	}
	if err := r.Step(); !errors.Is(err, ErrEnded) {
		t.Errorf("Step() after done = %v; want ErrEnded", err)
	}
	if r.Tools() != nil || r.Objective() != "" {
		t.Errorf("after done: Tools() = %v, Objective() = %q; want none", r.Tools(), r.Objective())
	}
}

func TestRunTerminalWithoutOutputIsDone(t *testing.T) {
	r, err := NewRun(readSpec(t, "skills/summarize.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Transition("complete"); got != "done" || err != nil {
		t.Fatalf("Transition(complete) = %q, %v; want done, nil", got, err)
	}
	if r.Status() != StatusDone {
		t.Errorf("Status() = %q; want done", r.Status())
	}
	if err := r.Finish(json.RawMessage(`{}`)); !errors.Is(err, ErrEnded) {
		t.Errorf("Finish after done = %v; want ErrEnded", err)
	}
}

func TestForbiddenTool(t *testing.T) {
	r := startBuildFeature(t)
	if _, err := r.Transition("complete"); err != nil {
		t.Fatal(err)
	}
	err := r.CheckTool("choir.fs.write")
	var v *Violation
	if !errors.As(err, &v) {
		t.Fatalf("CheckTool(choir.fs.write) in plan = %v; want *Violation", err)
	}
	got, _ := json.Marshal(v)
	want := `{"kind":"forbidden_tool","error":"tool \"choir.fs.write\" is not allowed in this state","skill":"build_feature",` +
		`"state":"plan","allowed_tools":["choir.memory.query"],"valid_transitions":["complete","revise"],"retries_left":1}`
	if string(got) != want {
		t.Errorf("CheckTool(choir.fs.write) in plan marshals to\n%s\nwant\n%s", got, want)
	}
	if want := `skill "build_feature", state "plan": tool "choir.fs.write" is not allowed in this state`; v.Error() != want {
		t.Errorf("Violation.Error() = %q; want %q", v.Error(), want)
	}
	if r.State() != "plan" || r.Status() != StatusRunning {
		t.Errorf("after a violation: state %q, status %q; want plan, running", r.State(), r.Status())
	}
}

func TestInvalidTransition(t *testing.T) {
	r := startBuildFeature(t)
	got, err := r.Transition("revise")
	var v *Violation
	if got != "" || !errors.As(err, &v) {
		t.Fatalf("Transition(revise) in understand = %q, %v; want a *Violation", got, err)
	}
	want := Violation{Kind: KindInvalidTransition, Message: `"revise" is not a valid transition from this state`,
		Skill: "build_feature", State: "understand", AllowedTools: []string{"choir.memory.query"},
		ValidTransitions: []string{"complete"}, RetriesLeft: 1}
	if v.Kind != want.Kind || v.Message != want.Message || v.State != want.State || v.RetriesLeft != want.RetriesLeft ||
		!slices.Equal(v.AllowedTools, want.AllowedTools) || !slices.Equal(v.ValidTransitions, want.ValidTransitions) {
		t.Errorf("Transition(revise) violation = %+v; want %+v", *v, want)
	}
	// The model cannot jump to a state by naming it either.
	if _, err := r.Transition("done"); !errors.As(err, &v) || v.Kind != KindInvalidTransition {
		t.Errorf("Transition(done) = %v; want an invalid transition", err)
	}
}

func TestRetriesExhausted(t *testing.T) {
	r := startBuildFeature(t)
	for i, wantLeft := range []int{1, 0} {
		var v *Violation
		if err := r.CheckTool("choir.exec"); !errors.As(err, &v) || v.RetriesLeft != wantLeft || v.SkillFailed {
			t.Fatalf("violation %d = %v; want retries_left %d, skill still running", i+1, err, wantLeft)
		}
	}
	_, err := r.Transition("skip")
	var v *Violation
	if !errors.As(err, &v) || !v.SkillFailed || !errors.Is(err, ErrRetriesExhausted) {
		t.Fatalf("third violation = %v; want a violation that fails the skill", err)
	}
	raw, _ := json.Marshal(v)
	if !strings.Contains(string(raw), `"retries_left":0,"skill_failed":true`) {
		t.Errorf("third violation marshals to %s; want retries_left 0 and skill_failed true", raw)
	}
	if r.Status() != StatusFailed {
		t.Errorf("Status() = %q; want failed", r.Status())
	}
	wantReason := `retry budget of 2 exhausted in state "understand": "skip" is not a valid transition from this state`
	if r.Reason() != wantReason {
		t.Errorf("Reason() = %q; want %q", r.Reason(), wantReason)
	}
	if err := r.CheckTool("choir.memory.query"); !errors.Is(err, ErrEnded) {
		t.Errorf("CheckTool after failure = %v; want ErrEnded", err)
	}
	if r.Tools() != nil || len(r.AllowedTools()) != 0 || len(r.Transitions()) != 0 {
		t.Errorf("after failure the run still offers tools %v, %v, %v", r.Tools(), r.AllowedTools(), r.Transitions())
	}
}

// TestRetriesRefill: the budget bounds violations in a row; an accepted
// proposal ends the correction loop.
func TestRetriesRefill(t *testing.T) {
	r := startBuildFeature(t)
	for round := range 3 {
		for range DefaultRetryBudget {
			if err := r.CheckTool("choir.exec"); err == nil {
				t.Fatal("CheckTool(choir.exec) = nil; want a violation")
			}
		}
		if err := r.CheckTool("choir.memory.query"); err != nil {
			t.Fatalf("round %d: CheckTool(choir.memory.query) = %v; want nil", round, err)
		}
	}
	if r.Status() != StatusRunning {
		t.Errorf("Status() = %q after corrected violations; want running", r.Status())
	}
}

func TestMaxSteps(t *testing.T) {
	r, err := NewRun(readSpec(t, "skills/summarize.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := r.Step(); err != nil {
			t.Fatalf("Step() %d of max_steps 5 = %v", i+1, err)
		}
	}
	err = r.Step()
	if !errors.Is(err, ErrStepBudget) {
		t.Fatalf("Step() 6 of max_steps 5 = %v; want ErrStepBudget", err)
	}
	if r.Status() != StatusFailed || r.Reason() != `max_steps 5 exceeded in state "read"` || r.Steps() != 5 {
		t.Errorf("after max_steps: status %q, reason %q, steps %d; want failed, max_steps 5 exceeded, 5", r.Status(), r.Reason(), r.Steps())
	}
	if _, err := r.Transition("complete"); !errors.Is(err, ErrEnded) {
		t.Errorf("Transition after max_steps = %v; want ErrEnded", err)
	}
}

func TestFinishViolations(t *testing.T) {
	r := startBuildFeature(t)
	var v *Violation
	if err := r.Finish(json.RawMessage(`{"summary":"early"}`)); !errors.As(err, &v) || v.Kind != KindFinishNotTerminal {
		t.Fatalf("Finish in understand = %v; want finish_not_terminal", err)
	}
	for _, on := range []string{"complete", "complete", "complete", "complete"} {
		if _, err := r.Transition(on); err != nil {
			t.Fatal(err)
		}
	}
	err := r.Finish(json.RawMessage(`{"files":[1]}`))
	if !errors.As(err, &v) || v.Kind != KindInvalidOutput || v.State != "done" {
		t.Fatalf("Finish(bad output) = %v; want invalid_output in done", err)
	}
	want := "output does not match the skill's output_schema: /summary: required property missing; /files/0: want string, got number"
	if v.Message != want {
		t.Errorf("Finish(bad output) message = %q; want %q", v.Message, want)
	}
	if err := r.Finish(json.RawMessage(`{"summary":"ok"}`)); err != nil || r.Status() != StatusDone {
		t.Errorf("Finish(good output) = %v, status %q; want nil, done", err, r.Status())
	}
}

func TestCancel(t *testing.T) {
	r := startBuildFeature(t)
	if err := r.Cancel("user asked"); err != nil || r.Status() != StatusCancelled || r.Reason() != "user asked" {
		t.Errorf("Cancel(interruptible) = %v, status %q, reason %q; want nil, cancelled, user asked", err, r.Status(), r.Reason())
	}
	spec := readSpec(t, "skills/summarize.json") // interruptible absent: false
	r, err := NewRun(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Cancel("user asked"); !errors.Is(err, ErrNotInterruptible) || r.Status() != StatusRunning {
		t.Errorf("Cancel(not interruptible) = %v, status %q; want ErrNotInterruptible, running", err, r.Status())
	}
}

func TestNewRunRefuses(t *testing.T) {
	spec := readSpec(t, "skills/build_feature.json")
	for _, tt := range []struct {
		input string
		want  string
	}{
		{``, `skill "build_feature": input does not match input_schema: /: want object, got null`},
		{`{"feature":""}`, `skill "build_feature": input does not match input_schema: /feature: length 0 is less than minLength 1`},
		{`{"feature":"x","color":"red"}`, `skill "build_feature": input does not match input_schema: /color: unknown property`},
	} {
		if _, err := NewRun(spec, json.RawMessage(tt.input)); errString(err) != tt.want {
			t.Errorf("NewRun(build_feature, %s) = %v; want %s", tt.input, err, tt.want)
		}
	}
	spec.InitialState = "nowhere"
	if _, err := NewRun(spec, json.RawMessage(`{"feature":"x"}`)); err == nil || !strings.Contains(err.Error(), `initial_state "nowhere" is not a state`) {
		t.Errorf("NewRun(invalid machine) = %v; want the validation fault", err)
	}
}

func TestSetContext(t *testing.T) {
	r := startBuildFeature(t)
	ctx := json.RawMessage(`{"plan":["a","b"]}`)
	if err := r.SetContext(ctx); err != nil || string(r.Context()) != string(ctx) {
		t.Errorf("SetContext(%s) = %v, Context() = %s; want nil, the same", ctx, err, r.Context())
	}
	for _, bad := range []string{`"free text"`, `[1]`, `null`, `{`} {
		if err := r.SetContext(json.RawMessage(bad)); err == nil {
			t.Errorf("SetContext(%s) = nil; want an error: context must be a JSON object", bad)
		}
	}
}

// TestRunConcurrentUse: the lane reads the run while the arbiter checks
// proposals against it; under -race this must be clean.
func TestRunConcurrentUse(t *testing.T) {
	r := startBuildFeature(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			_ = r.CheckTool("choir.memory.query")
			_ = r.Snapshot()
		}
	}()
	for range 100 {
		_ = r.Objective()
		_ = r.Tools()
		_ = r.AllowedTools()
	}
	<-done
	if r.Status() != StatusRunning {
		t.Errorf("Status() = %q; want running", r.Status())
	}
}
