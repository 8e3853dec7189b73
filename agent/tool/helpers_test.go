package tool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fakeBuiltin is a minimal built-in for registry tests.
type fakeBuiltin struct {
	name string
	rt   Runtime
	run  func(ctx context.Context, input json.RawMessage, env Env) (Result, error)
}

var _ Tool = (*fakeBuiltin)(nil)

func (f *fakeBuiltin) Name() string { return f.name }
func (f *fakeBuiltin) LLM() LLMTool {
	return LLMTool{Name: f.name, Description: "A fake tool.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"path":{"type":"string"},"n":{"type":"integer","minimum":1}},"required":["path"],"additionalProperties":false}`)}
}
func (f *fakeBuiltin) Runtime() Runtime {
	rt := f.rt
	if rt.Timeout == 0 {
		rt.Timeout = time.Minute
	}
	if rt.SideEffect == "" {
		rt.SideEffect = SideEffectRead
	}
	if rt.Exposure == "" {
		rt.Exposure = ExposeBoth
	}
	return rt
}
func (f *fakeBuiltin) Locks(json.RawMessage) ([]LockReq, error) { return nil, nil }
func (f *fakeBuiltin) Execute(ctx context.Context, input json.RawMessage, env Env) (Result, error) {
	if f.run == nil {
		return Success("ok", nil), nil
	}
	return f.run(ctx, input, env)
}

// manifest builds a manifest with the given name and extra runtime members
// (a JSON fragment without braces, may be empty).
func manifest(name, runtimeExtra string) string {
	rt := `"side_effect": "read"`
	if runtimeExtra != "" {
		rt += ", " + runtimeExtra
	}
	return `{
  "llm": {"name": "` + name + `", "description": "A test tool.",
          "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}, "additionalProperties": false}},
  "runtime": {` + rt + `}
}`
}

// writeTool writes dir/stem.json and, when script is not empty, the
// executable dir/stem with mode.
func writeTool(t *testing.T, dir, stem, manifestJSON, script string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, stem+".json"), []byte(manifestJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	if script != "" {
		if err := os.WriteFile(filepath.Join(dir, stem), []byte(script), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, stem), mode); err != nil {
			t.Fatal(err)
		}
	}
}

const okScript = "#!/bin/sh\ncat >/dev/null\necho '{\"summary\":\"ok\"}'\n"

// resultJSON marshals a result and decodes it into a map.
func resultJSON(t *testing.T, r Result) map[string]any {
	t.Helper()
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("marshal result: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decode result %s: %v", raw, err)
	}
	return m
}

// waitFor polls cond until it holds, failing after a generous deadline.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
