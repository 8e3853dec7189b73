package arbiter

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"choir/agent/lock"
	"choir/agent/tool"
	"choir/agent/tool/workspace"
	"choir/internal/rpc"
)

// fakeTool is a built-in whose locks and behaviour a test chooses. Its input
// is {"path": string, "tag": string}; it locks file:<path> in mode.
type fakeTool struct {
	name    string
	mode    string // "S", "X" or "" for no lock
	secrets []string
	// noDecode makes Execute a true no-op, for benchmarks.
	noDecode bool
	run      func(ctx context.Context, in fakeInput, env tool.Env) (tool.Result, error)
}

type fakeInput struct {
	Path string `json:"path"`
	Tag  string `json:"tag"`
}

var _ tool.Tool = (*fakeTool)(nil)

func (f *fakeTool) Name() string { return f.name }
func (f *fakeTool) LLM() tool.LLMTool {
	return tool.LLMTool{Name: f.name, Description: "A test tool.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"path":{"type":"string","minLength":1},"tag":{"type":"string"}},"required":["path"],"additionalProperties":false}`)}
}
func (f *fakeTool) Runtime() tool.Runtime {
	return tool.Runtime{Timeout: time.Minute, SideEffect: tool.SideEffectWrite, Exposure: tool.ExposeBoth,
		Version: "1", SecretResources: f.secrets}
}
func (f *fakeTool) Locks(input json.RawMessage) ([]tool.LockReq, error) {
	if f.mode == "" {
		return nil, nil
	}
	var in fakeInput
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, err
	}
	return []tool.LockReq{{Key: "file:" + in.Path, Mode: f.mode}}, nil
}
func (f *fakeTool) Execute(ctx context.Context, input json.RawMessage, env tool.Env) (tool.Result, error) {
	if f.noDecode {
		return tool.Result{Status: tool.StatusSuccess, Summary: "done"}, nil
	}
	var in fakeInput
	if err := json.Unmarshal(input, &in); err != nil {
		return tool.Result{}, err
	}
	if f.run == nil {
		return tool.Success("done "+in.Tag, nil), nil
	}
	return f.run(ctx, in, env)
}

// harness is a running arbiter over a temp workspace with the real
// workspace tools and the test's own.
type harness struct {
	t    *testing.T
	a    *Arbiter
	ws   string
	stop func()
}

func newHarness(t *testing.T, cfg Config, extra ...tool.Tool) *harness {
	t.Helper()
	ws := t.TempDir()
	tools := append(workspace.Tools(workspace.Options{NoRipgrep: true}), extra...)
	reg, err := tool.Load(tools, "", "")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tools, cfg.Workspace = reg, ws
	a := New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := a.Run(ctx); err != nil {
			t.Errorf("Run = %v", err)
		}
	}()
	h := &harness{t: t, a: a, ws: ws, stop: func() { cancel(); <-done }}
	t.Cleanup(h.stop)
	return h
}

// submit submits and fails the test on an arbiter error.
func (h *harness) submit(ctx context.Context, p Proposal) Outcome {
	h.t.Helper()
	out, err := h.a.Submit(ctx, p)
	if err != nil {
		h.t.Fatalf("Submit(%s %s) = %v", p.ID, p.Tool, err)
	}
	return out
}

// enqueue submits p without waiting: when it returns, the arbiter will
// serve p before anything submitted later.
func (h *harness) enqueue(ctx context.Context, p Proposal) chan result {
	inv := h.a.prepare(ctx, p)
	h.a.submits <- inv
	return inv.reply
}

// waitEvent waits (with a deadline, never a sleep) until an event matching
// f is committed, and returns it.
func (h *harness) waitEvent(what string, f func(rpc.Event) bool) rpc.Event {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var seen int64
	for {
		for _, e := range h.a.Events(seen) {
			if f(e) {
				return e
			}
			seen = e.Rev
		}
		if err := h.a.Wait(ctx, seen+1); err != nil {
			h.t.Fatalf("waiting for %s: %v; log:\n%s", what, err, h.trace())
		}
	}
}

// waitFor waits until cond holds, yielding between checks, or fails the
// test after a deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}

// trace renders the log as "Type id" lines.
func (h *harness) trace() string {
	var b strings.Builder
	for _, e := range h.a.Events(0) {
		fmt.Fprintf(&b, "%d %s %s\n", e.Rev, e.Type, eventID(e))
	}
	return b.String()
}

// seq lists the log as "Type:id" strings.
func (h *harness) seq() []string {
	var s []string
	for _, e := range h.a.Events(0) {
		s = append(s, e.Type+":"+eventID(e))
	}
	return s
}

func eventID(e rpc.Event) string {
	var p struct {
		ID string `json:"id"`
	}
	json.Unmarshal(e.Payload, &p)
	return p.ID
}

func isEvent(typ, id string) func(rpc.Event) bool {
	return func(e rpc.Event) bool { return e.Type == typ && eventID(e) == id }
}

// field decodes one member of a JSON object.
func field(t *testing.T, raw json.RawMessage, path ...string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// noLocksHeld checks the lock manager is idle.
func noLocksHeld(t *testing.T, m *lock.Manager) {
	t.Helper()
	if s := m.Snapshot(); len(s.Held) != 0 || len(s.Waiting) != 0 {
		t.Errorf("locks after the call: held %v, waiting %v; want none", s.Held, s.Waiting)
	}
}

// subsequence reports whether want appears in order within got.
func subsequence(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// mustCore returns the owner core:<job>.
func mustCore(job string) lock.Owner {
	o, err := lock.Core(job)
	if err != nil {
		panic(err)
	}
	return o
}
