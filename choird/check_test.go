package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckReportsTheBoundary: `choird --check` lists every problem of a
// home whose files would open the boundary (each with its file, field and
// the fix), exits 1, and touches nothing; the fixed home passes.
func TestCheckReportsTheBoundary(t *testing.T) {
	t.Setenv("DOCKER_HOST", "")
	home := filepath.Join(t.TempDir(), ".choir.d")
	os.Mkdir(home, 0o700)
	example, err := os.ReadFile("../internal/config/testdata/example.json")
	if err != nil {
		t.Fatal(err)
	}
	secrets, _ := os.ReadFile("../internal/config/testdata/example-secrets.json")
	var m map[string]any
	json.Unmarshal(example, &m)
	base := t.TempDir()
	ws := m["workspaces"].(map[string]any)
	ws["main-ws"].(map[string]any)["path"] = home
	ws["scratch"].(map[string]any)["path"] = filepath.Join(base, "scratch") + "/"
	data, _ := json.MarshalIndent(m, "", "  ")
	os.WriteFile(filepath.Join(home, "config.json"), data, 0o666)
	os.Chmod(filepath.Join(home, "config.json"), 0o666)
	os.WriteFile(filepath.Join(home, "secrets.json"), secrets, 0o644)
	os.Chmod(filepath.Join(home, "secrets.json"), 0o644)

	entries := func() []string {
		var out []string
		filepath.WalkDir(filepath.Dir(home), func(p string, d os.DirEntry, err error) error {
			fi, _ := os.Lstat(p)
			out = append(out, p+" "+fi.Mode().String())
			return nil
		})
		return out
	}
	before := entries()
	var stdout, stderr bytes.Buffer
	if code := check(options{home: home}, &stdout, &stderr); code != 1 {
		t.Fatalf("check = %d; want 1\n%s", code, stderr.String())
	}
	out := stderr.String()
	for _, want := range []string{
		"choird: " + home + " is invalid:",
		"config.json: " + home + "/config.json has mode 0666",
		"run `chmod go-w " + home + "/config.json`",
		"secrets.json: " + home + "/secrets.json has mode 0644",
		"run `chmod 600 " + home + "/secrets.json`",
		`config.json: workspaces.main-ws.path = "` + home + `": is the choir home ` + home,
		`config.json: workspaces.scratch.path = "` + base + `/scratch/": not in canonical form: write it as "` + base + `/scratch"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("choird --check printed:\n%s\nwant it to contain %q", out, want)
		}
	}
	if strings.Contains(out, "sk-or-example") {
		t.Error("choird --check printed a secret value")
	}
	if after := entries(); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("choird --check changed the home:\nbefore %v\nafter  %v", before, after)
	}

	// Fixed as the messages say, the home passes.
	os.Chmod(filepath.Join(home, "config.json"), 0o644)
	os.Chmod(filepath.Join(home, "secrets.json"), 0o600)
	ws["main-ws"].(map[string]any)["path"] = filepath.Join(base, "main")
	ws["scratch"].(map[string]any)["path"] = filepath.Join(base, "scratch")
	data, _ = json.MarshalIndent(m, "", "  ")
	os.WriteFile(filepath.Join(home, "config.json"), data, 0o644)
	stdout.Reset()
	stderr.Reset()
	if code := check(options{home: home}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "are valid") {
		t.Fatalf("check after the fixes = %d\n%s%s", code, stdout.String(), stderr.String())
	}
}
