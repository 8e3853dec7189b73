package tool

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadFaults(t *testing.T) {
	builtin := &fakeBuiltin{name: "choir.fs.read"}
	tests := []struct {
		name  string
		setup func(t *testing.T, global, agent string)
		// want are substrings of the fault lines: each must appear, with
		// the file it names.
		want []string
	}{
		{
			name: "invalid JSON",
			setup: func(t *testing.T, g, _ string) {
				writeTool(t, g, "broken", "{\"llm\": {\n  \"name\": }", okScript, 0o755)
			},
			want: []string{"broken.json: invalid JSON at line 2, column 11"},
		},
		{
			name: "empty file",
			setup: func(t *testing.T, g, _ string) {
				writeTool(t, g, "empty", "", okScript, 0o755)
			},
			want: []string{"empty.json: invalid JSON: the file is empty or truncated"},
		},
		{
			name: "unknown field",
			setup: func(t *testing.T, g, _ string) {
				writeTool(t, g, "typo", manifest("acme.typo", `"nework": true`), okScript, 0o755)
			},
			want: []string{"typo.json: /runtime/nework: unknown property"},
		},
		{
			name: "unknown top-level field",
			setup: func(t *testing.T, g, _ string) {
				m := strings.Replace(manifest("acme.top", ""), `"llm"`, `"extra": 1, "llm"`, 1)
				writeTool(t, g, "top", m, okScript, 0o755)
			},
			want: []string{"top.json: /extra: unknown property"},
		},
		{
			name: "bad schema keyword",
			setup: func(t *testing.T, g, _ string) {
				m := strings.Replace(manifest("acme.pat", ""), `{"type": "string"}`, `{"type": "string", "pattern": "^a"}`, 1)
				writeTool(t, g, "pat", m, okScript, 0o755)
			},
			want: []string{`pat.json: /llm/input_schema/properties/q/pattern: unsupported keyword "pattern"`},
		},
		{
			name: "schema not an object schema",
			setup: func(t *testing.T, g, _ string) {
				m := strings.Replace(manifest("acme.arr", ""), `"type": "object", "properties"`, `"type": "array", "properties"`, 1)
				writeTool(t, g, "arr", m, okScript, 0o755)
			},
			want: []string{`arr.json: /llm/input_schema/type: the parameters schema must have "type": "object"`},
		},
		{
			name: "missing side_effect and bad values",
			setup: func(t *testing.T, g, _ string) {
				m := `{"llm": {"name": "acme.x", "description": "d", "input_schema": {"type": "object"}},
				       "runtime": {"timeout_ms": 0, "locks": [{"resource": "workspace", "mode": "W"}], "exposure": "all"}}`
				writeTool(t, g, "x", m, okScript, 0o755)
			},
			want: []string{
				"x.json: /runtime/side_effect: required property missing",
				"x.json: /runtime/timeout_ms: 0 is less than minimum 1",
				`x.json: /runtime/locks/0/mode: "W" is not one of ["S","X"]`,
				`x.json: /runtime/exposure: "all" is not one of`,
			},
		},
		{
			name: "bad lock key",
			setup: func(t *testing.T, g, _ string) {
				writeTool(t, g, "lk", manifest("acme.lk", `"locks": [{"resource": "file:../etc", "mode": "S"}, {"resource": "disk", "mode": "X"}]`), okScript, 0o755)
			},
			want: []string{
				`lk.json: /runtime/locks/0/resource: lock key "file:../etc": the path leaves the workspace`,
				`lk.json: /runtime/locks/1/resource: unknown lock key "disk"`,
			},
		},
		{
			name: "missing executable",
			setup: func(t *testing.T, g, _ string) {
				writeTool(t, g, "noexec", manifest("acme.noexec", ""), "", 0)
			},
			want: []string{"noexec.json: executable " + "GLOBAL/noexec does not exist"},
		},
		{
			name: "missing exec_path target",
			setup: func(t *testing.T, g, _ string) {
				writeTool(t, g, "ep", manifest("acme.ep", `"exec_path": "bin/ep"`), "", 0)
			},
			want: []string{"ep.json: /runtime/exec_path: executable GLOBAL/bin/ep does not exist"},
		},
		{
			name: "not executable",
			setup: func(t *testing.T, g, _ string) {
				writeTool(t, g, "plain", manifest("acme.plain", ""), okScript, 0o644)
			},
			want: []string{"plain.json: GLOBAL/plain is not executable (mode -rw-r--r--); chmod +x it"},
		},
		{
			name: "executable is a directory",
			setup: func(t *testing.T, g, _ string) {
				writeTool(t, g, "dir", manifest("acme.dir", ""), "", 0)
				if err := os.Mkdir(filepath.Join(g, "dir"), 0o755); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"dir.json: executable GLOBAL/dir is not a regular file"},
		},
		{
			name: "bad names",
			setup: func(t *testing.T, g, _ string) {
				writeTool(t, g, "a", manifest("NoDots", ""), okScript, 0o755)
				writeTool(t, g, "b", manifest("acme.Upper", ""), okScript, 0o755)
				writeTool(t, g, "c", manifest("acme..x", ""), okScript, 0o755)
				writeTool(t, g, "d", manifest("choir.skill.transition", ""), okScript, 0o755)
			},
			want: []string{
				`a.json: /llm/name: "NoDots" is not a canonical tool name`,
				`b.json: /llm/name: "acme.Upper" is not a canonical tool name`,
				`c.json: /llm/name: "acme..x" is not a canonical tool name`,
				`d.json: /llm/name: "choir.skill.transition" uses the prefix "choir.skill."`,
			},
		},
		{
			name: "override of a built-in refused",
			setup: func(t *testing.T, _, a string) {
				writeTool(t, a, "read", manifest("choir.fs.read", ""), okScript, 0o755)
			},
			want: []string{`read.json: /llm/name: "choir.fs.read" is a built-in tool and cannot be overridden`},
		},
		{
			name: "same name twice in one directory",
			setup: func(t *testing.T, g, _ string) {
				writeTool(t, g, "one", manifest("acme.twin", ""), okScript, 0o755)
				writeTool(t, g, "two", manifest("acme.twin", ""), okScript, 0o755)
			},
			want: []string{`two.json: /llm/name: "acme.twin" is already defined by GLOBAL/one.json in the same directory`},
		},
		{
			name: "wire names collide",
			setup: func(t *testing.T, g, _ string) {
				writeTool(t, g, "one", manifest("acme.a.b", ""), okScript, 0o755)
				writeTool(t, g, "two", manifest("acme.a_b", ""), okScript, 0o755)
			},
			want: []string{`"acme.a.b" and "acme.a_b" have the same wire name "acme_a_b"`},
		},
		{
			name: "every fault of every file at once",
			setup: func(t *testing.T, g, a string) {
				writeTool(t, g, "good", manifest("acme.good", ""), okScript, 0o755)
				writeTool(t, g, "bad1", "[", okScript, 0o755)
				writeTool(t, a, "bad2", manifest("acme.bad2", `"network": "yes"`), okScript, 0o755)
				writeTool(t, a, "bad3", manifest("acme.bad3", ""), "", 0)
			},
			want: []string{
				"GLOBAL/bad1.json: invalid JSON",
				"AGENT/bad2.json: /runtime/network: want boolean, got string",
				"AGENT/bad3.json: executable AGENT/bad3 does not exist",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			global, agent := filepath.Join(root, "global"), filepath.Join(root, "agent")
			tc.setup(t, global, agent)
			reg, err := Load([]Tool{builtin}, global, agent)
			if err == nil {
				t.Fatalf("Load = %v, nil; want faults %q", reg.Names(), tc.want)
			}
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("Load error %T %v; want a *LoadError", err, err)
			}
			msg := err.Error()
			t.Logf("Load error:\n%s", msg)
			for _, w := range tc.want {
				w = strings.NewReplacer("GLOBAL", global, "AGENT", agent).Replace(w)
				if !strings.Contains(msg, w) {
					t.Errorf("Load error =\n%s\nwant a line containing %q", msg, w)
				}
			}
			if len(le.Faults) < len(tc.want) {
				t.Errorf("Load reported %d faults; want at least %d", len(le.Faults), len(tc.want))
			}
		})
	}
}

func TestLoadBuiltinFaults(t *testing.T) {
	bad := &fakeBuiltin{name: "NotCanonical", rt: Runtime{Locks: []LockReq{{Key: "workspace", Mode: "Q"}}}}
	dup := &fakeBuiltin{name: "choir.fs.read"}
	_, err := Load([]Tool{bad, dup, dup}, "", "")
	if err == nil {
		t.Fatal("Load of broken built-ins = nil error")
	}
	for _, w := range []string{
		`built-in NotCanonical: "NotCanonical" is not a canonical tool name`,
		`built-in NotCanonical: lock "workspace": mode "Q" is not S or X`,
		`built-in choir.fs.read: name is already used by built-in choir.fs.read`,
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Load error =\n%v\nwant %q", err, w)
		}
	}
}

func TestLoadAgentOverridesGlobal(t *testing.T) {
	root := t.TempDir()
	global, agent := filepath.Join(root, "global"), filepath.Join(root, "agent")
	writeTool(t, global, "hello", manifest("acme.hello", `"version": "1"`), okScript, 0o755)
	writeTool(t, global, "other", manifest("acme.other", ""), okScript, 0o755)
	writeTool(t, agent, "hi", manifest("acme.hello", `"version": "2", "timeout_ms": 1500`), okScript, 0o755)
	// Files that are not manifests are ignored.
	if err := os.WriteFile(filepath.Join(global, "README"), []byte("notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	reg, err := Load([]Tool{&fakeBuiltin{name: "choir.fs.read"}}, global, agent)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got, want := strings.Join(reg.Names(), " "), "acme.hello acme.other choir.fs.read"; got != want {
		t.Errorf("Names() = %q; want %q", got, want)
	}
	tl, ok := reg.Lookup("acme.hello")
	if !ok {
		t.Fatal("Lookup(acme.hello) = false")
	}
	ext := tl.(*External)
	if got, want := ext.ManifestFile(), filepath.Join(agent, "hi.json"); got != want {
		t.Errorf("acme.hello comes from %s; want the agent's %s", got, want)
	}
	rt := tl.Runtime()
	if rt.Version != "2" || rt.Timeout.Milliseconds() != 1500 || rt.ExecPath != filepath.Join(agent, "hi") {
		t.Errorf("acme.hello runtime = %+v; want the agent manifest's", rt)
	}
	if !reg.Has("acme.other") || reg.Has("acme.nope") {
		t.Error("Has does not match the registry")
	}
	if name, ok := reg.LookupWire("acme_hello"); !ok || name != "acme.hello" {
		t.Errorf("LookupWire(acme_hello) = %q, %v", name, ok)
	}
}

func TestLoadMissingDirsAndDefaults(t *testing.T) {
	root := t.TempDir()
	global := filepath.Join(root, "global")
	writeTool(t, global, "d", manifest("acme.defaults", ""), okScript, 0o755)
	reg, err := Load(nil, global, filepath.Join(root, "no-such-dir"))
	if err != nil {
		t.Fatalf("Load with a missing agent dir: %v", err)
	}
	tl, _ := reg.Lookup("acme.defaults")
	rt := tl.Runtime()
	want := Runtime{ExecPath: filepath.Join(global, "d"), Timeout: DefaultTimeout, SideEffect: SideEffectRead,
		Version: DefaultVersion, Exposure: DefaultExposure}
	got, _ := json.Marshal(rt)
	wantJSON, _ := json.Marshal(want)
	if string(got) != string(wantJSON) {
		t.Errorf("default runtime = %s; want %s", got, wantJSON)
	}
}

func TestLLMToolsExcludeRuntime(t *testing.T) {
	root := t.TempDir()
	global := filepath.Join(root, "global")
	writeTool(t, global, "secretive", manifest("acme.secretive",
		`"exec_path": "secretive", "timeout_ms": 1234, "locks": [{"resource": "browser_tab", "mode": "X"}],
		 "network": true, "secret_resources": ["search:acme"], "idempotent": true, "version": "9.9",
		 "exposure": "core", "prompt_mask": true`), okScript, 0o755)
	writeTool(t, global, "hidden", manifest("acme.hidden", `"exposure": "none"`), okScript, 0o755)
	writeTool(t, global, "edgy", manifest("acme.edgy", `"exposure": "edge"`), okScript, 0o755)
	reg, err := Load([]Tool{&fakeBuiltin{name: "choir.fs.read"}}, global, "")
	if err != nil {
		t.Fatal(err)
	}
	all := reg.LLMTools(nil)
	raw, err := json.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"exec_path", "1234", "browser_tab", "search:acme", "9.9",
		"network", "prompt_mask", "exposure", "locks", "runtime", "input_schema", "acme.hidden"} {
		if strings.Contains(string(raw), leak) {
			t.Errorf("LLMTools(nil) = %s; contains %q", raw, leak)
		}
	}
	var views []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &views); err != nil {
		t.Fatal(err)
	}
	for _, v := range views {
		if len(v) != 3 || v["name"] == nil || v["description"] == nil || v["parameters"] == nil {
			t.Errorf("LLM view %v; want exactly name, description, parameters", v)
		}
	}
	names := func(ts []LLMTool) string {
		var s []string
		for _, x := range ts {
			s = append(s, x.Name)
		}
		return strings.Join(s, " ")
	}
	tests := []struct {
		filter Filter
		want   string
	}{
		{nil, "acme.edgy acme.secretive choir.fs.read"},
		{ForLane(Edge), "acme.edgy choir.fs.read"},
		{ForLane(Core), "acme.secretive choir.fs.read"},
		{All(ForLane(Core), Among([]string{"acme.secretive", "acme.edgy", "acme.hidden"})), "acme.secretive"},
		{Among([]string{"acme.hidden"}), ""},
	}
	for i, tc := range tests {
		if got := names(reg.LLMTools(tc.filter)); got != tc.want {
			t.Errorf("case %d: LLMTools = %q; want %q", i, got, tc.want)
		}
	}
}

func TestManifestHash(t *testing.T) {
	root := t.TempDir()
	global, agent := filepath.Join(root, "global"), filepath.Join(root, "agent")
	writeTool(t, global, "a", manifest("acme.a", `"version": "1"`), okScript, 0o755)
	writeTool(t, agent, "b", manifest("acme.b", ""), okScript, 0o755)
	builtins := []Tool{&fakeBuiltin{name: "choir.fs.read"}}
	hash := func() string {
		t.Helper()
		reg, err := Load(builtins, global, agent)
		if err != nil {
			t.Fatal(err)
		}
		return reg.ManifestHash()
	}
	base := hash()
	if len(base) != 64 {
		t.Fatalf("ManifestHash() = %q; want 64 hex digits", base)
	}
	if again := hash(); again != base {
		t.Errorf("ManifestHash changed between two loads: %s, %s", base, again)
	}
	steps := []struct {
		name    string
		change  func()
		changes bool
	}{
		{"reformat a manifest", func() {
			m := strings.ReplaceAll(manifest("acme.a", `"version": "1"`), "\n", "\n\n   ")
			writeTool(t, global, "a", m, "", 0)
		}, false},
		{"add a file that is not a manifest", func() {
			os.WriteFile(filepath.Join(global, "notes.txt"), []byte("x"), 0o644)
		}, false},
		{"rewrite the executable", func() {
			os.WriteFile(filepath.Join(global, "a"), []byte(okScript+"# v2\n"), 0o755)
		}, false},
		{"change a description", func() {
			writeTool(t, global, "a", strings.Replace(manifest("acme.a", `"version": "1"`), "A test tool.", "Another.", 1), "", 0)
		}, true},
		{"change a runtime member", func() {
			writeTool(t, agent, "b", manifest("acme.b", `"timeout_ms": 5000`), "", 0)
		}, true},
		{"add a tool", func() {
			writeTool(t, agent, "c", manifest("acme.c", ""), okScript, 0o755)
		}, true},
	}
	prev := base
	for _, s := range steps {
		s.change()
		got := hash()
		if changed := got != prev; changed != s.changes {
			t.Errorf("%s: hash changed = %v; want %v", s.name, changed, s.changes)
		}
		prev = got
	}
}
