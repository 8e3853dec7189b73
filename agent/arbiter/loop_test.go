package arbiter

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"choir/agent/lock"
	"choir/agent/tool"
)

// loopHarness is an arbiter with a counting tool, test.echo, whose result
// is its tag.
func loopHarness(t *testing.T, lim LoopLimits) (*harness, *atomic.Int64) {
	var ran atomic.Int64
	echo := &fakeTool{name: "test.echo", run: func(_ context.Context, in fakeInput, _ tool.Env) (tool.Result, error) {
		ran.Add(1)
		return tool.Success("echo "+in.Tag, nil), nil
	}}
	return newHarness(t, Config{Loops: func() LoopLimits { return lim }}, echo), &ran
}

// step records a model reply of the lane: the breaker's step boundary.
func (h *harness) step(owner lock.Owner) {
	h.t.Helper()
	if _, err := h.a.Record(context.Background(), owner, ModelOutput, map[string]any{"text": ""}); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) call(owner lock.Owner, id, name, input string) Outcome {
	return h.submit(context.Background(), Proposal{ID: id, Lane: owner, Tool: name, Input: json.RawMessage(input)})
}

func code(t *testing.T, out Outcome) string {
	t.Helper()
	if out.Status != tool.StatusError {
		return ""
	}
	c, _ := field(t, out.Output, "error", "code").(string)
	return c
}

// The same call three times in a row is refused (not run) with
// loop_detected; repeated at the next step, it halts the lane with
// loop_halted and Outcome.Halt saying why.
func TestLoopBreakerRepeats(t *testing.T) {
	h, ran := loopHarness(t, LoopLimits{Repeats: 3, StaleSteps: 100})
	same := `{"path":"a","tag":"x"}`
	for i := range 2 {
		h.step(lock.Edge)
		if out := h.call(lock.Edge, fmt.Sprint("e", i), "test.echo", same); out.Status != tool.StatusSuccess {
			t.Fatalf("call %d = %s; want it run", i+1, out.Output)
		}
	}
	h.step(lock.Edge)
	out := h.call(lock.Edge, "e2", "test.echo", `{"tag":"x","path":"a"}`) // the same, canonically
	if code(t, out) != CodeLoopDetected || out.Halt != "" {
		t.Fatalf("third call = %s (halt %q); want loop_detected", out.Output, out.Halt)
	}
	if msg := field(t, out.Output, "error", "message").(string); !strings.Contains(msg, "test.echo was proposed with the same arguments 3 times in a row") {
		t.Errorf("message = %q", msg)
	}
	if ran.Load() != 2 {
		t.Errorf("the tool ran %d times; want 2 (the repeat is not run)", ran.Load())
	}
	h.step(lock.Edge)
	out = h.call(lock.Edge, "e3", "test.echo", same)
	if code(t, out) != CodeLoopHalted || !strings.Contains(out.Halt, "4 times in a row") {
		t.Fatalf("fourth call = %s (halt %q); want loop_halted", out.Output, out.Halt)
	}
	// Another lane is not affected; a new turn starts afresh.
	if out := h.call(mustCore("j"), "c0", "test.echo", same); out.Status != tool.StatusSuccess {
		t.Errorf("a core's call = %s", out.Output)
	}
	if _, err := h.a.Record(context.Background(), lock.Edge, UserMsg, UserMsgPayload{Text: "again"}); err != nil {
		t.Fatal(err)
	}
	h.step(lock.Edge)
	if out := h.call(lock.Edge, "e4", "test.echo", same); out.Status != tool.StatusSuccess {
		t.Errorf("first call of a new turn = %s", out.Output)
	}
}

// A warning given at a step does not halt at the same step: the model has
// not seen it yet.
func TestLoopBreakerHaltsOnlyAfterTheModelWasTold(t *testing.T) {
	h, _ := loopHarness(t, LoopLimits{Repeats: 2, StaleSteps: 100})
	h.step(lock.Edge)
	same := `{"path":"a"}`
	want := []string{"", CodeLoopDetected, CodeLoopDetected}
	for i, w := range want {
		if got := code(t, h.call(lock.Edge, fmt.Sprint("e", i), "test.echo", same)); got != w {
			t.Errorf("call %d in one reply: code %q; want %q", i+1, got, w)
		}
	}
	h.step(lock.Edge)
	if got := code(t, h.call(lock.Edge, "e9", "test.echo", same)); got != CodeLoopHalted {
		t.Errorf("the repeat at the next step: code %q; want loop_halted", got)
	}
}

// Calls that cannot be used (§8.2), whatever they say, are bounded the
// same way: arguments that are not JSON, tools that do not exist.
func TestLoopBreakerUnusableCalls(t *testing.T) {
	h, _ := loopHarness(t, LoopLimits{Repeats: 3, StaleSteps: 100})
	bad := []struct{ name, input string }{
		{"test.echo", `{"path": "a"`},
		{"nope.tool", `{}`},
		{"test.echo", `not json at all`},
		{"test.echo", `{"path":`},
	}
	want := []string{tool.CodeInvalidInput, tool.CodeUnknownTool, CodeLoopDetected, CodeLoopHalted}
	for i, b := range bad {
		h.step(lock.Edge)
		out := h.call(lock.Edge, fmt.Sprint("b", i), b.name, b.input)
		if got := code(t, out); got != want[i] {
			t.Errorf("unusable call %d (%s %s): code %q; want %q", i+1, b.name, b.input, got, want[i])
		}
	}
	// A usable call between resets the count.
	h2, _ := loopHarness(t, LoopLimits{Repeats: 3, StaleSteps: 100})
	for i, c := range []struct{ name, input string }{{"nope", "{}"}, {"nope", "[]"}, {"test.echo", `{"path":"a"}`}, {"nope", "{"}, {"nope", "}"}} {
		h2.step(lock.Edge)
		if got := code(t, h2.call(lock.Edge, fmt.Sprint("u", i), c.name, c.input)); got == CodeLoopDetected || got == CodeLoopHalted {
			t.Errorf("call %d: %s; want no loop", i+1, got)
		}
	}
}

// Steps that get back only results the lane has had already trip the
// breaker after stale_steps of them, even when no call repeats the one
// before.
func TestLoopBreakerStaleSteps(t *testing.T) {
	h, ran := loopHarness(t, LoopLimits{Repeats: 100, StaleSteps: 3})
	core := mustCore("walker")
	if _, err := h.a.Record(context.Background(), core, CoreStarted, map[string]any{"job": "walker"}); err != nil {
		t.Fatal(err)
	}
	tags := []string{"a", "b", "a", "b", "a", "b"} // new, new, then known results
	for i, tag := range tags {
		h.step(core)
		out := h.call(core, fmt.Sprint("s", i), "test.echo", `{"path":"p","tag":"`+tag+`"}`)
		want := ""
		if i == 5 {
			want = CodeLoopDetected // steps 3, 4, 5 taught nothing
		}
		if got := code(t, out); got != want {
			t.Errorf("step %d: code %q; want %q (%s)", i+1, got, want, out.Output)
		}
	}
	if ran.Load() != 5 {
		t.Errorf("ran %d calls; want 5", ran.Load())
	}
	h.step(core)
	out := h.call(core, "s9", "test.echo", `{"path":"p","tag":"c"}`)
	if code(t, out) != CodeLoopHalted || !strings.Contains(out.Halt, "no tool result that was not known already") {
		t.Errorf("after the warning = %s (halt %q); want loop_halted", out.Output, out.Halt)
	}
	// A new result resets the count.
	h2, _ := loopHarness(t, LoopLimits{Repeats: 100, StaleSteps: 3})
	for i, tag := range []string{"a", "a2", "a", "a3", "a", "a4", "a"} {
		h2.step(lock.Edge)
		if got := code(t, h2.call(lock.Edge, fmt.Sprint("n", i), "test.echo", `{"path":"p","tag":"`+tag+`"}`)); got != "" {
			t.Errorf("step %d (%s): %s; want it run", i+1, tag, got)
		}
	}
}
