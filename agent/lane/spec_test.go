package lane

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/agent/arbiter"
	"choir/internal/config"
	"choir/testkit/openaitest"
)

// ended records Config.EndSession's calls.
type ended struct {
	mu      sync.Mutex
	reasons []string
}

func (e *ended) end(reason string) {
	e.mu.Lock()
	e.reasons = append(e.reasons, reason)
	e.mu.Unlock()
}

func (e *ended) get() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.reasons...)
}

// waitRun waits for Run to return.
func (e *env) waitRun() error {
	e.t.Helper()
	select {
	case err := <-e.ran:
		e.ran <- err // for the cleanup
		return err
	case <-time.After(deadline):
		e.t.Fatal("Run did not return")
		return nil
	}
}

// An edge whose session budget is spent (design §7.6) tells the user that
// the session ends and how to start a new one, answers what was still
// queued with the same news, goes TERMINATED and ends the session with the
// budget as the reason.
func TestSpentSessionBudgetEndsTheSession(t *testing.T) {
	full := config.DefaultTunables().Budgets
	tests := []struct {
		name   string
		budget func(*config.Budgets)
		steps  func(e *env) []*openaitest.Step
		reply  string
		want   string
	}{
		{
			name:   "total_session_tokens",
			budget: func(b *config.Budgets) { b.TotalSessionTokens = 100 },
			steps: func(e *env) []*openaitest.Step {
				return []*openaitest.Step{openaitest.Chat().WithUsage(90, 20).
					Check(func(testing.TB, *openaitest.Request) { e.lane.Post(rpcMsg("m2", "and this?")) }).
					ReplyText("Hello.")}
			},
			reply: "Hello.", want: BudgetSessionTokens,
		},
		{
			name:   "max_tool_calls_per_session",
			budget: func(b *config.Budgets) { b.MaxToolCallsPerSession = 1 },
			steps: func(e *env) []*openaitest.Step {
				return []*openaitest.Step{
					openaitest.Chat().ReplyToolCalls(tc("r1", "choir_fs_read", `{"path":"a.txt"}`)),
					openaitest.Chat().Check(func(testing.TB, *openaitest.Request) { e.lane.Post(rpcMsg("m2", "and this?")) }).
						ReplyText("Read it."),
				}
			},
			reply: "Read it.", want: BudgetSessionTools,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := full
			tt.budget(&b)
			var end ended
			e := newEnv(t, envOptions{budgets: b, endSession: end.end})
			e.write("a.txt", "a")
			e.model.Expect(tt.steps(e)...)
			e.lane.Post(rpcMsg("m1", "hi"))
			if r := e.nextReply(); r.ReplyTo != "m1" || r.Error || r.Text != tt.reply {
				t.Errorf("reply to m1 = %+v; want %q", r, tt.reply)
			}
			notice := e.nextNotice()
			for _, part := range []string{tt.want, "session ends now", "/start", "choirctl agent start"} {
				if !strings.Contains(notice, part) {
					t.Errorf("notice = %q; want it to say %q", notice, part)
				}
			}
			if r := e.nextReply(); r.ReplyTo != "m2" || !r.Error || !strings.Contains(r.Text, "Not answered") || !strings.Contains(r.Text, tt.want) {
				t.Errorf("reply to the queued m2 = %+v; want an error saying the session ended", r)
			}
			if err := e.waitRun(); err != nil {
				t.Errorf("Run = %v; want nil (a clean end)", err)
			}
			if got := end.get(); len(got) != 1 || !strings.Contains(got[0], tt.want) || !strings.Contains(got[0], "budget") {
				t.Errorf("EndSession calls = %q; want one naming %s", got, tt.want)
			}
			if s := e.lane.State(); s != EdgeTerminated {
				t.Errorf("State() = %v; want EDGE_TERMINATED", s)
			}
			if e.lane.Post(rpcMsg("m3", "late")) {
				t.Error("Post after the end = true; want the message refused")
			}
			cancelled := e.events(arbiter.Cancelled)
			if n := len(cancelled); n == 0 || !strings.Contains(string(cancelled[n-1].Payload), tt.want) {
				t.Errorf("Cancelled events = %v; want the last to name %s", cancelled, tt.want)
			}
			if err := arbiter.Verify("", e.a.Events(0)); err != nil {
				t.Error(err)
			}
		})
	}
}

// per_step_skill_retries is the number of invalid proposals in a row a
// skill survives: the next one fails it.
func TestPerStepSkillRetries(t *testing.T) {
	for _, n := range []int{0, 3} {
		t.Run(map[int]string{0: "none", 3: "three"}[n], func(t *testing.T) {
			b := config.DefaultTunables().Budgets
			b.PerStepSkillRetries = n
			e := newEnv(t, envOptions{skills: true, budgets: b})
			steps := []*openaitest.Step{openaitest.Chat().ReplyToolCalls(tc("s1", "choir_skill_start", `{"skill":"review"}`))}
			for i := range n + 1 {
				steps = append(steps, openaitest.Chat().ReplyToolCalls(tc(fmt.Sprint("v", i), "choir_fs_write", `{"path":"x","op":"create","content":""}`)))
			}
			steps = append(steps, openaitest.Chat().WantTools(withStart...).ReplyText("Gave up."))
			e.model.Expect(steps...)
			if got := e.handle("review"); got != "Gave up." {
				t.Errorf("reply = %q", got)
			}
			for i := range n + 1 {
				v := toolOutput(t, e.model, fmt.Sprint("v", i))
				failed := i == n
				if v["kind"] != "forbidden_tool" || (v["skill_failed"] == true) != failed {
					t.Errorf("violation %d = %v; want skill_failed %v", i+1, v, failed)
				}
				if left, _ := v["retries_left"].(float64); int(left) != max(n-i-1, 0) {
					t.Errorf("violation %d retries_left = %v; want %d", i+1, v["retries_left"], max(n-i-1, 0))
				}
			}
			if e.lane.Skill() != nil {
				t.Error("the lane kept the failed skill")
			}
		})
	}
}

// tool_call_timeout_ms stops a call that runs longer, whatever its tool's
// own timeout; the model receives a timeout naming the limit.
func TestToolCallTimeout(t *testing.T) {
	b := config.DefaultTunables().Budgets
	b.ToolCallTimeoutMS = 100
	e := newEnv(t, envOptions{budgets: b})
	e.model.Expect(
		openaitest.Chat().ReplyToolCalls(tc("x1", "choir_exec", `{"command":"sleep 30; echo done > late.txt"}`)),
		openaitest.Chat().ReplyText("It took too long."),
	)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if got, err := e.lane.Handle(ctx, "run it"); err != nil || got != "It took too long." {
		t.Fatalf("Handle = %q, %v", got, err)
	}
	out := toolOutput(t, e.model, "x1")
	if errCode(out) != "timeout" || !strings.Contains(out["error"].(map[string]any)["message"].(string), "100ms") {
		t.Errorf("tool result = %v; want a timeout after 100ms", out)
	}
	if e.read("late.txt") != "" {
		t.Error("the command went on after its timeout")
	}
}
