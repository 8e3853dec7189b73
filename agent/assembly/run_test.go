package assembly

import (
	"encoding/json"
	"slices"
	"testing"

	"choir/agent/builtin"
	"choir/agent/skill"
	"choir/agent/tool"
	"choir/internal/rpc"
)

// A run session's registry offers the model only the brief's tools, and a
// call of any other tool is refused as unknown.
func TestRunBriefKeepsOnlyItsTools(t *testing.T) {
	full, err := tool.Load(builtin.Tools(builtin.Deps{}), t.TempDir(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"choir.fs.read", "choir.fs.write", "choir.exec"} {
		if !full.Has(n) {
			t.Fatalf("the built-ins have no %s (have %v)", n, full.Names())
		}
	}
	var missing []string
	kept := keepRunTools(full, &rpc.RunBrief{ID: "r-000000000001", Tools: []string{"choir.fs.read", "choir.fs.write", "no.such.tool"}},
		func(m []string) { missing = m })
	if !slices.Equal(missing, []string{"no.such.tool"}) {
		t.Errorf("missing = %v; want [no.such.tool]", missing)
	}
	if got := kept.Names(); !slices.Equal(got, []string{"choir.fs.read", "choir.fs.write"}) {
		t.Errorf("kept tools = %v; want choir.fs.read, choir.fs.write", got)
	}
	for _, lt := range kept.LLMTools(nil) {
		if lt.Name != "choir.fs.read" && lt.Name != "choir.fs.write" {
			t.Errorf("the model is offered %s", lt.Name)
		}
	}
	if _, err := kept.Prepare("choir.exec", json.RawMessage(`{"command":"id"}`)); err == nil {
		t.Error("choir.exec, outside the brief, can be prepared")
	}
	if _, err := kept.Prepare("choir.fs.read", json.RawMessage(`{"path":"a.txt"}`)); err != nil {
		t.Errorf("choir.fs.read, in the brief: %v", err)
	}
	if w := kept.ManifestHash(); w != full.ManifestHash() {
		t.Errorf("manifest hash changed: %s; want the image's %s", w, full.ManifestHash())
	}
	// An empty list keeps nothing.
	if n := keepRunTools(full, &rpc.RunBrief{ID: "r-1"}, nil).Names(); len(n) != 0 {
		t.Errorf("an empty tool list keeps %v", n)
	}
}

// A run session's lanes get no skill registry: choir.skill.start and the
// other control tools are not offered to a run (its tools are its mood's
// profile alone); an interactive session keeps its skills.
func TestRunBriefOffersNoSkills(t *testing.T) {
	reg := &skill.Registry{}
	if got := keepRunSkills(reg, &rpc.RunBrief{ID: "r-000000000001", Tools: []string{"choir.fs.read"}}); got != nil {
		t.Errorf("keepRunSkills(run brief) = %v; want none", got)
	}
	if got := keepRunSkills(reg, nil); got != reg {
		t.Errorf("keepRunSkills(interactive) = %v; want the registry", got)
	}
}
