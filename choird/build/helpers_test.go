package build

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// files is a repo tree for tests: path -> content. A "+x:" prefix makes the
// file executable; a path ending in "/" is an empty directory.
type files map[string]string

func writeTree(t testing.TB, dir string, fs files) {
	t.Helper()
	for name, body := range fs {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if b, ok := strings.CutPrefix(body, "+x:"); ok {
			body, mode = b, 0o755
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// toolManifest is a minimal valid manifest of tool name.
func toolManifest(name, desc string) string {
	return `{"llm": {"name": "` + name + `", "description": "` + desc + `",
  "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}},
 "runtime": {"side_effect": "read", "timeout_ms": 5000}}
`
}

// skillSpec is a minimal valid skill allowed to call tool.
func skillSpec(name, tool string) string {
	return `{"name": "` + name + `", "description": "uses ` + tool + `", "initial_state": "work", "max_steps": 5,
 "states": {"work": {"objective": "do it", "allowed_tools": ["` + tool + `"], "transitions": [{"on": "done", "to": "end"}]},
            "end": {"terminal": true}}}
`
}

// globalFiles is a valid global repo.
func globalFiles() files {
	return files{
		"Dockerfile.base":            "FROM choir-test/busybox:1\nCOPY choir-agent /choir/bin/choir-agent\nENTRYPOINT [\"/choir/bin/choir-agent\"]\n",
		"identity/USER.md":           "The user likes tea.\n",
		"identity/SOUL.md":           "global soul\n",
		"identity/SOUL-CORE.md":      "global core soul\n",
		"tools/acme.echo.json":       toolManifest("acme.echo", "global echo"),
		"tools/acme.echo":            "+x:#!/bin/sh\necho global\n",
		"tools/acme.wc.json":         toolManifest("acme.wc", "global wc"),
		"tools/acme.wc":              "+x:#!/bin/sh\nwc\n",
		"tools/acme.compiled.json":   toolManifest("acme.compiled", "built from source"),
		"tools/acme.compiled/main.c": "int main(void) { return 0; }\n",
		"skills/summarise.json":      skillSpec("summarise", "choir.fs.read"),
		"skills/count.json":          skillSpec("count", "acme.wc"),
		"README.md":                  "the global repo\n",
	}
}

// agentFiles is a valid agent repo.
func agentFiles() files {
	return files{
		"Dockerfile":            "FROM choir-base:latest\nRUN echo agent-step\n",
		"identity/SOUL.md":      "agent soul\n",
		"tools/acme.echo.json":  toolManifest("acme.echo", "agent echo"),
		"tools/acme.echo":       "+x:#!/bin/sh\necho agent\n",
		"tools/acme.greet.json": toolManifest("acme.greet", "agent greet"),
		"tools/acme.greet":      "+x:#!/bin/sh\necho hello\n",
		"skills/count.json":     skillSpec("count", "acme.greet"),
	}
}
