package lane

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"choir/agent/arbiter"
	"choir/agent/memory"
	"choir/internal/openai"
	"choir/internal/rpc"
	"choir/testkit/openaitest"
)

// A turn with several tool calls per reply over the real workspace tools:
// the prompt follows the edge layout at every step and the final text is
// the reply.
func TestTurnWithToolCalls(t *testing.T) {
	e := newEnv(t, envOptions{ident: Identity{UserMD: "Name: Ada.", SoulMD: "Be brief."}})
	e.write("notes/a.txt", "alpha\n")
	e.write("notes/b.txt", "beta\n")
	prefix := []want{sys(DefaultInstructions), sys("# USER.md\n\nName: Ada."), sys("# SOUL.md\n\nBe brief.")}
	with := func(ws ...want) []want { return append(slices.Clone(prefix), ws...) }

	e.model.Expect(
		// Turn 1: no tools needed.
		openaitest.Chat().WantModel("test-model").WantTools(edgeTools...).
			Check(conversation(with(user("hello"))...)).ReplyText("Hi Ada."),
		// Turn 2: list, then read both notes in one reply.
		openaitest.Chat().WantTools(edgeTools...).
			Check(conversation(with(user("hello"), asst("Hi Ada."), user("Summarise my notes into summary.txt."))...)).
			ReplyToolCalls(
				tc("call_ls", "choir_exec", `{"command":"ls notes"}`),
				tc("call_a", "choir_fs_read", `{"path":"notes/a.txt"}`),
				tc("call_b", "choir_fs_read", `{"path":"notes/b.txt"}`)),
		openaitest.Chat().
			Check(conversation(with(user("hello"), asst("Hi Ada."), user("Summarise my notes into summary.txt."),
				calls("choir_exec", "choir_fs_read", "choir_fs_read"),
				result("call_ls", "a.txt", "b.txt"), result("call_a", "alpha"), result("call_b", "beta"))...)).
			ReplyToolCalls(
				tc("call_w", "choir_fs_write", `{"path":"summary.txt","op":"create","content":"alpha, beta\n"}`),
				tc("call_check", "choir_fs_search", `{"pattern":"alpha","path":"."}`)),
		openaitest.Chat().
			Check(conversation(with(user("hello"), asst("Hi Ada."), user("Summarise my notes into summary.txt."),
				calls("choir_exec", "choir_fs_read", "choir_fs_read"),
				result("call_ls", "a.txt"), result("call_a", "alpha"), result("call_b", "beta"),
				calls("choir_fs_write", "choir_fs_search"),
				result("call_w", `"status":"success"`), result("call_check", "summary.txt"))...)).
			ReplyText("Done: summary.txt holds both notes."),
	)
	if got := e.handle("hello"); got != "Hi Ada." {
		t.Errorf("turn 1 reply = %q", got)
	}
	if got := e.handle("Summarise my notes into summary.txt."); got != "Done: summary.txt holds both notes." {
		t.Errorf("turn 2 reply = %q", got)
	}
	if got := e.read("summary.txt"); got != "alpha, beta\n" {
		t.Errorf("summary.txt = %q", got)
	}

	// The log says what happened, in order, and its chain verifies.
	var types []string
	for _, ev := range e.a.Events(0) {
		if ev.Type != arbiter.ToolCallRequested && ev.Type != arbiter.ToolCallCommitted {
			types = append(types, ev.Type)
		}
	}
	wantTypes := []string{"UserMsg", "ModelOutput", "UserMsg", "ModelOutput",
		"ToolResultCommitted", "ToolResultCommitted", "ToolResultCommitted", "ModelOutput",
		"ToolResultCommitted", "ToolResultCommitted", "ModelOutput"}
	if !slices.Equal(types, wantTypes) {
		t.Errorf("events = %v; want %v", types, wantTypes)
	}
	if err := arbiter.Verify("", e.a.Events(0)); err != nil {
		t.Errorf("Verify = %v", err)
	}
	// Invocation ids are made from the reply's revision.
	res := e.events(arbiter.ToolResultCommitted)
	var first arbiter.ResultCommitted
	json.Unmarshal(res[0].Payload, &first)
	if first.ID != "edge/4/0" || first.ToolCallID != "call_ls" || first.Tool != "choir.exec" {
		t.Errorf("first result = %+v; want edge/4/0 answering call_ls with choir.exec", first)
	}
}

// Arguments that are not JSON, and a tool that does not exist, get
// structured tool errors; the model corrects itself and the turn completes.
func TestMalformedArgumentsAndUnknownTool(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.write("a.txt", "hello\n")
	e.model.Expect(
		openaitest.Chat().ReplyToolCalls(
			tc("c1", "choir_fs_read", `{"path": "a.txt"`),
			tc("c2", "choir_secrets_dump", `{}`)),
		openaitest.Chat().Check(conversation(sys(DefaultInstructions), user("read a.txt"), calls("choir_fs_read", "choir_secrets_dump"),
			result("c1", `"code":"invalid_input"`, "not one JSON object"),
			result("c2", `"code":"unknown_tool"`))).
			ReplyToolCalls(tc("c3", "choir_fs_read", `{"path": "a.txt"}`)),
		openaitest.Chat().ReplyText("It says hello."),
	)
	if got := e.handle("read a.txt"); got != "It says hello." {
		t.Errorf("reply = %q", got)
	}
	unknown := toolOutput(t, e.model, "c2")
	msg := unknown["error"].(map[string]any)["message"].(string)
	for _, name := range []string{"choir.exec", "choir.fs", "choir_fs"} {
		if strings.Contains(msg, name) {
			t.Errorf("unknown_tool message %q names %s; it must list nothing", msg, name)
		}
	}
	if out := toolOutput(t, e.model, "c3"); out["status"] != "success" {
		t.Errorf("corrected call = %v", out)
	}
}

// Two turns where the first model call fails: the error is the reply and
// the next message is served normally, without the failure in its prompt.
func TestModelErrorThenRecovery(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.model.Expect(
		openaitest.Chat().ReplyError(500, "server_error", "", "the GPU caught fire"),
		openaitest.Chat().Check(conversation(sys(DefaultInstructions), user("first"), user("second"))).ReplyText("Back."),
	)
	reply, err := e.lane.Handle(context.Background(), "first")
	if err != nil || !strings.HasPrefix(reply, "the model failed: ") || !strings.Contains(reply, "the GPU caught fire") {
		t.Errorf("Handle = %q, %v; want the model's failure as the reply", reply, err)
	}
	if got := e.handle("second"); got != "Back." {
		t.Errorf("reply after the failure = %q", got)
	}
	outs := e.events(arbiter.ModelOutput)
	var failed arbiter.ModelOutputPayload
	json.Unmarshal(outs[0].Payload, &failed)
	if failed.Error == "" || failed.Text != reply {
		t.Errorf("failed ModelOutput = %+v; want the error and the reply", failed)
	}
}

// A 429 is retried once after telling the user, once.
func TestRateLimitedThenSuccess(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.model.Expect(
		openaitest.Chat().ReplyRateLimited(""),
		openaitest.Chat().ReplyText("Sorry for the wait."),
	)
	if got := e.handle("hi"); got != "Sorry for the wait." {
		t.Errorf("reply = %q", got)
	}
	if len(e.notify) != 1 || !strings.Contains(e.notify[0], "rate-limited") {
		t.Errorf("notifications = %q; want one about the rate limit", e.notify)
	}
	// A second 429 in a row is the turn's error.
	e.model.Expect(openaitest.Chat().ReplyRateLimited(""), openaitest.Chat().ReplyRateLimited(""))
	if got := e.handle("again"); !strings.HasPrefix(got, "the model failed: ") || !strings.Contains(got, "rate") {
		t.Errorf("reply after two 429s = %q", got)
	}
	if len(e.notify) != 2 {
		t.Errorf("notifications = %q; want one per rate-limited call", e.notify)
	}
}

// The settings are read before every call.
func TestSettingsPerCall(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.write("a.txt", "x\n")
	temp, effort := 0.2, "high"
	e.model.Expect(
		openaitest.Chat().WantModel("test-model").WantNoTemperature().WantNoReasoningEffort().
			ReplyToolCalls(tc("c1", "choir_fs_read", `{"path":"a.txt"}`)),
		openaitest.Chat().WantModel("other-model").WantTemperature(0.2).WantReasoningEffort("high").ReplyText("ok"),
	)
	e.lane.cfg.Settings = func() Settings {
		// Switch settings after the first call.
		if len(e.model.Requests()) == 0 {
			return Settings{Model: "test-model"}
		}
		return Settings{Model: "other-model", Temperature: &temp, ReasoningEffort: &effort}
	}
	if got := e.handle("go"); got != "ok" {
		t.Errorf("reply = %q", got)
	}
}

// The window shows the last EventWindow events, never a tool result
// without its call.
func TestEventWindow(t *testing.T) {
	e := newEnv(t, envOptions{window: 2})
	e.write("a.txt", "x\n")
	e.model.Expect(
		openaitest.Chat().ReplyToolCalls(tc("c1", "choir_fs_read", `{"path":"a.txt"}`)),
		openaitest.Chat().ReplyText("one"),
		// The last two events before "2" are c1's result and "one": the
		// result's call rolled out, so the result goes too.
		openaitest.Chat().Check(conversation(sys(DefaultInstructions), asst("one"), user("2"))).ReplyText("two"),
		openaitest.Chat().Check(conversation(sys(DefaultInstructions), user("2"), asst("two"), user("3"))).ReplyText("three"),
	)
	for _, m := range []string{"1", "2", "3"} {
		e.handle(m)
	}
}

func TestPairCalls(t *testing.T) {
	call := func(ids ...string) memory.Entry {
		var cs []openai.ToolCall
		for _, id := range ids {
			cs = append(cs, openai.ToolCall{ID: id, Name: "n"})
		}
		return memory.Entry{Msg: openai.AssistantMessage("", cs...)}
	}
	res := func(id string) memory.Entry { return memory.Entry{Msg: openai.ToolMessage(id, "r"+id)} }
	usr := func(s string) memory.Entry { return memory.Entry{Msg: openai.UserMessage(s)} }
	got := pairCalls(nil, []memory.Entry{res("old"), usr("u"), call("a", "b"), res("b"), usr("v"), call("c"), res("c"), call("d")})
	var s []string
	for _, m := range got {
		switch {
		case m.Role == "tool" && m.Content == missingResult:
			s = append(s, "missing:"+m.ToolCallID)
		case m.Role == "tool":
			s = append(s, "tool:"+m.ToolCallID)
		case len(m.ToolCalls) > 0:
			s = append(s, "calls")
		default:
			s = append(s, m.Role+":"+m.Content)
		}
	}
	want := []string{"user:u", "calls", "tool:b", "missing:a", "user:v", "calls", "tool:c", "calls", "missing:d"}
	if !slices.Equal(s, want) {
		t.Errorf("pairCalls = %v; want %v", s, want)
	}
	// A note committed between a call and its result waits for the result.
	got = pairCalls(nil, []memory.Entry{call("a"), usr("core ended"), res("a"), usr("next")})
	s = s[:0]
	for _, m := range got {
		s = append(s, m.Role+":"+m.Content)
	}
	want = []string{"assistant:", "tool:ra", "user:core ended", "user:next"}
	if !slices.Equal(s, want) {
		t.Errorf("pairCalls with a note = %v; want %v", s, want)
	}
}

// Stopping the session while the model thinks ends the turn: Handle learns
// that the lane stopped, the cancellation is recorded, the edge is
// TERMINATED and takes no more messages.
func TestSessionStopsMidTurn(t *testing.T) {
	e := newEnv(t, envOptions{})
	arrived := make(chan struct{})
	e.model.Expect(openaitest.Chat().Check(func(testing.TB, *openaitest.Request) { close(arrived) }).Hang())
	done := make(chan error, 1)
	go func() {
		_, err := e.lane.Handle(context.Background(), "slow")
		done <- err
	}()
	<-arrived
	e.stop()
	if err := <-done; !errors.Is(err, ErrStopped) {
		t.Errorf("Handle = %v; want ErrStopped", err)
	}
	if err := <-e.ran; err != nil {
		t.Errorf("Run = %v; want nil (a clean stop)", err)
	}
	e.ran <- nil // for the cleanup
	if len(e.events(arbiter.Cancelled)) != 1 {
		t.Errorf("events = %v; want one Cancelled", e.a.Events(0))
	}
	if got := e.lane.State(); got != EdgeTerminated {
		t.Errorf("State = %v; want EDGE_TERMINATED", got)
	}
	if e.lane.Post(rpc.UserMessage{Text: "more"}) {
		t.Error("Post after the stop = true")
	}
}

// A model that never stops calling tools is stopped after MaxSteps calls.
func TestMaxSteps(t *testing.T) {
	e := newEnv(t, envOptions{steps: 2})
	e.write("a.txt", "x\n")
	e.model.Expect(
		openaitest.Chat().ReplyToolCalls(tc("c1", "choir_fs_read", `{"path":"a.txt"}`)),
		openaitest.Chat().ReplyToolCalls(tc("c2", "choir_fs_read", `{"path":"a.txt"}`)),
	)
	if got := e.handle("loop"); !strings.Contains(got, "stopped after 2 model calls") {
		t.Errorf("reply = %q", got)
	}
	// The next turn shows the cut turn with its results, and goes on.
	e.model.Expect(openaitest.Chat().Check(conversation(sys(DefaultInstructions), user("loop"),
		calls("choir_fs_read"), result("c1", "x"), calls("choir_fs_read"), result("c2", "x"), user("next"))).ReplyText("ok"))
	if got := e.handle("next"); got != "ok" {
		t.Errorf("reply = %q", got)
	}
}
