package skill

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestSnapshotRoundTrip(t *testing.T) {
	r := startBuildFeature(t)
	for _, on := range []string{"complete", "complete"} {
		if err := r.Step(); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Transition(on); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Step(); err != nil {
		t.Fatal(err)
	}
	_ = r.CheckTool("choir.exec") // one violation: retries 1
	if err := r.SetContext(json.RawMessage(`{"plan":"edit theme.go"}`)); err != nil {
		t.Fatal(err)
	}

	snap := r.Snapshot()
	raw, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"skill":"build_feature","state":"modify","status":"running","steps":3,"retries":1,` +
		`"input":{"feature":"dark mode"},"context":{"plan":"edit theme.go"}}`
	if string(raw) != want {
		t.Errorf("json.Marshal(Snapshot()) =\n%s\nwant\n%s", raw, want)
	}
	var back Snapshot
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	restored, err := Restore(r.Spec(), back)
	if err != nil {
		t.Fatalf("Restore(%s) = %v", raw, err)
	}
	if got := restored.Snapshot(); !reflect.DeepEqual(got, snap) {
		t.Errorf("Restore(snapshot).Snapshot() = %+v; want %+v", got, snap)
	}
	// The restored run carries on where the old one stood, budget included.
	_ = restored.CheckTool("choir.exec")
	if err := restored.CheckTool("choir.exec"); !strings.Contains(errString(err), "skill failed") {
		t.Errorf("third violation after restore = %v; want the skill to fail", err)
	}
}

func TestRestoreRefuses(t *testing.T) {
	spec := readSpec(t, "skills/build_feature.json")
	good := Snapshot{Skill: "build_feature", State: "plan", Status: StatusRunning, Steps: 2}
	if _, err := Restore(spec, good); err != nil {
		t.Fatalf("Restore(%+v) = %v", good, err)
	}
	tests := []struct {
		name string
		edit func(s *Snapshot)
		want string
	}{
		{"other skill", func(s *Snapshot) { s.Skill = "summarize" }, `snapshot is of skill "summarize"`},
		{"state gone", func(s *Snapshot) { s.State = "review" }, `state "review" no longer exists`},
		{"unknown status", func(s *Snapshot) { s.Status = "paused" }, `unknown status "paused"`},
		{"done outside terminal", func(s *Snapshot) { s.Status = StatusDone }, `status done in non-terminal state "plan"`},
		{"steps beyond budget", func(s *Snapshot) { s.Steps = 21 }, `steps 21 outside 0..max_steps 20`},
		{"negative retries", func(s *Snapshot) { s.Retries = -1 }, `retries -1 outside 0..3`},
		{"bad context", func(s *Snapshot) { s.Context = json.RawMessage(`"text"`) }, `context: want a JSON object`},
		{"bad input", func(s *Snapshot) { s.Input = json.RawMessage(`{`) }, `input is not valid JSON`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := good
			tt.edit(&s)
			_, err := Restore(spec, s)
			if !strings.Contains(errString(err), tt.want) || !strings.HasPrefix(errString(err), `restore skill "build_feature": `) {
				t.Errorf("Restore(%+v) = %v; want %q", s, err, tt.want)
			}
		})
	}
}

func TestRegistryRestore(t *testing.T) {
	r, err := LoadDir(t.TempDir(), allTools)
	if err != nil {
		t.Fatal(err)
	}
	run, err := r.Restore(Snapshot{Skill: "tool-builder", State: "propose", Status: StatusRunning, Steps: 7})
	if err != nil || run.State() != "propose" || run.Steps() != 7 {
		t.Fatalf("Restore(tool-builder at propose) = %v, %v; want the run at propose after 7 steps", run, err)
	}
	if _, err := run.Transition("complete"); err != nil || run.Status() != StatusDone {
		t.Errorf("Transition(complete) from propose = %v, status %q; want nil, done", err, run.Status())
	}
	if _, err := r.Restore(Snapshot{Skill: "gone"}); err == nil {
		t.Errorf("Restore(unknown skill) = nil; want an error")
	}
}
