package skill

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"choir/internal/jsonschema"
)

// Fault is one thing wrong with a skill: a file that does not parse, or a
// machine that is ill-formed.
type Fault struct {
	File    string // the file the skill came from, if any
	Skill   string // the skill's name, once known
	State   string // the state at fault, "" for the skill as a whole
	Path    string // JSON pointer inside File, for parse faults
	Message string
}

// String renders the fault as `file: skill "x": state "y": /path: message`,
// leaving out the parts it does not have.
func (f Fault) String() string {
	var parts []string
	if f.File != "" {
		parts = append(parts, f.File)
	}
	if f.Skill != "" {
		parts = append(parts, fmt.Sprintf("skill %q", f.Skill))
	}
	if f.State != "" {
		parts = append(parts, fmt.Sprintf("state %q", f.State))
	}
	if f.Path != "" {
		parts = append(parts, f.Path)
	}
	return strings.Join(append(parts, f.Message), ": ")
}

// SpecError lists every fault found in one skill or, from LoadDir, in a whole
// directory. Its message has one fault per line.
type SpecError struct {
	Faults []Fault
}

func (e *SpecError) Error() string {
	lines := make([]string, len(e.Faults))
	for i, f := range e.Faults {
		lines[i] = f.String()
	}
	return strings.Join(lines, "\n")
}

// ControlToolPrefix begins the names of the engine's own tools
// (choir.skill.transition, choir.skill.finish). They are offered by the
// engine, never listed in allowed_tools.
const ControlToolPrefix = "choir.skill."

// maxNameLen bounds skill, state and event names.
const maxNameLen = 64

var identifier = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

func isIdentifier(s string) bool { return len(s) <= maxNameLen && identifier.MatchString(s) }

const identifierRule = "lowercase letters, digits, '-' and '_', starting with a letter, at most 64 characters"

// Validate checks that spec is a well-formed machine and returns a
// *SpecError listing every fault, each naming the skill and the state:
//
//   - the name is a safe identifier, the description is set, max_steps > 0;
//   - input_schema and output_schema, when present, compile;
//   - initial_state names a state, and at least one state is terminal;
//   - terminal states have no transitions and no allowed tools;
//   - other states have an objective and at least one transition, no event
//     twice, and every transition targets an existing state;
//   - every allowed tool is registered (knownTool; nil skips this check) and
//     none is one of the engine's own choir.skill.* tools;
//   - every state is reachable from the initial state, and every reachable
//     state can still reach a terminal state.
func Validate(spec *Spec, knownTool func(name string) bool) error {
	if spec == nil {
		return &SpecError{Faults: []Fault{{Message: "no skill given"}}}
	}
	if faults := validate(spec, knownTool); len(faults) > 0 {
		return &SpecError{Faults: faults}
	}
	return nil
}

func validate(spec *Spec, knownTool func(string) bool) []Fault {
	var faults []Fault
	fail := func(state, format string, args ...any) {
		faults = append(faults, Fault{Skill: spec.Name, State: state, Message: fmt.Sprintf(format, args...)})
	}

	if !isIdentifier(spec.Name) {
		fail("", "name %q is not a safe identifier (%s)", spec.Name, identifierRule)
	}
	if strings.TrimSpace(spec.Description) == "" {
		fail("", "description is empty; it is what the model reads to choose the skill")
	}
	if spec.MaxSteps <= 0 {
		fail("", "max_steps is %d; it must be greater than 0", spec.MaxSteps)
	}
	for _, s := range []struct {
		field string
		raw   []byte
	}{{"input_schema", spec.InputSchema}, {"output_schema", spec.OutputSchema}} {
		if len(s.raw) == 0 {
			continue
		}
		if _, err := jsonschema.Compile(s.raw); err != nil {
			fail("", "%s: %v", s.field, err)
		}
	}
	if len(spec.States) == 0 {
		fail("", "states is empty")
		return faults
	}
	if _, ok := spec.States[spec.InitialState]; !ok {
		fail("", "initial_state %q is not a state (states: %s)", spec.InitialState, strings.Join(stateNames(spec), ", "))
	}

	terminals := 0
	for _, name := range stateNames(spec) {
		st := spec.States[name]
		if !isIdentifier(name) {
			fail(name, "state name is not a safe identifier (%s)", identifierRule)
		}
		if st.Terminal {
			terminals++
			if len(st.Transitions) > 0 {
				events := make([]string, len(st.Transitions))
				for i, tr := range st.Transitions {
					events[i] = tr.On
				}
				fail(name, "terminal state has transitions (%s); a terminal state has none", strings.Join(events, ", "))
			}
			if len(st.AllowedTools) > 0 {
				fail(name, "terminal state allows tools (%s); a terminal state allows none", strings.Join(st.AllowedTools, ", "))
			}
		} else {
			if strings.TrimSpace(st.Objective) == "" {
				fail(name, "objective is empty; it is all the model sees of this state")
			}
			if len(st.Transitions) == 0 {
				fail(name, "state has no transitions and is not terminal")
			}
		}
		seenTool := make(map[string]bool, len(st.AllowedTools))
		for _, tool := range st.AllowedTools {
			switch {
			case seenTool[tool]:
				fail(name, "allowed tool %q is listed twice", tool)
			case strings.HasPrefix(tool, ControlToolPrefix):
				fail(name, "allowed tool %q is the skill engine's own; the engine offers it, do not list it", tool)
			case knownTool != nil && !knownTool(tool):
				fail(name, "allowed tool %q is not registered", tool)
			}
			seenTool[tool] = true
		}
		seenOn := make(map[string]bool, len(st.Transitions))
		for _, tr := range st.Transitions {
			if !isIdentifier(tr.On) {
				fail(name, "transition event %q is not a safe identifier (%s)", tr.On, identifierRule)
			}
			if seenOn[tr.On] {
				fail(name, "transition event %q is defined twice", tr.On)
			}
			seenOn[tr.On] = true
			if _, ok := spec.States[tr.To]; !ok {
				fail(name, "transition %q targets unknown state %q", tr.On, tr.To)
			}
		}
	}
	if terminals == 0 {
		fail("", "no state is terminal; a skill must be able to end")
	}
	if _, ok := spec.States[spec.InitialState]; ok {
		faults = append(faults, reachability(spec)...)
	}
	// Faults of the whole skill first, then state by state in name order.
	sort.SliceStable(faults, func(i, j int) bool { return faults[i].State < faults[j].State })
	return faults
}

// reachability reports states the initial state cannot reach, and reachable
// states from which no terminal state can be reached.
func reachability(spec *Spec) []Fault {
	reached := map[string]bool{spec.InitialState: true}
	queue := []string{spec.InitialState}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		for _, tr := range spec.States[name].Transitions {
			if _, ok := spec.States[tr.To]; ok && !reached[tr.To] {
				reached[tr.To] = true
				queue = append(queue, tr.To)
			}
		}
	}
	// A state can finish if it is terminal or leads to one that can.
	canFinish := make(map[string]bool, len(spec.States))
	for changed := true; changed; {
		changed = false
		for name, st := range spec.States {
			if canFinish[name] {
				continue
			}
			ok := st.Terminal
			for _, tr := range st.Transitions {
				ok = ok || canFinish[tr.To]
			}
			if ok {
				canFinish[name] = true
				changed = true
			}
		}
	}
	var faults []Fault
	for _, name := range stateNames(spec) {
		switch {
		case !reached[name]:
			faults = append(faults, Fault{Skill: spec.Name, State: name,
				Message: fmt.Sprintf("state is unreachable from initial state %q", spec.InitialState)})
		case !canFinish[name] && len(spec.States[name].Transitions) > 0:
			// (A non-terminal state without transitions is reported above.)
			faults = append(faults, Fault{Skill: spec.Name, State: name,
				Message: "no terminal state can be reached from this state"})
		}
	}
	return faults
}

// stateNames returns the spec's state names in sorted order, so that faults
// and messages come out the same every time.
func stateNames(spec *Spec) []string {
	names := make([]string, 0, len(spec.States))
	for name := range spec.States {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
