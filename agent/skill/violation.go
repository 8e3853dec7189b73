package skill

import (
	"errors"
	"fmt"
)

// Errors for the states of a run. A *Violation that ended the run unwraps
// to ErrRetriesExhausted.
var (
	ErrUnknownSkill     = errors.New("no such skill")
	ErrEnded            = errors.New("the skill run has already ended")
	ErrStepBudget       = errors.New("max_steps exceeded")
	ErrRetriesExhausted = errors.New("retry budget exhausted")
	ErrNotInterruptible = errors.New("the skill is not interruptible")
)

// Kind classifies a violation.
type Kind string

const (
	// KindForbiddenTool: the tool is not in the current state's allowed_tools.
	KindForbiddenTool Kind = "forbidden_tool"
	// KindInvalidTransition: the event is not a transition of the current state.
	KindInvalidTransition Kind = "invalid_transition"
	// KindFinishNotTerminal: finish was proposed outside a terminal state.
	KindFinishNotTerminal Kind = "finish_not_terminal"
	// KindInvalidOutput: the finish output does not match output_schema.
	KindInvalidOutput Kind = "invalid_output"
)

// Violation is the structured error the model receives when it proposes
// something the current state does not allow (design §10.2): what was wrong,
// where the run stands, and what it may do instead. It marshals to the JSON
// the lane returns to the model as the tool result.
type Violation struct {
	Kind    Kind   `json:"kind"`
	Message string `json:"error"`
	Skill   string `json:"skill"`
	State   string `json:"state"`
	// AllowedTools and ValidTransitions are the current state's; they are
	// never null in JSON.
	AllowedTools     []string `json:"allowed_tools"`
	ValidTransitions []string `json:"valid_transitions"`
	// RetriesLeft is how many more invalid proposals in a row the run
	// tolerates.
	RetriesLeft int `json:"retries_left"`
	// SkillFailed reports that this violation exhausted the retry budget and
	// ended the run.
	SkillFailed bool `json:"skill_failed,omitempty"`
}

func (v *Violation) Error() string {
	s := fmt.Sprintf("skill %q, state %q: %s", v.Skill, v.State, v.Message)
	if v.SkillFailed {
		s += " (" + ErrRetriesExhausted.Error() + ", skill failed)"
	}
	return s
}

// Unwrap lets errors.Is(err, ErrRetriesExhausted) find a violation that ended
// the run.
func (v *Violation) Unwrap() error {
	if v.SkillFailed {
		return ErrRetriesExhausted
	}
	return nil
}
