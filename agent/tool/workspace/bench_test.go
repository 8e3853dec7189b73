package workspace

import (
	"context"
	"encoding/json"
	"testing"

	"choir/agent/tool"
)

// BenchmarkFsRead100Lines is one whole choir.fs.read call of a 100-line file
// as the arbiter makes it: Prepare (lookup, schema, locks), then Run.
func BenchmarkFsRead100Lines(b *testing.B) {
	ws := b.TempDir()
	mkfile(b, ws, "src/a.go", numbered(100))
	reg := registry(b, Options{})
	input := json.RawMessage(`{"path": "src/a.go"}`)
	inv := tool.Invocation{Workspace: ws, CallID: "bench"}
	b.ReportAllocs()
	for b.Loop() {
		c, err := reg.Prepare("choir.fs.read", input)
		if err != nil {
			b.Fatal(err)
		}
		if r := c.Run(context.Background(), inv); r.Status != tool.StatusSuccess {
			b.Fatal(r.Error)
		}
	}
}

// BenchmarkPrepareFsWrite is the registry's share of a choir.fs.write call:
// lookup, input validation against the schema, and the lock key.
func BenchmarkPrepareFsWrite(b *testing.B) {
	reg := registry(b, Options{})
	input := json.RawMessage(`{"path": "src/auth/handler.go", "op": "replace_lines", "start_line": 40, "end_line": 52,
		"content": "func handle(w http.ResponseWriter, r *http.Request) {\n\tserve(w, r)\n}\n"}`)
	b.ReportAllocs()
	for b.Loop() {
		c, err := reg.Prepare("choir.fs.write", input)
		if err != nil || len(c.Locks) != 1 {
			b.Fatal(err)
		}
	}
}
