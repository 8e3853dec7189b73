package skill

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"choir/internal/jsonschema"
)

// DefaultRetryBudget is how many invalid proposals in a row a run tolerates
// before the skill fails (design §10.2: "default: 2 retries").
const DefaultRetryBudget = 2

// MaxRetryBudget bounds SetRetryBudget (and a restored snapshot's budget).
const MaxRetryBudget = 100

// Status is where a run stands.
type Status string

const (
	StatusRunning   Status = "running"
	StatusDone      Status = "done"      // a terminal state was reached (and its output accepted)
	StatusFailed    Status = "failed"    // retry budget or max_steps exhausted
	StatusCancelled Status = "cancelled" // Cancel on an interruptible skill
)

// Run is one execution of a skill inside a lane. The lane owns it; its
// methods are safe to call from the lane and the arbiter concurrently.
type Run struct {
	mu     sync.Mutex
	spec   *Spec
	output *jsonschema.Schema // nil: the skill declares no output

	state   string
	status  Status
	reason  string
	steps   int
	retries int // consecutive rejected proposals
	budget  int // rejections in a row tolerated (SetRetryBudget)
	input   json.RawMessage
	context json.RawMessage
	result  json.RawMessage
}

// NewRun starts spec in its initial state. spec must pass Validate (tools
// aside, which LoadDir has checked); input must match its input_schema when
// it has one, and is kept as given otherwise.
func NewRun(spec *Spec, input json.RawMessage) (*Run, error) {
	r, err := newRun(spec)
	if err != nil {
		return nil, err
	}
	if len(spec.InputSchema) > 0 {
		in, err := jsonschema.Compile(spec.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("skill %q: input_schema: %w", spec.Name, err)
		}
		raw := input
		if len(raw) == 0 {
			raw = json.RawMessage("null")
		}
		if err := in.Validate(raw); err != nil {
			return nil, fmt.Errorf("skill %q: input does not match input_schema: %w", spec.Name, err)
		}
	}
	r.input = clone(input)
	r.enter(spec.InitialState)
	return r, nil
}

// newRun checks spec and compiles its output schema; the run has no state yet.
func newRun(spec *Spec) (*Run, error) {
	if err := Validate(spec, nil); err != nil {
		return nil, fmt.Errorf("skill %q is not a valid machine:\n%w", spec.Name, err)
	}
	r := &Run{spec: spec, status: StatusRunning, budget: DefaultRetryBudget}
	if len(spec.OutputSchema) > 0 {
		out, err := jsonschema.Compile(spec.OutputSchema)
		if err != nil {
			return nil, fmt.Errorf("skill %q: output_schema: %w", spec.Name, err)
		}
		r.output = out
	}
	return r, nil
}

// enter moves to state; a terminal state ends the run unless an output is
// still owed.
func (r *Run) enter(state string) {
	r.state = state
	r.retries = 0
	if r.spec.States[state].Terminal && r.output == nil {
		r.status = StatusDone
	}
}

// SetRetryBudget sets how many invalid proposals in a row the run
// tolerates before it fails (per_step_skill_retries); 0 fails it at the
// first. A negative n is ignored, one above MaxRetryBudget is taken as
// MaxRetryBudget. The budget applies from the next rejection on.
func (r *Run) SetRetryBudget(n int) {
	if n < 0 {
		return
	}
	n = min(n, MaxRetryBudget)
	r.mu.Lock()
	r.budget = n
	r.mu.Unlock()
}

// Skill returns the skill's name.
func (r *Run) Skill() string { return r.spec.Name }

// Spec returns the skill the run executes. It must not be modified.
func (r *Run) Spec() *Spec { return r.spec }

// State returns the current state's name.
func (r *Run) State() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state
}

// Status returns where the run stands, and Reason why it failed or was
// cancelled.
func (r *Run) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

// Reason explains a failed or cancelled run; it is empty otherwise.
func (r *Run) Reason() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reason
}

// Ended reports whether the run is over: done, failed or cancelled.
func (r *Run) Ended() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status != StatusRunning
}

// Steps returns how many LLM steps the run has taken.
func (r *Run) Steps() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.steps
}

// finishObjective is the objective of a terminal state that owes an output
// and names none.
const finishObjective = "The skill is complete. Call " + FinishTool + " with the skill's output."

// Objective returns what the model should accomplish in the current state,
// the only part of the skill it sees; "" once the run has ended.
func (r *Run) Objective() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status != StatusRunning {
		return ""
	}
	st := r.spec.States[r.state]
	if st.Objective == "" && st.Terminal {
		return finishObjective
	}
	return st.Objective
}

// AllowedTools returns the tools the model may call in the current state
// (never nil; empty once the run has ended).
func (r *Run) AllowedTools() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.allowedTools()
}

func (r *Run) allowedTools() []string {
	if r.status != StatusRunning {
		return []string{}
	}
	return append([]string{}, r.spec.States[r.state].AllowedTools...)
}

// Transitions returns the events valid in the current state, in the order the
// skill lists them (never nil; empty once the run has ended).
func (r *Run) Transitions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.transitions()
}

func (r *Run) transitions() []string {
	events := []string{}
	if r.status != StatusRunning {
		return events
	}
	for _, tr := range r.spec.States[r.state].Transitions {
		events = append(events, tr.On)
	}
	return events
}

// Step counts one LLM step; the lane calls it before each model call. The step
// that would exceed max_steps is refused: the run fails and the error wraps
// ErrStepBudget.
func (r *Run) Step() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status != StatusRunning {
		return r.ended()
	}
	if r.steps >= r.spec.MaxSteps {
		r.status = StatusFailed
		r.reason = fmt.Sprintf("max_steps %d exceeded in state %q", r.spec.MaxSteps, r.state)
		return fmt.Errorf("skill %q: %w: %d steps taken, in state %q", r.spec.Name, ErrStepBudget, r.steps, r.state)
	}
	r.steps++
	return nil
}

// CheckTool accepts a tool call the current state allows, and otherwise
// returns a *Violation (KindForbiddenTool) that draws on the retry budget.
func (r *Run) CheckTool(name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status != StatusRunning {
		return r.ended()
	}
	if slices.Contains(r.spec.States[r.state].AllowedTools, name) {
		r.retries = 0
		return nil
	}
	return r.violate(KindForbiddenTool, fmt.Sprintf("tool %q is not allowed in this state", name))
}

// Transition applies the event on and returns the new state. An event the
// current state does not define returns a *Violation
// (KindInvalidTransition) that draws on the retry budget.
func (r *Run) Transition(on string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status != StatusRunning {
		return "", r.ended()
	}
	for _, tr := range r.spec.States[r.state].Transitions {
		if tr.On == on {
			r.enter(tr.To)
			return tr.To, nil
		}
	}
	return "", r.violate(KindInvalidTransition, fmt.Sprintf("%q is not a valid transition from this state", on))
}

// Finish ends the run with output, which must match output_schema. It is
// valid only in a terminal state of a skill that declares an output_schema
// (other terminal states end the run on entry); elsewhere it returns a
// *Violation drawing on the retry budget, as does an output that does not
// match.
func (r *Run) Finish(output json.RawMessage) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status != StatusRunning {
		return r.ended()
	}
	if !r.spec.States[r.state].Terminal {
		return r.violate(KindFinishNotTerminal, "finish is only valid in a terminal state; propose one of the valid transitions")
	}
	raw := output
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	if err := r.output.Validate(raw); err != nil {
		return r.violate(KindInvalidOutput, "output does not match the skill's output_schema: "+err.Error())
	}
	r.result = clone(raw)
	r.status = StatusDone
	r.retries = 0
	return nil
}

// Cancel ends an interruptible skill; a skill that is not interruptible
// returns ErrNotInterruptible and keeps running.
func (r *Run) Cancel(reason string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status != StatusRunning {
		return r.ended()
	}
	if !r.spec.Interruptible {
		return fmt.Errorf("cancel skill %q: %w", r.spec.Name, ErrNotInterruptible)
	}
	r.status = StatusCancelled
	r.reason = reason
	return nil
}

// Input returns the input the run was started with.
func (r *Run) Input() json.RawMessage { return clone(r.input) }

// Output returns the output Finish accepted, or nil.
func (r *Run) Output() json.RawMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return clone(r.result)
}

// Context returns the run's local context: the structured step context the
// lane keeps for the skill (design §10.2), or nil.
func (r *Run) Context() json.RawMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return clone(r.context)
}

// SetContext replaces the local context. It must be a JSON object: step
// context is structured, not accumulated free text. The engine stores and
// snapshots it without interpreting it.
func (r *Run) SetContext(ctx json.RawMessage) error {
	if err := checkObject(ctx); err != nil {
		return fmt.Errorf("skill %q: context: %w", r.spec.Name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.context = clone(ctx)
	return nil
}

// violate records a rejected proposal and builds the violation for the model;
// the rejection beyond the budget fails the run.
func (r *Run) violate(kind Kind, msg string) *Violation {
	r.retries++
	v := &Violation{
		Kind:             kind,
		Message:          msg,
		Skill:            r.spec.Name,
		State:            r.state,
		AllowedTools:     r.allowedTools(),
		ValidTransitions: r.transitions(),
		RetriesLeft:      max(r.budget-r.retries, 0),
	}
	if r.retries > r.budget {
		r.status = StatusFailed
		r.reason = fmt.Sprintf("retry budget of %d exhausted in state %q: %s", r.budget, r.state, msg)
		v.SkillFailed = true
	}
	return v
}

func (r *Run) ended() error {
	if r.reason != "" {
		return fmt.Errorf("skill %q is %s (%s): %w", r.spec.Name, r.status, r.reason, ErrEnded)
	}
	return fmt.Errorf("skill %q is %s: %w", r.spec.Name, r.status, ErrEnded)
}

func clone(raw json.RawMessage) json.RawMessage {
	if raw == nil {
		return nil
	}
	return append(json.RawMessage{}, raw...)
}

// checkObject accepts nil or a JSON object.
func checkObject(raw json.RawMessage) error {
	if raw == nil {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return fmt.Errorf("want a JSON object, got %.40q", raw)
	}
	return nil
}
