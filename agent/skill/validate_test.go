package skill

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestValidateSample(t *testing.T) {
	for _, name := range []string{"skills/build_feature.json", "skills/summarize.json"} {
		if err := Validate(readSpec(t, name), allTools); err != nil {
			t.Errorf("Validate(%s) = %v; want nil", name, err)
		}
	}
}

// TestValidateFaults breaks build_feature one way at a time and wants the
// specific fault, naming the skill and the state.
func TestValidateFaults(t *testing.T) {
	const rule = "(lowercase letters, digits, '-' and '_', starting with a letter, at most 64 characters)"
	tests := []struct {
		name   string
		break_ func(s *Spec)
		want   string
	}{
		{"unsafe name", func(s *Spec) { s.Name = "Build Feature" },
			`skill "Build Feature": name "Build Feature" is not a safe identifier ` + rule},
		{"name with path", func(s *Spec) { s.Name = "../etc" },
			`skill "../etc": name "../etc" is not a safe identifier ` + rule},
		{"empty description", func(s *Spec) { s.Description = " " },
			`skill "build_feature": description is empty; it is what the model reads to choose the skill`},
		{"max_steps zero", func(s *Spec) { s.MaxSteps = 0 },
			`skill "build_feature": max_steps is 0; it must be greater than 0`},
		{"max_steps negative", func(s *Spec) { s.MaxSteps = -3 },
			`skill "build_feature": max_steps is -3; it must be greater than 0`},
		{"input schema does not compile", func(s *Spec) { s.InputSchema = json.RawMessage(`{"type":"object","pattern":"x"}`) },
			`skill "build_feature": input_schema: invalid JSON schema: /pattern: unsupported keyword "pattern" ` +
				`(choir supports type, properties, required, enum, items, additionalProperties, minimum, maximum, minLength, maxLength, description, title, default)`},
		{"output schema malformed", func(s *Spec) { s.OutputSchema = json.RawMessage(`{"type":"text"}`) },
			`skill "build_feature": output_schema: invalid JSON schema: /type: unknown type "text" (want one of string, number, integer, boolean, object, array, null)`},
		{"no states", func(s *Spec) { s.States = nil },
			`skill "build_feature": states is empty`},
		{"initial state missing", func(s *Spec) { s.InitialState = "start" },
			`skill "build_feature": initial_state "start" is not a state (states: done, modify, plan, understand, validate)`},
		{"transition to unknown state", func(s *Spec) { s.States["validate"].Transitions[1].To = "modfy" },
			`skill "build_feature": state "validate": transition "fail" targets unknown state "modfy"`},
		{"terminal with transitions", func(s *Spec) {
			s.States["done"] = State{Terminal: true, Transitions: []Transition{{On: "again", To: "understand"}}}
		}, `skill "build_feature": state "done": terminal state has transitions (again); a terminal state has none`},
		{"terminal with tools", func(s *Spec) {
			s.States["done"] = State{Terminal: true, AllowedTools: []string{"choir.fs.read"}}
		}, `skill "build_feature": state "done": terminal state allows tools (choir.fs.read); a terminal state allows none`},
		{"dead end", func(s *Spec) {
			addTransition(s, "validate", "block", "stuck")
			s.States["stuck"] = State{Objective: "Wait.", AllowedTools: []string{"choir.fs.read"}}
		}, `skill "build_feature": state "stuck": state has no transitions and is not terminal`},
		{"no objective", func(s *Spec) { setObjective(s, "plan", "") },
			`skill "build_feature": state "plan": objective is empty; it is all the model sees of this state`},
		{"unreachable state", func(s *Spec) {
			s.States["orphan"] = State{Objective: "Never run.", Transitions: []Transition{{On: "complete", To: "done"}}}
		}, `skill "build_feature": state "orphan": state is unreachable from initial state "understand"`},
		{"loop without exit", func(s *Spec) {
			addTransition(s, "plan", "spin", "spin")
			s.States["spin"] = State{Objective: "Spin.", Transitions: []Transition{{On: "again", To: "spin"}}}
		}, `skill "build_feature": state "spin": no terminal state can be reached from this state`},
		{"unregistered tool", func(s *Spec) { s.States["modify"].AllowedTools[1] = "choir.fs.wrte" },
			`skill "build_feature": state "modify": allowed tool "choir.fs.wrte" is not registered`},
		{"tool listed twice", func(s *Spec) { s.States["modify"].AllowedTools[1] = "choir.fs.read" },
			`skill "build_feature": state "modify": allowed tool "choir.fs.read" is listed twice`},
		{"engine tool listed", func(s *Spec) { s.States["plan"].AllowedTools[0] = TransitionTool },
			`skill "build_feature": state "plan": allowed tool "choir.skill.transition" is the skill engine's own; the engine offers it, do not list it`},
		{"duplicate event", func(s *Spec) { s.States["plan"].Transitions[1].On = "complete" },
			`skill "build_feature": state "plan": transition event "complete" is defined twice`},
		{"unsafe event", func(s *Spec) { s.States["plan"].Transitions[1].On = "Revise!" },
			`skill "build_feature": state "plan": transition event "Revise!" is not a safe identifier ` + rule},
		{"unsafe state name", func(s *Spec) {
			s.States["Done State"] = State{Terminal: true}
			delete(s.States, "done")
			s.States["validate"].Transitions[0].To = "Done State"
		}, `skill "build_feature": state "Done State": state name is not a safe identifier ` + rule},
		{"no terminal state, every fault at once", func(s *Spec) {
			s.States["done"] = State{Objective: "Rest."}
		}, `skill "build_feature": no state is terminal; a skill must be able to end` + "\n" +
			`skill "build_feature": state "done": state has no transitions and is not terminal` + "\n" +
			`skill "build_feature": state "modify": no terminal state can be reached from this state` + "\n" +
			`skill "build_feature": state "plan": no terminal state can be reached from this state` + "\n" +
			`skill "build_feature": state "understand": no terminal state can be reached from this state` + "\n" +
			`skill "build_feature": state "validate": no terminal state can be reached from this state`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := readSpec(t, "skills/build_feature.json")
			tt.break_(spec)
			err := Validate(spec, allTools)
			if got := errString(err); got != tt.want {
				t.Errorf("Validate(%s) =\n%s\nwant\n%s", tt.name, got, tt.want)
			}
			var se *SpecError
			if !errors.As(err, &se) {
				t.Errorf("Validate(%s) error is %T; want *SpecError", tt.name, err)
			}
		})
	}
}

func addTransition(s *Spec, state, on, to string) {
	st := s.States[state]
	st.Transitions = append(st.Transitions, Transition{On: on, To: to})
	s.States[state] = st
}

func setObjective(s *Spec, state, objective string) {
	st := s.States[state]
	st.Objective = objective
	s.States[state] = st
}

func TestValidateNilKnownToolSkipsTools(t *testing.T) {
	spec := readSpec(t, "skills/build_feature.json")
	spec.States["modify"].AllowedTools[1] = "choir.anything"
	if err := Validate(spec, nil); err != nil {
		t.Errorf("Validate(spec, nil) = %v; want nil", err)
	}
	if err := Validate(spec, known()); err == nil {
		t.Errorf("Validate(spec, known()) = nil; want unregistered tool faults")
	}
}
