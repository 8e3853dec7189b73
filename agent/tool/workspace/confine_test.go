package workspace

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"choir/agent/tool"
)

// confineFixture is a workspace with a directory, a file, and symlinks that
// stay inside, lead outside, dangle, and loop.
func confineFixture(t *testing.T) (ws, outside string) {
	t.Helper()
	ws, outside = t.TempDir(), t.TempDir()
	mkfile(t, ws, "src/a.go", "package a\n")
	mkfile(t, outside, "secret.txt", "top secret\n")
	for link, target := range map[string]string{
		"inlink":        "src",
		"filelink":      "src/a.go",
		"escape":        outside,
		"escape_rel":    "../" + filepath.Base(outside),
		"src/up":        "../..",
		"dangling":      "/nonexistent/choir-test",
		"dangling_in":   "not-yet",
		"loop":          "loop",
		"etc":           "/etc",
		"src/secretref": filepath.Join(outside, "secret.txt"),
	} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	return ws, outside
}

func TestConfine(t *testing.T) {
	ws, _ := confineFixture(t)
	realWS, err := filepath.EvalSymlinks(ws)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		rel     string
		wantRel string // "" when refused
		wantAbs string // relative to the real workspace
	}{
		{rel: "src/a.go", wantRel: "src/a.go", wantAbs: "src/a.go"},
		{rel: "./src//a.go", wantRel: "src/a.go", wantAbs: "src/a.go"},
		{rel: "src/../src/a.go", wantRel: "src/a.go", wantAbs: "src/a.go"},
		{rel: ".", wantRel: ".", wantAbs: ""},
		{rel: "new/dir/file.txt", wantRel: "new/dir/file.txt", wantAbs: "new/dir/file.txt"},
		{rel: "inlink/a.go", wantRel: "inlink/a.go", wantAbs: "src/a.go"},
		{rel: "inlink/new.go", wantRel: "inlink/new.go", wantAbs: "src/new.go"},
		{rel: "filelink", wantRel: "filelink", wantAbs: "src/a.go"},
		{rel: "src/a.go/x", wantRel: "src/a.go/x", wantAbs: "src/a.go/x"}, // fails later: not a directory
		{rel: ""},
		{rel: "/etc/passwd"},
		{rel: "~"},
		{rel: "~/notes.txt"},
		{rel: ".."},
		{rel: "../x"},
		{rel: "src/../../x"},
		{rel: "a\x00b"},
		{rel: "escape"},
		{rel: "escape/secret.txt"},
		{rel: "escape/new.txt"},
		{rel: "escape/new/dir/file"},
		{rel: "escape_rel/secret.txt"},
		{rel: "src/up"},
		{rel: "src/up/etc/passwd"},
		{rel: "etc/passwd"},
		{rel: "src/secretref"},
		{rel: "dangling"},
		{rel: "dangling_in"},
		{rel: "loop"},
	}
	for _, tc := range tests {
		p, err := Confine(ws, tc.rel)
		if tc.wantRel == "" {
			var te *tool.Error
			if !errors.As(err, &te) || te.Code != tool.CodePathRefused || te.Path == "" && tc.rel != "" {
				t.Errorf("Confine(%q) = %+v, %v; want a path_refused error naming the path", tc.rel, p, err)
			}
			continue
		}
		want := Path{Rel: tc.wantRel, Abs: filepath.Join(realWS, tc.wantAbs)}
		if err != nil || p != want {
			t.Errorf("Confine(%q) = %+v, %v; want %+v", tc.rel, p, err, want)
		}
	}
}

// TestFileToolsConfined sends every refused path to every file tool: each
// must refuse with path_refused, naming the path, and touch nothing outside.
func TestFileToolsConfined(t *testing.T) {
	ws, outside := confineFixture(t)
	reg := registry(t, Options{NoRipgrep: true})
	paths := []string{"/etc/passwd", "~/x", "../x", "src/../../x", "escape/secret.txt", "escape/new.txt",
		"etc/passwd", "src/secretref", "dangling", "loop", "a\x00b"}
	for _, p := range paths {
		for _, tc := range []struct{ tool, input string }{
			{"choir.fs.read", `{"path": %s}`},
			{"choir.fs.write", `{"path": %s, "op": "create", "content": "pwned", "overwrite": true}`},
			{"choir.fs.search", `{"path": %s, "pattern": "secret"}`},
		} {
			pj, _ := json.Marshal(p)
			input := strings.Replace(tc.input, "%s", string(pj), 1)
			m := call(t, reg, ws, tc.tool, input)
			if errCode(m) != tool.CodePathRefused {
				t.Errorf("%s %s = %v; want path_refused", tc.tool, input, m)
			}
		}
	}
	if got := readFile(t, filepath.Join(outside, "secret.txt")); got != "top secret\n" {
		t.Errorf("outside file changed to %q", got)
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Error("a file was created outside the workspace")
	}
}

// TestSymlinkFromExecRefused: the model makes a symlink out of the workspace
// with choir.exec, then tries to read and write through it.
func TestSymlinkFromExecRefused(t *testing.T) {
	ws := t.TempDir()
	reg := registry(t, Options{NoRipgrep: true})
	if m := call(t, reg, ws, "choir.exec", `{"command": "ln -s /etc escape && ln -s /etc/hostname host"}`); m["exit_code"] != 0.0 {
		t.Fatalf("ln -s: %v", m)
	}
	for _, tc := range []struct{ tool, input string }{
		{"choir.fs.read", `{"path": "escape/passwd"}`},
		{"choir.fs.read", `{"path": "host"}`},
		{"choir.fs.write", `{"path": "escape/choir-test-pwned", "op": "create", "content": "x"}`},
		{"choir.fs.write", `{"path": "host", "op": "append", "content": "x"}`},
		{"choir.fs.search", `{"path": "escape", "pattern": "root"}`},
	} {
		m := call(t, reg, ws, tc.tool, tc.input)
		e, _ := m["error"].(map[string]any)
		if errCode(m) != tool.CodePathRefused || e["path"] == "" {
			t.Errorf("%s %s = %v; want path_refused naming the path", tc.tool, tc.input, m)
		}
	}
	if _, err := os.Stat("/etc/choir-test-pwned"); err == nil {
		t.Error("/etc/choir-test-pwned was created")
	}
	// A search of the whole workspace does not follow the link either.
	m := call(t, reg, ws, "choir.fs.search", `{"pattern": "root"}`)
	if m["count"] != 0.0 {
		t.Errorf("search of the workspace followed a symlink out: %v", m)
	}
}

func TestLocks(t *testing.T) {
	reg := registry(t, Options{NoRipgrep: true})
	tests := []struct {
		tool, input string
		want        []tool.LockReq
		code        string
	}{
		{"choir.exec", `{"command": "true"}`, []tool.LockReq{{Key: "workspace", Mode: "X"}}, ""},
		{"choir.fs.read", `{"path": "./src//a.go"}`, []tool.LockReq{{Key: "file:src/a.go", Mode: "S"}}, ""},
		{"choir.fs.write", `{"path": "src/x/../b.go", "op": "create", "content": ""}`, []tool.LockReq{{Key: "file:src/b.go", Mode: "X"}}, ""},
		{"choir.fs.search", `{"path": "src/", "pattern": "x"}`, []tool.LockReq{{Key: "file:src", Mode: "S"}}, ""},
		{"choir.fs.search", `{"pattern": "x"}`, []tool.LockReq{{Key: "workspace", Mode: "S"}}, ""},
		{"choir.fs.search", `{"path": ".", "pattern": "x"}`, []tool.LockReq{{Key: "workspace", Mode: "S"}}, ""},
		{"choir.fs.write", `{"path": ".choirtmp/send/voice.ogg", "op": "create", "content": ""}`, []tool.LockReq{{Key: "choirtmp", Mode: "X"}}, ""},
		{"choir.fs.read", `{"path": "../etc/passwd"}`, nil, tool.CodePathRefused},
		{"choir.fs.read", `{"path": "/etc/passwd"}`, nil, tool.CodePathRefused},
	}
	for _, tc := range tests {
		c, err := reg.Prepare(tc.tool, json.RawMessage(tc.input))
		if tc.code != "" {
			var te *tool.Error
			if !errors.As(err, &te) || te.Code != tc.code {
				t.Errorf("Prepare(%s, %s) = %v; want code %s", tc.tool, tc.input, err, tc.code)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(c.Locks, tc.want) {
			t.Errorf("Prepare(%s, %s) locks = %v, %v; want %v", tc.tool, tc.input, c, err, tc.want)
		}
	}
}
