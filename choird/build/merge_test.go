package build

import (
	"bytes"
	"choir/agent/builtin"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func loadPair(t *testing.T, g, a files) (*source, *source) {
	t.Helper()
	gdir, adir := t.TempDir(), t.TempDir()
	writeTree(t, gdir, g)
	writeTree(t, adir, a)
	return loadSource("global repo (G)", gdir, "g1", BaseDockerfile, UserFile),
		loadSource("agent repo of agent-1 (A)", adir, "a1", AgentDockerfile)
}

func render(tree *Tree) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "tools: %s\ntool_manifest_hash: %s\nskill_manifest_hash: %s\n", strings.Join(tree.Tools, " "), tree.ToolHash, tree.SkillHash)
	for _, w := range tree.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	for _, e := range tree.Entries {
		from := e.From
		if from == "" {
			from = "build"
		}
		fmt.Fprintf(&b, "\n== /choir/%s %04o from %s\n%s", e.Path, e.Mode, from, e.Body)
	}
	return b.Bytes()
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s (go test -update rewrites it):\n%s", name, path, got)
	}
}

func TestMergeGolden(t *testing.T) {
	tests := []struct {
		name string
		g, a files
	}{
		{"merge", globalFiles(), agentFiles()},
		{"merge-agent-soul-core", globalFiles(), func() files {
			a := agentFiles()
			a["identity/SOUL-CORE.md"] = "agent core soul\n"
			a["identity/USER.md"] = "ignored: USER.md comes from the global repo only\n"
			return a
		}()},
		{"merge-bare", files{"Dockerfile.base": "FROM x\n", "identity/USER.md": "u\n"}, files{"Dockerfile": "FROM choir-base\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, a := loadPair(t, tt.g, tt.a)
			tree, err := check(g, a)
			if err != nil {
				t.Fatalf("check() = %v", err)
			}
			golden(t, tt.name, render(tree))
		})
	}
}

func TestCheckFaults(t *testing.T) {
	tests := []struct {
		name string
		g, a files
		drop []string // paths removed from the valid repos: "g:path" or "a:path"
		want []string // substrings of the error, in order of appearance not required
	}{
		{name: "no Dockerfile", drop: []string{"a:Dockerfile"},
			want: []string{"agent repo of agent-1 (A): Dockerfile: missing"}},
		{name: "no Dockerfile.base", drop: []string{"g:Dockerfile.base"},
			want: []string{"global repo (G): Dockerfile.base: missing"}},
		{name: "no USER.md", drop: []string{"g:identity/USER.md"},
			want: []string{"global repo (G): identity/USER.md: missing"}},
		{name: "not JSON", a: files{"tools/acme.echo.json": "{nope"},
			want: []string{"agent repo of agent-1 (A): tools/acme.echo.json: not a JSON object"}},
		{name: "JSON array", a: files{"tools/acme.echo.json": "[1]"},
			want: []string{"tools/acme.echo.json: not a JSON object"}},
		{name: "wrong name", a: files{"tools/acme.echo.json": toolManifest("acme.other", "x")},
			want: []string{`tools/acme.echo.json: /llm/name: is "acme.other"; want "acme.echo"`}},
		{name: "bad schema", g: files{"tools/acme.wc.json": `{"llm": {"name": "acme.wc", "input_schema": {"type": "object", "properties": {"q": {"type": 7}}}}, "runtime": {}}`},
			want: []string{"global repo (G): tools/acme.wc.json: /llm/input_schema/properties/q"}},
		{name: "no schema", g: files{"tools/acme.wc.json": `{"llm": {"name": "acme.wc"}, "runtime": {}}`},
			want: []string{"tools/acme.wc.json: /llm/input_schema: missing"}},
		{name: "no runtime", g: files{"tools/acme.wc.json": `{"llm": {"name": "acme.wc", "input_schema": {"type": "object"}}}`},
			want: []string{"tools/acme.wc.json: /runtime: missing or not an object"}},
		{name: "no executable", drop: []string{"a:tools/acme.greet"},
			want: []string{"tools/acme.greet.json: no executable tools/acme.greet and no source directory tools/acme.greet/"}},
		{name: "not executable", a: files{"tools/acme.greet": "#!/bin/sh\n"},
			want: []string{"tools/acme.greet: not executable"}},
		{name: "built-in name", a: files{"tools/choir.exec.json": toolManifest("choir.exec", "x"), "tools/choir.exec": "+x:x"},
			want: []string{`"choir.exec" is a built-in tool`}},
		{name: "not a tool name", a: files{"tools/Acme.json": toolManifest("Acme", "x"), "tools/Acme": "+x:x"},
			want: []string{`tools/Acme.json: /llm/name: "Acme" is not a canonical tool name`}},
		{name: "reserved prefix", a: files{"tools/choir.skill.go.json": toolManifest("choir.skill.go", "x"), "tools/choir.skill.go": "+x:x"},
			want: []string{`"choir.skill.go" uses the prefix "choir.skill."`}},
		{name: "skill names a tool no agent has", a: files{"skills/x.json": skillSpec("x", "choir.web.fetch")},
			want: []string{`allowed tool "choir.web.fetch" is not registered`}},
		{name: "skill does not parse", a: files{"skills/bad.json": `{"name": "bad", "bogus": 1}`},
			want: []string{"agent repo of agent-1 (A): skills/bad.json: /bogus: unknown property"}},
		{name: "skill unknown tool", a: files{"skills/x.json": skillSpec("x", "acme.nope")},
			want: []string{`agent repo of agent-1 (A): skills/x.json: skill "x": state "work": allowed tool "acme.nope" is not registered`}},
		{name: "skill name", g: files{"skills/y.json": skillSpec("x", "acme.wc")},
			want: []string{`global repo (G): skills/y.json: /name: is "x"; want "y"`}},
		{name: "reserved .choir", a: files{".choir/x": "x"},
			want: []string{"agent repo of agent-1 (A): .choir: this path is reserved"}},
		{name: "two at once", drop: []string{"a:Dockerfile", "g:identity/USER.md"},
			want: []string{"(2 problems)", "Dockerfile: missing", "identity/USER.md: missing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, a := globalFiles(), agentFiles()
			for k, v := range tt.g {
				g[k] = v
			}
			for k, v := range tt.a {
				a[k] = v
			}
			for _, d := range tt.drop {
				side, p, _ := strings.Cut(d, ":")
				if side == "g" {
					delete(g, p)
				} else {
					delete(a, p)
				}
			}
			gs, as := loadPair(t, g, a)
			_, err := check(gs, as)
			if err == nil {
				t.Fatalf("check() = nil; want an error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("check() = %v;\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

func TestSymlinkedToolRefused(t *testing.T) {
	g, a := globalFiles(), agentFiles()
	delete(a, "tools/acme.greet")
	gs, as := loadPair(t, g, a)
	if err := os.Symlink("/etc/passwd", filepath.Join(as.dir, "tools/acme.greet")); err != nil {
		t.Fatal(err)
	}
	as = loadSource(as.label, as.dir, "a1", AgentDockerfile)
	if _, err := check(gs, as); err == nil || !strings.Contains(err.Error(), "tools/acme.greet: must be an executable file") {
		t.Errorf("check() with a symlinked executable = %v; want it refused", err)
	}
}

// TestSkillsMayNameEveryBuiltin checks the build against choir-agent's own
// registry: a skill may name any tool the agent registers, core tools
// included.
func TestSkillsMayNameEveryBuiltin(t *testing.T) {
	a := agentFiles()
	for _, name := range builtin.Names() {
		skill := strings.ReplaceAll(name, ".", "-")
		a["skills/"+skill+".json"] = skillSpec(skill, name)
	}
	g, as := loadPair(t, globalFiles(), a)
	if _, err := check(g, as); err != nil {
		t.Fatalf("check() = %v; want every built-in accepted", err)
	}
}
