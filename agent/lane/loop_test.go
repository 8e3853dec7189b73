package lane

import (
	"strings"
	"testing"

	"choir/agent/arbiter"
	"choir/internal/openai"
	"choir/testkit/openaitest"
)

// A model that proposes the same call again and again: the third is not
// run but answered loop_detected; the fourth ends the turn with a reply
// that says why, long before max_steps.
func TestLoopBreakerEndsTheTurn(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.write("a.txt", "alpha\n")
	read := func(id string) *openaitest.Step {
		return openaitest.Chat().ReplyToolCalls(tc(id, "choir_fs_read", `{"path":"a.txt"}`))
	}
	e.model.Expect(read("r1"), read("r2"), read("r3"), read("r4"))
	got := e.handle("what is in a.txt?")
	if !strings.Contains(got, "I stopped this turn") || !strings.Contains(got, "choir.fs.read was proposed with the same arguments 4 times in a row") {
		t.Errorf("reply = %q; want the loop breaker's report", got)
	}
	if out := toolOutput(t, e.model, "r3"); errCode(out) != arbiter.CodeLoopDetected {
		t.Errorf("third call's result = %v; want loop_detected", out)
	}
	if n := len(e.model.Requests()); n != 4 {
		t.Errorf("model calls = %d; want 4", n)
	}
	// The next message is a new turn: the same call runs again.
	e.model.Expect(read("r5"), openaitest.Chat().ReplyText("alpha"))
	if got := e.handle("and now?"); got != "alpha" {
		t.Errorf("next turn's reply = %q", got)
	}
	if out := toolOutput(t, e.model, "r5"); errCode(out) != "" {
		t.Errorf("first call of the next turn = %v; want it run", out)
	}
}

// Tool calls whose arguments are not JSON (§8.2) are bounded the same way,
// even when each is different.
func TestLoopBreakerUnparseableOutput(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.model.Expect(
		openaitest.Chat().ReplyToolCalls(tc("b1", "choir_fs_read", `{"path": "a.txt"`)),
		openaitest.Chat().ReplyToolCalls(tc("b2", "choir_fs_read", `{"path": a.txt}`)),
		openaitest.Chat().ReplyToolCalls(tc("b3", "choir_fs_read", `path=a.txt`)),
		openaitest.Chat().ReplyToolCalls(tc("b4", "choir_fs_read", `{{`)),
	)
	got := e.handle("read a.txt")
	if !strings.Contains(got, "I stopped this turn") || !strings.Contains(got, "tool calls in a row could not be used") {
		t.Errorf("reply = %q", got)
	}
	for id, want := range map[string]string{"b1": "invalid_input", "b2": "invalid_input", "b3": arbiter.CodeLoopDetected} {
		if out := toolOutput(t, e.model, id); errCode(out) != want {
			t.Errorf("%s's result = %v; want %s", id, out, want)
		}
	}
}

// A core job that repeats itself is terminated by the loop breaker and the
// user's report says why.
func TestLoopBreakerEndsTheJob(t *testing.T) {
	e, s := coreEnv(t, envOptions{})
	e.write("a.txt", "alpha\n")
	s.on("edge", use(SpawnTool, spawnArgs("spin", "read a.txt")), say("Started."))
	again := use("choir.fs.read", `{"path":"a.txt"}`)
	s.on("spin", again, again, again, again)
	e.handle("read a.txt in the background")
	r := e.nextReport()
	if r.kind != ReportTerminated || !strings.Contains(r.text, arbiter.CodeLoopHalted) || !strings.Contains(r.text, "the same arguments 4 times in a row") {
		t.Errorf("report = %+v; want terminated by the loop breaker", r)
	}
	reqs := s.requests("spin")
	if len(reqs) != 4 {
		t.Fatalf("the job made %d model calls; want 4", len(reqs))
	}
	last := reqs[3].Messages[len(reqs[3].Messages)-1]
	if last.Role != openai.RoleTool || !strings.Contains(last.Content, arbiter.CodeLoopDetected) {
		t.Errorf("the job's last prompt ends with %+v; want the loop_detected result", last)
	}
}
