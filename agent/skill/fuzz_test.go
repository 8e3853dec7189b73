package skill

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"choir/internal/jsonlimit"
	"choir/testkit"
)

// maxFuzzSpec caps one fuzz input: a real skill file is a few KiB, and the
// cap keeps every execution fast.
const maxFuzzSpec = 64 << 10

var fuzzIdentifier = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)

// FuzzParseSpec feeds arbitrary bytes to Parse and what it accepts to
// Validate, asserting what the package promises rather than only that
// nothing panics:
//
//   - a refusal is a *SpecError with at least one fault, each naming the
//     file and saying something; Validate's faults name the skill;
//   - an accepted file is valid UTF-8 nested at most
//     jsonlimit.DefaultMaxDepth levels;
//   - an accepted spec survives json.Marshal and Parse unchanged, and
//     validates the same way after the round trip;
//   - a spec Validate accepts is checked again by an independent reading of
//     the rules (names, max_steps within the schema's bound, states, tools,
//     reachability both ways), and a run of it follows the shortest path from
//     the initial state to a terminal state, through a snapshot and restore.
func FuzzParseSpec(f *testing.F) {
	for _, dir := range []string{"builtin", "testdata/skills"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		for _, file := range files {
			if data, err := os.ReadFile(file); err == nil {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzSpec {
			return
		}
		const file = "fuzz.json"
		spec, err := Parse(file, data)
		if err != nil {
			if spec != nil {
				t.Fatalf("Parse returned a spec with error %v", err)
			}
			checkFaults(t, err, func(fl Fault) bool { return fl.File == file })
			return
		}
		if !utf8.Valid(data) || testkit.JSONNesting(data) > jsonlimit.DefaultMaxDepth {
			t.Fatalf("Parse accepted %q: invalid UTF-8 or nested %d deep", data, testkit.JSONNesting(data))
		}
		out, err := json.Marshal(spec)
		if err != nil {
			t.Fatalf("Marshal(accepted spec) = %v", err)
		}
		spec2, err := Parse(file, out)
		if err != nil {
			t.Fatalf("Parse(Marshal(Parse(%q))) = %v; an accepted spec must survive a round trip", data, err)
		}
		if out2, _ := json.Marshal(spec2); !bytes.Equal(out, out2) {
			t.Fatalf("round trip changed the spec:\n%s\n%s", out, out2)
		}
		verr := Validate(spec, allTools)
		if again := Validate(spec2, allTools); errString(again) != errString(verr) {
			t.Fatalf("Validate differs after a round trip:\n%v\n%v", verr, again)
		}
		if verr != nil {
			checkFaults(t, verr, func(fl Fault) bool {
				_, known := spec.States[fl.State]
				return fl.Skill == spec.Name && (fl.State == "" || known)
			})
			return
		}
		checkMachine(t, spec)
		runShortestPath(t, spec)
	})
}

// checkFaults asserts err is a *SpecError whose faults all say something and
// pass ok.
func checkFaults(t *testing.T, err error, ok func(Fault) bool) {
	t.Helper()
	var se *SpecError
	if !errors.As(err, &se) || len(se.Faults) == 0 {
		t.Fatalf("error %v (%T) is not a *SpecError with faults", err, err)
	}
	for _, fl := range se.Faults {
		if strings.TrimSpace(fl.Message) == "" || !ok(fl) {
			t.Fatalf("fault %+v: wrong file, skill or state, or no message", fl)
		}
	}
}

// checkMachine re-reads the rules Validate documents, on a spec it accepted.
func checkMachine(t *testing.T, spec *Spec) {
	t.Helper()
	if !fuzzIdentifier.MatchString(spec.Name) || strings.TrimSpace(spec.Description) == "" ||
		spec.MaxSteps < 1 || spec.MaxSteps > 1000000 {
		t.Fatalf("Validate accepted name %q, description %q, max_steps %d", spec.Name, spec.Description, spec.MaxSteps)
	}
	if _, ok := spec.States[spec.InitialState]; !ok {
		t.Fatalf("Validate accepted initial_state %q that is not a state", spec.InitialState)
	}
	terminals := 0
	for name, st := range spec.States {
		if !fuzzIdentifier.MatchString(name) {
			t.Fatalf("Validate accepted the state name %q", name)
		}
		if st.Terminal {
			terminals++
			if len(st.Transitions)+len(st.AllowedTools) > 0 {
				t.Fatalf("Validate accepted terminal state %q with transitions or tools", name)
			}
			continue
		}
		if strings.TrimSpace(st.Objective) == "" || len(st.Transitions) == 0 {
			t.Fatalf("Validate accepted state %q without an objective or transitions", name)
		}
		for _, tool := range st.AllowedTools {
			if !allTools(tool) || strings.HasPrefix(tool, ControlToolPrefix) {
				t.Fatalf("Validate accepted the tool %q in state %q", tool, name)
			}
		}
		for _, tr := range st.Transitions {
			if _, ok := spec.States[tr.To]; !ok || !fuzzIdentifier.MatchString(tr.On) {
				t.Fatalf("Validate accepted the transition %+v in state %q", tr, name)
			}
		}
	}
	if terminals == 0 {
		t.Fatal("Validate accepted a skill without a terminal state")
	}
	for name := range spec.States {
		if shortestPath(spec, spec.InitialState, name) == nil {
			t.Fatalf("Validate accepted state %q, unreachable from %q", name, spec.InitialState)
		}
		if shortestPath(spec, name, "") == nil {
			t.Fatalf("Validate accepted state %q, from which no terminal state can be reached", name)
		}
	}
}

// shortestPath returns the events leading from one state to another (to ""
// means any terminal state) in the fewest transitions, nil when none does,
// and an empty non-nil slice when from is already there.
func shortestPath(spec *Spec, from, to string) []string {
	arrived := func(s string) bool { return s == to || to == "" && spec.States[s].Terminal }
	path := map[string][]string{from: {}}
	queue := []string{from}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if arrived(s) {
			return path[s]
		}
		for _, tr := range spec.States[s].Transitions {
			if _, seen := path[tr.To]; !seen {
				path[tr.To] = append(append([]string{}, path[s]...), tr.On)
				queue = append(queue, tr.To)
			}
		}
	}
	return nil
}

// runShortestPath starts a run of a valid spec and takes it to a terminal
// state, restoring it from a snapshot after the first transition.
func runShortestPath(t *testing.T, spec *Spec) {
	t.Helper()
	r, err := NewRun(spec, nil)
	if err != nil {
		if len(spec.InputSchema) > 0 {
			return // the input schema refuses a missing input: that is its right
		}
		t.Fatalf("NewRun(valid spec without input_schema) = %v", err)
	}
	for i, on := range shortestPath(spec, spec.InitialState, "") {
		if err := r.Step(); err != nil {
			return // max_steps is shorter than the path: the run failed, as documented
		}
		from := r.State()
		to, err := r.Transition(on)
		if err != nil {
			t.Fatalf("Transition(%q) from %q = %v; the spec defines it", on, from, err)
		}
		if i == 0 {
			// The snapshot travels as JSON in working memory.
			raw, err := json.Marshal(r.Snapshot())
			if err != nil {
				t.Fatalf("Marshal(Snapshot()) = %v", err)
			}
			var snap Snapshot
			if err := json.Unmarshal(raw, &snap); err != nil {
				t.Fatalf("Unmarshal(%s) = %v", raw, err)
			}
			if r, err = Restore(spec, snap); err != nil {
				t.Fatalf("Restore(Snapshot()) in state %q = %v", to, err)
			}
			if r.State() != to {
				t.Fatalf("restored run is in %q; want %q", r.State(), to)
			}
		}
	}
	if !spec.States[r.State()].Terminal {
		t.Fatalf("the shortest path ended in %q, which is not terminal", r.State())
	}
	if len(spec.OutputSchema) == 0 && r.Status() != StatusDone {
		t.Fatalf("run in terminal state %q without output_schema has status %s; want done", r.State(), r.Status())
	}
}
