package skill

import (
	"encoding/json"
	"fmt"
)

// Snapshot is a run's skill_state in the working-memory snapshot (design
// §13.4): enough to resume the run after a crash at the last
// host-acknowledged revision.
type Snapshot struct {
	Skill   string `json:"skill"`
	State   string `json:"state"`
	Status  Status `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Steps   int    `json:"steps"`
	Retries int    `json:"retries"`
	// RetryBudget is the run's budget (SetRetryBudget); absent means
	// DefaultRetryBudget.
	RetryBudget *int            `json:"retry_budget,omitempty"`
	Input       json.RawMessage `json:"input,omitempty"`
	Context     json.RawMessage `json:"context,omitempty"`
	Output      json.RawMessage `json:"output,omitempty"`
}

// Snapshot captures the run.
func (r *Run) Snapshot() Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	var budget *int // the default's is left out
	if r.budget != DefaultRetryBudget {
		b := r.budget
		budget = &b
	}
	return Snapshot{
		Skill:       r.spec.Name,
		State:       r.state,
		Status:      r.status,
		Reason:      r.reason,
		Steps:       r.steps,
		Retries:     r.retries,
		RetryBudget: budget,
		Input:       clone(r.input),
		Context:     clone(r.context),
		Output:      clone(r.result),
	}
}

// Restore rebuilds a run of spec from a snapshot. It refuses a snapshot that
// spec cannot have produced (another skill, an unknown state, counters out of
// range, a status the state contradicts): the skill may have changed with an
// image update since the snapshot was taken.
func Restore(spec *Spec, s Snapshot) (*Run, error) {
	r, err := newRun(spec)
	if err != nil {
		return nil, err
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("restore skill %q: %s", spec.Name, fmt.Sprintf(format, args...))
	}
	if s.Skill != spec.Name {
		return nil, fail("snapshot is of skill %q", s.Skill)
	}
	st, ok := spec.States[s.State]
	if !ok {
		return nil, fail("state %q no longer exists", s.State)
	}
	switch s.Status {
	case StatusRunning:
		if st.Terminal && r.output == nil {
			return nil, fail("status running in terminal state %q", s.State)
		}
	case StatusDone:
		if !st.Terminal {
			return nil, fail("status done in non-terminal state %q", s.State)
		}
	case StatusFailed, StatusCancelled:
	default:
		return nil, fail("unknown status %q", s.Status)
	}
	if s.Steps < 0 || s.Steps > spec.MaxSteps {
		return nil, fail("steps %d outside 0..max_steps %d", s.Steps, spec.MaxSteps)
	}
	if s.RetryBudget != nil {
		if *s.RetryBudget < 0 || *s.RetryBudget > MaxRetryBudget {
			return nil, fail("retry_budget %d outside 0..%d", *s.RetryBudget, MaxRetryBudget)
		}
		r.budget = *s.RetryBudget
	}
	if s.Retries < 0 || s.Retries > r.budget+1 {
		return nil, fail("retries %d outside 0..%d", s.Retries, r.budget+1)
	}
	for _, raw := range []struct {
		field string
		value json.RawMessage
	}{{"input", s.Input}, {"output", s.Output}} {
		if raw.value != nil && !json.Valid(raw.value) {
			return nil, fail("%s is not valid JSON", raw.field)
		}
	}
	if err := checkObject(s.Context); err != nil {
		return nil, fail("context: %v", err)
	}
	r.state = s.State
	r.status = s.Status
	r.reason = s.Reason
	r.steps = s.Steps
	r.retries = s.Retries
	r.input = clone(s.Input)
	r.context = clone(s.Context)
	r.result = clone(s.Output)
	return r, nil
}
