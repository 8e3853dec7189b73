package arbiter

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/agent/lock"
	"choir/agent/tool"
	"choir/internal/rpc"
)

// A call runs through the whole pipeline: requested, committed with its
// locks, executed in the workspace, result committed, locks released.
func TestToolCallPipeline(t *testing.T) {
	h := newHarness(t, Config{})
	ctx := context.Background()
	out := h.submit(ctx, Proposal{ID: "c1", Lane: lock.Edge, ToolCallID: "call_1", Tool: "choir.fs.write",
		Input: json.RawMessage(`{"path":"notes/a.txt","op":"create","content":"hello\n"}`)})
	if out.Status != tool.StatusSuccess || out.Replayed || out.Rev != 3 {
		t.Fatalf("Submit = %+v; want a fresh success committed at rev 3", out)
	}
	if b, err := os.ReadFile(filepath.Join(h.ws, "notes/a.txt")); err != nil || string(b) != "hello\n" {
		t.Errorf("notes/a.txt = %q, %v; want hello", b, err)
	}
	want := []string{"ToolCallRequested:c1", "ToolCallCommitted:c1", "ToolResultCommitted:c1"}
	if got := h.seq(); !slices.Equal(got, want) {
		t.Errorf("log = %v; want %v", got, want)
	}
	evs := h.a.Events(0)
	var committed CallCommitted
	json.Unmarshal(evs[1].Payload, &committed)
	if len(committed.Locks) != 1 || committed.Locks[0] != (LockHeld{Mode: "X", Resource: "file:notes/a.txt"}) {
		t.Errorf("ToolCallCommitted locks = %+v; want file:notes/a.txt X", committed.Locks)
	}
	var res ResultCommitted
	json.Unmarshal(evs[2].Payload, &res)
	if res.ToolCallID != "call_1" || res.Status != "success" || string(res.Output) != string(out.Output) {
		t.Errorf("ToolResultCommitted = %+v; want call_1, success and the outcome's output", res)
	}
	for _, e := range evs {
		if e.Lane != LaneEdge {
			t.Errorf("event %d lane = %q; want edge", e.Rev, e.Lane)
		}
	}
	noLocksHeld(t, h.a.Locks())
}

// Refused proposals are committed as requested + error result, never run,
// and never reveal a tool the lane was not offered.
func TestRefusedProposals(t *testing.T) {
	ran := 0
	hidden := &fakeTool{name: "test.hidden", run: func(context.Context, fakeInput, tool.Env) (tool.Result, error) {
		ran++
		return tool.Success("ran", nil), nil
	}}
	// Nine refusals in a row: the loop breaker (loop_test.go) stays out.
	h := newHarness(t, Config{Loops: func() LoopLimits { return LoopLimits{Repeats: 100} }}, hidden)
	allow := func(name string) bool { return name != "test.hidden" }
	tests := []struct {
		name, tool, input, code string
	}{
		{"unknown tool", "choir.nope", `{}`, tool.CodeUnknownTool},
		{"not offered to the lane", "test.hidden", `{"path":"a"}`, tool.CodeUnknownTool},
		{"arguments not JSON", "choir.fs.read", `{"path": "a.txt"`, tool.CodeInvalidInput},
		{"arguments not an object", "choir.fs.read", `["a.txt"]`, tool.CodeInvalidInput},
		{"schema", "choir.fs.read", `{"path": 3}`, tool.CodeInvalidInput},
		{"path outside", "choir.fs.read", `{"path": "../etc/passwd"}`, tool.CodePathRefused},
		{"skill tool without a skill", "choir.skill.transition", `{"on":"x"}`, tool.CodeUnknownTool},
		{"arguments nested too deeply", "choir.fs.read", `{"path":"a","x":` + strings.Repeat("[", MaxInputDepth) + strings.Repeat("]", MaxInputDepth) + `}`, tool.CodeInvalidInput},
		{"arguments too large", "choir.fs.read", `{"path":"a","x":"` + strings.Repeat("a", MaxInputBytes) + `"}`, tool.CodeInvalidInput},
	}
	var msgs []string
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := "r" + string(rune('a'+i))
			out := h.submit(context.Background(), Proposal{ID: id, Lane: lock.Edge, Tool: tt.tool, Input: json.RawMessage(tt.input), Allowed: allow})
			if out.Status != tool.StatusError {
				t.Fatalf("Submit(%s) = %+v; want an error result", tt.tool, out)
			}
			if got := field(t, out.Output, "error", "code"); got != tt.code {
				t.Errorf("Submit(%s) code = %v; want %s (output %s)", tt.tool, got, tt.code, out.Output)
			}
			if tt.code == tool.CodeUnknownTool {
				msgs = append(msgs, strings.ReplaceAll(field(t, out.Output, "error", "message").(string), tt.tool, "NAME"))
			}
			h.waitEvent("result", isEvent(ToolResultCommitted, id))
			for _, e := range h.a.Events(0) {
				if e.Type == ToolCallCommitted && eventID(e) == id {
					t.Errorf("a refused proposal was committed for execution")
				}
			}
		})
	}
	if ran != 0 {
		t.Errorf("the hidden tool ran %d times; want 0", ran)
	}
	for _, m := range msgs[1:] {
		if m != msgs[0] {
			t.Errorf("unknown_tool messages differ: %q vs %q; a hidden tool must look like a missing one", m, msgs[0])
		}
	}
	// Invalid JSON is kept as sent, for the audit; refused arguments too
	// deep or too large only as an excerpt, so the log stays replicable.
	for _, e := range h.a.Events(0) {
		var p CallRequested
		json.Unmarshal(e.Payload, &p)
		if e.Type == ToolCallRequested && p.ID == "rc" && p.RawInput != `{"path": "a.txt"` {
			t.Errorf("raw_input = %q; want the arguments as sent", p.RawInput)
		}
		if e.Type == ToolCallRequested && (p.ID == "rh" || p.ID == "ri") && (len(e.Payload) > 8<<10 || len(p.Input) != 0 || !strings.Contains(p.RawInput, "bytes omitted]") && p.ID == "ri") {
			t.Errorf("%s committed %d bytes (raw_input %d bytes, input %d); want an excerpt only", p.ID, len(e.Payload), len(p.RawInput), len(p.Input))
		}
	}
}

// Resubmitting an invocation id returns the committed result without a
// second execution, whether the first is finished or still running.
func TestIdempotentResubmission(t *testing.T) {
	release := make(chan struct{})
	slowAppend := &fakeTool{name: "test.slow_append", mode: "X", run: func(ctx context.Context, in fakeInput, env tool.Env) (tool.Result, error) {
		<-release
		f, err := os.OpenFile(filepath.Join(env.Workspace, in.Path), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return tool.Result{}, err
		}
		defer f.Close()
		f.WriteString(in.Tag + "\n")
		return tool.Success("appended", nil), nil
	}}
	h := newHarness(t, Config{}, slowAppend)
	ctx := context.Background()

	// Finished: the real choir.fs.write append, twice with one id.
	os.WriteFile(filepath.Join(h.ws, "log.txt"), nil, 0o644)
	p := Proposal{ID: "append-1", Lane: lock.Edge, Tool: "choir.fs.write",
		Input: json.RawMessage(`{"path":"log.txt","op":"append","content":"once\n"}`)}
	first := h.submit(ctx, p)
	second := h.submit(ctx, p)
	if first.Replayed || !second.Replayed || string(first.Output) != string(second.Output) || first.Rev != second.Rev {
		t.Errorf("resubmission = %+v after %+v; want the same result, replayed", second, first)
	}
	if b, _ := os.ReadFile(filepath.Join(h.ws, "log.txt")); string(b) != "once\n" {
		t.Errorf("log.txt = %q; want one append", b)
	}

	// Running: three submissions of one id while the first executes.
	outs := make(chan Outcome, 3)
	q := Proposal{ID: "append-2", Lane: lock.Edge, Tool: "test.slow_append", Input: json.RawMessage(`{"path":"slow.txt","tag":"x"}`)}
	go func() { outs <- h.submit(ctx, q) }()
	h.waitEvent("the first call running", isEvent(ToolCallCommitted, "append-2"))
	dups := []chan result{h.enqueue(ctx, q), h.enqueue(ctx, q)}
	h.submit(ctx, Proposal{ID: "probe", Lane: mustCore("probe"), Tool: "choir.nope"}) // served after both
	close(release)
	if first := <-outs; first.Replayed || first.Status != tool.StatusSuccess {
		t.Errorf("first submission = %+v; want a fresh success", first)
	}
	replayed := 0
	for _, d := range dups {
		if r := <-d; r.err == nil && r.out.Replayed && r.out.Status == tool.StatusSuccess {
			replayed++
		}
	}
	if replayed != 2 {
		t.Errorf("%d of 2 duplicate submissions replayed the result; want 2", replayed)
	}
	if b, _ := os.ReadFile(filepath.Join(h.ws, "slow.txt")); string(b) != "x\n" {
		t.Errorf("slow.txt = %q; want one execution", b)
	}
	n := 0
	for _, e := range h.a.Events(0) {
		if eventID(e) == "append-2" && e.Type == ToolResultCommitted {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d results committed for append-2; want 1", n)
	}

	// An id reused for another tool is an error, not a replay.
	if _, err := h.a.Submit(ctx, Proposal{ID: "append-1", Lane: lock.Edge, Tool: "choir.fs.read", Input: json.RawMessage(`{"path":"log.txt"}`)}); !errors.Is(err, ErrIDReused) {
		t.Errorf("Submit with a reused id = %v; want ErrIDReused", err)
	}
}

// Two calls that both want file:shared.txt X run one after the other, and a
// call on another file completes while the second waits for the lock.
func TestConflictingProposalsSerialise(t *testing.T) {
	gates := map[string]chan struct{}{"A": make(chan struct{}), "B": make(chan struct{})}
	var mu sync.Mutex
	var order []string
	gated := &fakeTool{name: "test.gated", mode: "X", run: func(ctx context.Context, in fakeInput, env tool.Env) (tool.Result, error) {
		if g := gates[in.Tag]; g != nil {
			<-g
		}
		mu.Lock()
		order = append(order, in.Tag)
		mu.Unlock()
		return tool.Success("done "+in.Tag, nil), nil
	}}
	h := newHarness(t, Config{}, gated)
	ctx := context.Background()
	prop := func(id string, owner lock.Owner, path string) Proposal {
		return Proposal{ID: id, Lane: owner, Tool: "test.gated", Input: json.RawMessage(`{"path":"` + path + `","tag":"` + id + `"}`)}
	}
	coreA, _ := lock.Core("a")
	coreB, _ := lock.Core("b")

	doneA, doneB := make(chan Outcome, 1), make(chan Outcome, 1)
	go func() { doneA <- h.submit(ctx, prop("A", coreA, "shared.txt")) }()
	h.waitEvent("A holding its lock", isEvent(ToolCallCommitted, "A"))
	go func() { doneB <- h.submit(ctx, prop("B", coreB, "shared.txt")) }()
	h.waitEvent("B proposed", isEvent(ToolCallRequested, "B"))

	// B waits in the lock manager for A's lock; meanwhile the edge's call
	// on another file goes through.
	waitFor(t, "B waiting for its lock", func() bool {
		snap := h.a.Locks().Snapshot()
		return len(snap.Waiting) == 1 && snap.Waiting[0].Owner == coreB
	})
	c := h.submit(ctx, prop("C", lock.Edge, "other.txt"))
	if c.Status != tool.StatusSuccess {
		t.Fatalf("C = %+v", c)
	}
	if snap := h.a.Locks().Snapshot(); len(snap.Waiting) != 1 || snap.Waiting[0].Owner != coreB {
		t.Errorf("waiting after C = %+v; want B still waiting", snap.Waiting)
	}
	close(gates["A"])
	<-doneA
	h.waitEvent("B holding its lock", isEvent(ToolCallCommitted, "B"))
	close(gates["B"])
	<-doneB

	want := []string{
		"ToolCallRequested:A", "ToolCallCommitted:A",
		"ToolCallRequested:B",
		"ToolCallRequested:C", "ToolCallCommitted:C", "ToolResultCommitted:C",
		"ToolResultCommitted:A", "ToolCallCommitted:B", "ToolResultCommitted:B",
	}
	if got := h.seq(); !slices.Equal(got, want) {
		t.Errorf("log =\n%v\nwant\n%v", got, want)
	}
	if !slices.Equal(order, []string{"C", "A", "B"}) {
		t.Errorf("executions = %v; want C, A, B", order)
	}
	noLocksHeld(t, h.a.Locks())
}

// A lane's calls run one at a time in the order submitted, even when
// submitted together (an owner holds one lockset at a time).
func TestOneLaneRunsOneCallAtATime(t *testing.T) {
	gate := make(chan struct{})
	gated := &fakeTool{name: "test.gated", mode: "X", run: func(ctx context.Context, in fakeInput, env tool.Env) (tool.Result, error) {
		if in.Tag == "first" {
			<-gate
		}
		return tool.Success(in.Tag, nil), nil
	}}
	h := newHarness(t, Config{}, gated)
	ctx := context.Background()
	first := make(chan Outcome, 1)
	go func() {
		first <- h.submit(ctx, Proposal{ID: "1", Lane: lock.Edge, Tool: "test.gated", Input: json.RawMessage(`{"path":"a","tag":"first"}`)})
	}()
	h.waitEvent("first running", isEvent(ToolCallCommitted, "1"))
	second := h.enqueue(ctx, Proposal{ID: "2", Lane: lock.Edge, Tool: "test.gated", Input: json.RawMessage(`{"path":"b","tag":"second"}`)})
	h.submit(ctx, Proposal{ID: "probe", Lane: mustCore("probe"), Tool: "choir.nope"}) // served after "2"
	if got := h.seq(); slices.Contains(got, "ToolCallRequested:2") {
		t.Errorf("log = %v; the second call started while the first runs", got)
	}
	close(gate)
	if r := <-second; r.out.Status != tool.StatusSuccess {
		t.Errorf("second = %+v", r)
	}
	<-first
	got := h.seq()
	if !subsequence(got, []string{"ToolResultCommitted:1", "ToolCallRequested:2", "ToolCallCommitted:2"}) {
		t.Errorf("log = %v; want the second call requested after the first's result", got)
	}
}

// Locks are released when the tool panics, and when the invocation
// goroutine itself panics outside the tool.
func TestLocksReleasedAfterPanic(t *testing.T) {
	panicky := &fakeTool{name: "test.panic", mode: "X", run: func(context.Context, fakeInput, tool.Env) (tool.Result, error) {
		panic("boom")
	}}
	secretive := &fakeTool{name: "test.secret", mode: "X", secrets: []string{tool.SecretNotion}}
	h := newHarness(t, Config{Secrets: func(string) (string, error) { panic("secret store exploded") }}, panicky, secretive)
	ctx := context.Background()
	for _, name := range []string{"test.panic", "test.secret"} {
		out := h.submit(ctx, Proposal{ID: name, Lane: lock.Edge, Tool: name, Input: json.RawMessage(`{"path":"p.txt"}`)})
		if out.Status != tool.StatusError || field(t, out.Output, "error", "code") != tool.CodeInternal ||
			!strings.Contains(string(out.Output), "panic") {
			t.Errorf("%s = %s; want an internal error naming the panic", name, out.Output)
		}
		noLocksHeld(t, h.a.Locks())
	}
	// The file is free again.
	out := h.submit(ctx, Proposal{ID: "after", Lane: lock.Edge, Tool: "choir.fs.write",
		Input: json.RawMessage(`{"path":"p.txt","op":"create","content":"x"}`)})
	if out.Status != tool.StatusSuccess {
		t.Errorf("write after the panics = %s", out.Output)
	}
}

// Cancelling a proposal's context stops a running tool or a wait for locks;
// either way the result is committed and nothing stays locked.
func TestLocksReleasedOnCancel(t *testing.T) {
	started := make(chan struct{}, 1)
	blocking := &fakeTool{name: "test.block", mode: "X", run: func(ctx context.Context, in fakeInput, env tool.Env) (tool.Result, error) {
		started <- struct{}{}
		<-ctx.Done()
		return tool.Result{}, ctx.Err()
	}}
	h := newHarness(t, Config{}, blocking)
	coreA, _ := lock.Core("a")

	// Running tool.
	ctxA, cancelA := context.WithCancel(context.Background())
	resA := make(chan error, 1)
	go func() {
		_, err := h.a.Submit(ctxA, Proposal{ID: "A", Lane: coreA, Tool: "test.block", Input: json.RawMessage(`{"path":"f"}`)})
		resA <- err
	}()
	<-started

	// Waiting for locks.
	ctxB, cancelB := context.WithCancel(context.Background())
	resB := make(chan error, 1)
	go func() {
		_, err := h.a.Submit(ctxB, Proposal{ID: "B", Lane: lock.Edge, Tool: "test.block", Input: json.RawMessage(`{"path":"f"}`)})
		resB <- err
	}()
	h.waitEvent("B proposed", isEvent(ToolCallRequested, "B"))
	cancelB()
	eB := h.waitEvent("B's result", isEvent(ToolResultCommitted, "B"))
	if err := <-resB; !errors.Is(err, context.Canceled) {
		t.Errorf("Submit(B) after cancel = %v; want context.Canceled", err)
	}
	var rb ResultCommitted
	json.Unmarshal(eB.Payload, &rb)
	if field(t, rb.Output, "error", "code") != tool.CodeCancelled {
		t.Errorf("B's result = %s; want cancelled", rb.Output)
	}

	cancelA()
	eA := h.waitEvent("A's result", isEvent(ToolResultCommitted, "A"))
	<-resA
	var ra ResultCommitted
	json.Unmarshal(eA.Payload, &ra)
	if field(t, ra.Output, "error", "code") != tool.CodeCancelled {
		t.Errorf("A's result = %s; want cancelled", ra.Output)
	}
	noLocksHeld(t, h.a.Locks())
	if got := h.seq(); slices.Contains(got, "ToolCallCommitted:B") {
		t.Errorf("log = %v; B never held its locks and must not be committed", got)
	}
}

// Host tools run through their HostFunc, with the invocation id.
func TestHostTool(t *testing.T) {
	var gotID string
	host, err := tool.NewHostTool(tool.HostDef{
		LLM: tool.LLMTool{Name: "choir.web.browse", Description: "Browse.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`)},
		Runtime: tool.Runtime{Timeout: time.Minute, SideEffect: tool.SideEffectRead, Exposure: tool.ExposeBoth, Version: "1",
			Locks: []tool.LockReq{{Key: "browser_tab", Mode: "X"}}},
	}, func(ctx context.Context, name, callID string, input json.RawMessage) (json.RawMessage, error) {
		gotID = callID
		return json.RawMessage(`{"status":"success","summary":"fetched","title":"Example"}`), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Config{}, host)
	out := h.submit(context.Background(), Proposal{ID: "web-1", Lane: lock.Edge, Tool: "choir.web.browse", Input: json.RawMessage(`{"url":"https://example.com"}`)})
	if out.Status != tool.StatusSuccess || field(t, out.Output, "title") != "Example" || gotID != "web-1" {
		t.Errorf("host call = %s (call id %q); want the host's result for web-1", out.Output, gotID)
	}
	e := h.waitEvent("committed", isEvent(ToolCallCommitted, "web-1"))
	if !strings.Contains(string(e.Payload), `"resource":"browser_tab"`) {
		t.Errorf("ToolCallCommitted = %s; want browser_tab", e.Payload)
	}
}

// The chain verifies from the events alone, also after a JSON round trip
// that reorders payload members (as jsonb does), and any change breaks it.
func TestHashChain(t *testing.T) {
	h := newHarness(t, Config{})
	ctx := context.Background()
	if _, err := h.a.Record(ctx, lock.Edge, UserMsg, UserMsgPayload{Text: "hi <there> & \u2028 é"}); err != nil {
		t.Fatal(err)
	}
	h.submit(ctx, Proposal{ID: "w", Lane: lock.Edge, Tool: "choir.fs.write", Input: json.RawMessage(`{"content":"x","op":"create","path":"a"}`)})
	core, _ := lock.Core("job-1")
	if _, err := h.a.Record(ctx, core, CoreStarted, map[string]any{"job": "job-1", "z": 1.50, "a": []any{true, nil}}); err != nil {
		t.Fatal(err)
	}
	evs := h.a.Events(0)
	if err := Verify("", evs); err != nil {
		t.Fatalf("Verify = %v", err)
	}
	if evs[0].Hash == "" || evs[len(evs)-1].Lane != LaneCore {
		t.Errorf("events = %+v", evs)
	}
	// Heartbeat view: a suffix verifies from HashAt of its base.
	prev, ok := h.a.HashAt(2)
	if !ok || Verify(prev, h.a.Events(2)) != nil {
		t.Errorf("the suffix after rev 2 does not verify from HashAt(2)")
	}
	rev, head := h.a.Head()
	if rev != int64(len(evs)) || head != evs[len(evs)-1].Hash {
		t.Errorf("Head = %d %s", rev, head)
	}

	// Round trip through JSON with payload members reordered and spaced.
	wire, _ := json.Marshal(evs)
	var back []rpc.Event
	json.Unmarshal(wire, &back)
	for i := range back {
		var m map[string]json.RawMessage
		json.Unmarshal(back[i].Payload, &m)
		var b strings.Builder
		b.WriteString("{ ")
		keys := slices.Sorted(maps.Keys(m))
		slices.Reverse(keys)
		for j, k := range keys {
			if j > 0 {
				b.WriteString(" , ")
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteString(" : ")
			b.Write(m[k])
		}
		b.WriteString(" }")
		back[i].Payload = json.RawMessage(b.String())
	}
	if err := Verify("", back); err != nil {
		t.Errorf("Verify after a reordering round trip = %v", err)
	}

	tampered := slices.Clone(evs)
	tampered[1].Payload = json.RawMessage(strings.Replace(string(tampered[1].Payload), `"a"`, `"b"`, 1))
	if err := Verify("", tampered); err == nil {
		t.Error("Verify accepted a changed payload")
	}
	tampered = slices.Clone(evs)
	tampered[0].Time = tampered[0].Time.Add(1000)
	if err := Verify("", tampered); err == nil {
		t.Error("Verify accepted a changed time")
	}
	if err := Verify("", evs[1:]); err == nil {
		t.Error("Verify accepted a chain from the wrong genesis")
	}
}

// The arbiter writes its payloads in canonical form, so the stored bytes are
// what the hash covers.
func TestPayloadsAreCanonical(t *testing.T) {
	h := newHarness(t, Config{})
	ctx := context.Background()
	h.a.Record(ctx, lock.Edge, ModelOutput, ModelOutputPayload{Text: "t", ToolCalls: []ModelToolCall{{ID: "c", Name: "n", Arguments: "{}"}}})
	h.submit(ctx, Proposal{ID: "w", Lane: mustCore("j"), ToolCallID: "call", Tool: "choir.fs.write",
		Input: json.RawMessage(`{"path":"a","op":"create","content":"<x>"}`)})
	h.submit(ctx, Proposal{ID: "bad", Lane: lock.Edge, Tool: "choir.fs.write", Input: json.RawMessage(`{"path":`)})
	h.a.Record(ctx, lock.Edge, SkillTransition, SkillTransitionPayload{Skill: "s", From: "a", To: "b", On: "x", Status: "running", Reason: "r", ID: "i", Job: "j"})
	for _, e := range h.a.Events(0) {
		c, err := Canonical(e.Payload)
		if err != nil || string(c) != string(e.Payload) {
			t.Errorf("%s payload\n%s\nis not canonical; canonical is\n%s", e.Type, e.Payload, c)
		}
	}
}

func TestRecord(t *testing.T) {
	h := newHarness(t, Config{})
	ctx := context.Background()
	for _, typ := range []string{ToolCallRequested, ToolCallCommitted, ToolResultCommitted, "Whatever"} {
		if _, err := h.a.Record(ctx, lock.Edge, typ, struct{}{}); !errors.Is(err, ErrNotRecordable) {
			t.Errorf("Record(%s) = %v; want ErrNotRecordable", typ, err)
		}
	}
	if _, err := h.a.Record(ctx, "nobody", UserMsg, struct{}{}); err == nil {
		t.Error("Record with an invalid lane = nil error")
	}
	e, err := h.a.Record(ctx, "", Cancelled, map[string]string{"reason": "stop"})
	if err != nil || e.Rev != 1 || e.Lane != "" || string(e.Payload) != `{"reason":"stop"}` {
		t.Errorf("Record = %+v, %v", e, err)
	}
}

func TestClosed(t *testing.T) {
	h := newHarness(t, Config{})
	h.stop()
	ctx := context.Background()
	if _, err := h.a.Submit(ctx, Proposal{ID: "x", Lane: lock.Edge, Tool: "choir.fs.read", Input: json.RawMessage(`{"path":"a"}`)}); !errors.Is(err, ErrClosed) {
		t.Errorf("Submit after Run = %v; want ErrClosed", err)
	}
	if _, err := h.a.Record(ctx, lock.Edge, UserMsg, UserMsgPayload{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Record after Run = %v; want ErrClosed", err)
	}
}
