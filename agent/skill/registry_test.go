package skill

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLoadDir(t *testing.T) {
	r, err := LoadDir(filepath.Join("testdata", "skills"), allTools)
	if err != nil {
		t.Fatalf("LoadDir(testdata/skills) = %v", err)
	}
	want := []string{"build_feature", "skill-builder", "summarize", "tool-builder"}
	if got := r.Names(); !slices.Equal(got, want) {
		t.Errorf("LoadDir(testdata/skills).Names() = %v; want %v (README.txt and drafts/ ignored)", got, want)
	}
	spec, ok := r.Lookup("summarize")
	if !ok || spec.States["read"].Objective != "Read the file the user named." {
		t.Errorf("Lookup(summarize) = %+v, %v; want the parsed skill", spec, ok)
	}
	if _, ok := r.Lookup("missing"); ok {
		t.Errorf("Lookup(missing) found a skill; want none")
	}
	if _, err := r.Start("missing", nil); !errors.Is(err, ErrUnknownSkill) {
		t.Errorf("Start(missing) = %v; want ErrUnknownSkill", err)
	}
	run, err := r.Start("build_feature", []byte(`{"feature":"dark mode"}`))
	if err != nil || run.State() != "understand" {
		t.Errorf("Start(build_feature) = %v, %v; want a run in state understand", run, err)
	}
}

func TestLoadDirEmpty(t *testing.T) {
	r, err := LoadDir(t.TempDir(), allTools)
	if err != nil {
		t.Fatalf("LoadDir(empty) = %v", err)
	}
	if got, want := r.Names(), []string{"skill-builder", "tool-builder"}; !slices.Equal(got, want) {
		t.Errorf("LoadDir(empty).Names() = %v; want %v", got, want)
	}
}

func TestLoadDirMissing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "skills")
	_, err := LoadDir(dir, allTools)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadDir(%s) = %v; want a not-exist error", dir, err)
	}
}

// TestLoadDirBroken loads a directory where every file is wrong in its own
// way and wants one error listing every fault, each naming its file.
func TestLoadDirBroken(t *testing.T) {
	dir := filepath.Join("testdata", "broken")
	_, err := LoadDir(dir, allTools)
	if err == nil {
		t.Fatalf("LoadDir(%s) = nil; want faults", dir)
	}
	if !strings.HasPrefix(err.Error(), "load skills from "+dir+":\n") {
		t.Errorf("LoadDir(%s) = %q; want it to start by naming the directory", dir, err)
	}
	var se *SpecError
	if !errors.As(err, &se) {
		t.Fatalf("LoadDir(%s) error is %T; want it to wrap *SpecError", dir, err)
	}
	checkGolden(t, "broken.golden", se.Error()+"\n")
}

func TestLoadDirUnknownTool(t *testing.T) {
	_, err := LoadDir(filepath.Join("testdata", "skills"), known("choir.memory.query", "choir.fs.read"))
	want := strings.Join([]string{
		`builtin/skill-builder.json: skill "skill-builder": state "propose": allowed tool "choir.propose.skill" is not registered`,
		`builtin/tool-builder.json: skill "tool-builder": state "propose": allowed tool "choir.propose.tool" is not registered`,
		`build_feature.json: skill "build_feature": state "modify": allowed tool "choir.fs.write" is not registered`,
	}, "\n")
	var se *SpecError
	if !errors.As(err, &se) || se.Error() != want {
		t.Errorf("LoadDir(without write and propose tools) = %v; want\n%s", err, want)
	}
}
