package skill

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden files")

// known returns a knownTool callback that knows exactly names.
func known(names ...string) func(string) bool {
	return func(name string) bool { return slices.Contains(names, name) }
}

// allTools knows every tool the test skills use.
var allTools = known("choir.memory.query", "choir.fs.read", "choir.fs.write", "choir.propose.tool", "choir.propose.skill")

// readSpec parses a file under testdata.
func readSpec(t *testing.T, name string) *Spec {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := Parse(filepath.Base(name), data)
	if err != nil {
		t.Fatalf("Parse(%s) = %v", name, err)
	}
	return spec
}

// checkGolden compares got with testdata/name, or rewrites it under -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run with -update if intended):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
