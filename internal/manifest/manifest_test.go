package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func dirsHash(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	write(t, root, files)
	h, err := Dirs(filepath.Join(root, "global"), filepath.Join(root, "agent"))
	if err != nil {
		t.Fatalf("Dirs() = %v", err)
	}
	return h
}

// Dirs hashes what a /choir tree holds as the build hashes its manifests:
// formatting and other files do not count; every manifest added, removed,
// changed or overridden does, and so does a file that is not JSON.
func TestDirsHashesWhatTheTreeHolds(t *testing.T) {
	a, b := `{"llm":{"name":"a"},"runtime":{"x":1}}`, `{"llm":{"name":"b"}}`
	base := map[string]string{"global/a.json": a, "global/a": "#!/bin/sh\n", "agent/b.json": b}
	want := Hash([][]byte{mustCanon(t, a), mustCanon(t, b)})
	if got := dirsHash(t, base); got != want {
		t.Fatalf("Dirs(tree) = %s; want Hash of the canonical manifests in name order %s", got, want)
	}
	same := map[string]string{
		"reformatted":         "global/a.json",
		"an executable added": "agent/tool-binary",
		"a subdirectory":      "agent/sub/c.json",
	}
	for name, path := range same {
		t.Run("same/"+name, func(t *testing.T) {
			files := clone(base)
			if name == "reformatted" {
				files[path] = "{\n  \"runtime\": {\"x\": 1},\n  \"llm\": {\"name\": \"a\"}\n}\n"
			} else {
				files[path] = "{}"
			}
			if got := dirsHash(t, files); got != want {
				t.Errorf("Dirs with %s = %s; want unchanged %s", name, got, want)
			}
		})
	}
	differ := map[string]func(map[string]string){
		"a manifest added":        func(f map[string]string) { f["agent/c.json"] = `{"llm":{"name":"c"}}` },
		"a manifest changed":      func(f map[string]string) { f["global/a.json"] = `{"llm":{"name":"a"},"runtime":{"x":2}}` },
		"a manifest removed":      func(f map[string]string) { delete(f, "agent/b.json") },
		"a global one overridden": func(f map[string]string) { f["agent/a.json"] = `{"llm":{"name":"a"},"runtime":{"x":3}}` },
		"not JSON":                func(f map[string]string) { f["agent/c.json"] = "not json" },
		"two JSON values":         func(f map[string]string) { f["global/a.json"] = a + a },
		"empty file":              func(f map[string]string) { f["agent/c.json"] = "" },
		"huge file":               func(f map[string]string) { f["agent/c.json"] = strings.Repeat(" ", MaxFileBytes+10) + "{}" },
	}
	for name, edit := range differ {
		t.Run("differs/"+name, func(t *testing.T) {
			files := clone(base)
			edit(files)
			if got := dirsHash(t, files); got == want {
				t.Errorf("Dirs with %s = %s, the hash of the tree without it", name, got)
			}
		})
	}
}

func TestDirsOfNothing(t *testing.T) {
	got, err := Dirs(filepath.Join(t.TempDir(), "missing"))
	if err != nil || got != Hash(nil) {
		t.Errorf("Dirs(missing) = %s, %v; want Hash(nil) %s", got, err, Hash(nil))
	}
}

func mustCanon(t *testing.T, s string) []byte {
	t.Helper()
	c, err := Canonical([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func clone(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
