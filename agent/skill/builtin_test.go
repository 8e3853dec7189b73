package skill

import (
	"slices"
	"testing"
)

// TestBuiltins checks that tool-builder and skill-builder ship exactly as
// design §10.3 gives them and pass validation against the tools they use.
func TestBuiltins(t *testing.T) {
	specs, err := Builtins()
	if err != nil {
		t.Fatalf("Builtins() = %v", err)
	}
	knownTool := known("choir.memory.query", "choir.fs.read", "choir.propose.tool", "choir.propose.skill")
	names := make([]string, 0, len(specs))
	for _, spec := range specs {
		names = append(names, spec.Name)
		if err := Validate(spec, knownTool); err != nil {
			t.Errorf("Validate(%s) = %v; want nil", spec.Name, err)
		}
	}
	if want := []string{"skill-builder", "tool-builder"}; !slices.Equal(names, want) {
		t.Fatalf("Builtins() names = %v; want %v", names, want)
	}

	// The machine of §10.3: understand -> design -> validate -> propose -> done,
	// with revise back to understand and fail back to design.
	wantStates := map[string]struct {
		tools       []string
		transitions []Transition
	}{
		"understand": {[]string{"choir.memory.query", "choir.fs.read"}, []Transition{{"complete", "design"}}},
		"design":     {[]string{"choir.memory.query"}, []Transition{{"complete", "validate"}, {"revise", "understand"}}},
		"validate":   {[]string{"choir.memory.query"}, []Transition{{"complete", "propose"}, {"fail", "design"}}},
		"propose":    {nil, []Transition{{"complete", "done"}}},
	}
	for _, spec := range specs {
		propose := map[string]string{"tool-builder": "choir.propose.tool", "skill-builder": "choir.propose.skill"}[spec.Name]
		if spec.InitialState != "understand" || spec.MaxSteps != 15 || !spec.Interruptible || len(spec.States) != 5 {
			t.Errorf("%s: initial %q, max_steps %d, interruptible %v, %d states; want understand, 15, true, 5",
				spec.Name, spec.InitialState, spec.MaxSteps, spec.Interruptible, len(spec.States))
		}
		if done := spec.States["done"]; !done.Terminal {
			t.Errorf("%s: state done = %+v; want terminal", spec.Name, done)
		}
		for name, want := range wantStates {
			st := spec.States[name]
			tools := want.tools
			if name == "propose" {
				tools = []string{propose}
			}
			if !slices.Equal(st.AllowedTools, tools) || !slices.Equal(st.Transitions, want.transitions) || st.Objective == "" {
				t.Errorf("%s: state %s = %+v; want tools %v, transitions %v and an objective", spec.Name, name, st, tools, want.transitions)
			}
		}
	}
}
