package workspace

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"choir/agent/tool"
)

// registry loads the workspace tools with opts and no external tools.
func registry(t testing.TB, opts Options) *tool.Registry {
	t.Helper()
	reg, err := tool.Load(Tools(opts), "", "")
	if err != nil {
		t.Fatalf("load the workspace tools: %v", err)
	}
	return reg
}

// call runs one call the way the arbiter does (Prepare, then Run) and returns
// the result as the model would read it.
func call(t *testing.T, reg *tool.Registry, ws, name, input string) map[string]any {
	t.Helper()
	var r tool.Result
	c, err := reg.Prepare(name, json.RawMessage(input))
	if err != nil {
		r = tool.ErrorResult(err)
	} else {
		r = c.Run(context.Background(), tool.Invocation{Workspace: ws, CallID: "t"})
	}
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// errCode returns the error code of a result, "" for a success.
func errCode(m map[string]any) string {
	if m["status"] == "success" {
		return ""
	}
	e, _ := m["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// mkfile writes rel under ws, creating parents.
func mkfile(t testing.TB, ws, rel, content string) {
	t.Helper()
	p := filepath.Join(ws, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// numbered returns n lines "line 1\n" ... "line n\n".
func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	return b.String()
}
