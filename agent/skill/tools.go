package skill

import (
	"encoding/json"
	"fmt"
)

// The engine's own tools, which a lane offers the model alongside the current
// state's allowed tools while a skill runs.
const (
	TransitionTool = ControlToolPrefix + "transition"
	FinishTool     = ControlToolPrefix + "finish"
)

// ToolDef is the LLM view of a tool (design §8.3): what a lane sends the
// model API. It carries no runtime metadata: the engine's tools take no locks
// and are handled by the lane, which passes their arguments to Transition or
// Finish.
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// TransitionArgs are the arguments of choir.skill.transition.
type TransitionArgs struct {
	On string `json:"on"`
}

// FinishArgs are the arguments of choir.skill.finish.
type FinishArgs struct {
	Output json.RawMessage `json:"output"`
}

// Tools returns the engine tools valid now: choir.skill.transition with the
// current events as its "on" enum in a non-terminal state, choir.skill.finish
// with the skill's output_schema in a terminal state that owes an output, and
// none once the run has ended.
func (r *Run) Tools() []ToolDef {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status != StatusRunning {
		return nil
	}
	if r.spec.States[r.state].Terminal {
		return []ToolDef{finishDef(r.spec.OutputSchema)}
	}
	return []ToolDef{transitionDef(r.transitions())}
}

func transitionDef(events []string) ToolDef {
	params := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"on": map[string]any{
				"type":        "string",
				"enum":        events,
				"description": "The event that ends the current step.",
			},
		},
		"required":             []string{"on"},
		"additionalProperties": false,
	}
	return ToolDef{
		Name: TransitionTool,
		Description: "Leave the current step of the skill once its objective is met, by naming one of the " +
			"step's events. Only the listed events are valid.",
		Parameters: mustMarshal(params),
	}
}

func finishDef(outputSchema json.RawMessage) ToolDef {
	params := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"output": outputSchema,
		},
		"required":             []string{"output"},
		"additionalProperties": false,
	}
	return ToolDef{
		Name:        FinishTool,
		Description: "Finish the skill with its output, which must match the skill's output schema.",
		Parameters:  mustMarshal(params),
	}
}

// mustMarshal marshals values built above from maps, strings and valid raw
// JSON, which cannot fail.
func mustMarshal(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("skill: marshal tool parameters: %v", err))
	}
	return raw
}
