package lane

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"choir/agent/arbiter"
	"choir/testkit/openaitest"
)

// withStart is what a lane that can start skills is offered at every call,
// whatever the skill's state: its tools, then the three control tools.
var withStart = append(slices.Clone(edgeTools), "choir_skill_start", "choir_skill_transition", "choir_skill_finish")

// systemHas checks that the system prompt holds each part.
func systemHas(parts ...string) func(testing.TB, *openaitest.Request) {
	return func(t testing.TB, req *openaitest.Request) {
		t.Helper()
		sys := req.Messages()[0].Content
		for _, p := range parts {
			if !strings.Contains(sys, p) {
				t.Errorf("request %d: system prompt lacks %q:\n%s", req.Number, p, sys)
			}
		}
	}
}

// noteHas checks that the request ends with the state note holding each
// part: where the model reads the skill's state now.
func noteHas(parts ...string) func(testing.TB, *openaitest.Request) {
	return func(t testing.TB, req *openaitest.Request) {
		t.Helper()
		ms := req.Messages()
		last := ms[len(ms)-1]
		if last.Role != "user" || !strings.HasPrefix(last.Content, "[choir] Now: ") {
			t.Errorf("request %d: last message = %+v; want the state note", req.Number, last)
			return
		}
		for _, p := range parts {
			if !strings.Contains(last.Content, p) {
				t.Errorf("request %d: state note lacks %q:\n%s", req.Number, p, last.Content)
			}
		}
	}
}

// transitions lists the SkillTransition events as "on:from->to:status".
func transitions(e *env) []string {
	var out []string
	for _, ev := range e.events(arbiter.SkillTransition) {
		var p arbiter.SkillTransitionPayload
		json.Unmarshal(ev.Payload, &p)
		out = append(out, p.On+":"+p.From+"->"+p.To+":"+p.Status)
	}
	return out
}

// A skill run through all its states: each step names the state's
// objective, allowed tools and transitions in the state note that ends the
// request, while the system prompt and the tools offered stay the same.
func TestSkillRunsThroughItsStates(t *testing.T) {
	e := newEnv(t, envOptions{skills: true})
	e.write("a.txt", "some text\n")
	e.model.Expect(
		openaitest.Chat().WantTools(withStart...).
			Check(systemHas("Skills you can start with choir.skill.start:", "- review: Read a file, then write a review of it.", "- short: ")).
			ReplyToolCalls(tc("s1", "choir_skill_start", `{"skill":"review"}`)),
		openaitest.Chat().WantTools(withStart...).
			Check(noteHas("The skill review is running, in the state read.", "Objective: Read the file under review.",
				"Tools allowed in this state: choir.fs.read.", "choir.skill.transition with one of: complete.")).
			ReplyToolCalls(tc("r1", "choir_fs_read", `{"path":"a.txt"}`)),
		openaitest.Chat().WantTools(withStart...).
			ReplyToolCalls(tc("t1", "choir_skill_transition", `{"on":"complete"}`)),
		openaitest.Chat().WantTools(withStart...).
			Check(noteHas("in the state write.", "Objective: Write the review to review.txt.", "Tools allowed in this state: choir.fs.write.", "one of: done, reread.")).
			ReplyToolCalls(tc("w1", "choir_fs_write", `{"path":"review.txt","op":"create","content":"Fine text.\n"}`)),
		openaitest.Chat().WantTools(withStart...).
			ReplyToolCalls(tc("t2", "choir_skill_transition", `{"on":"done"}`)),
		openaitest.Chat().WantTools(withStart...).
			Check(func(t testing.TB, req *openaitest.Request) {
				for _, m := range req.Messages() {
					if strings.HasPrefix(m.Content, "[choir] Now: ") {
						t.Errorf("the request after the skill ended still has a state note: %q", m.Content)
					}
				}
			}).
			ReplyText("Reviewed: see review.txt."),
	)
	if got := e.handle("Review a.txt please."); got != "Reviewed: see review.txt." {
		t.Errorf("reply = %q", got)
	}
	// The first message is the same at every call: a provider's prefix
	// cache serves it whatever the skill's state.
	reqs := e.model.Requests()
	for _, r := range reqs[1:] {
		if r.Messages()[0].Content != reqs[0].Messages()[0].Content {
			t.Errorf("request %d: the system message changed:\n%q\nwant\n%q", r.Number, r.Messages()[0].Content, reqs[0].Messages()[0].Content)
		}
	}
	if got := e.read("review.txt"); got != "Fine text.\n" {
		t.Errorf("review.txt = %q", got)
	}
	start := toolOutput(t, e.model, "s1")
	if start["state"] != "read" || start["objective"] != "Read the file under review." {
		t.Errorf("start result = %v", start)
	}
	if out := toolOutput(t, e.model, "t2"); out["skill_status"] != "done" {
		t.Errorf("last transition = %v; want the skill done", out)
	}
	want := []string{"start:->read:running", "complete:read->write:running", "done:write->finished:done"}
	if got := transitions(e); !slices.Equal(got, want) {
		t.Errorf("transitions = %v; want %v", got, want)
	}
	if e.lane.Skill() != nil {
		t.Error("the lane still has a skill after it finished")
	}
	if err := arbiter.Verify("", e.a.Events(0)); err != nil {
		t.Error(err)
	}
}

// A forbidden tool or an invalid transition gets the violation, listing
// the allowed tools and transitions; exhausting the retry budget ends the
// skill and the lane offers its usual tools again.
func TestSkillViolations(t *testing.T) {
	e := newEnv(t, envOptions{skills: true})
	e.model.Expect(
		openaitest.Chat().ReplyToolCalls(tc("s1", "choir_skill_start", `{"skill":"review"}`)),
		openaitest.Chat().ReplyToolCalls(tc("v1", "choir_fs_write", `{"path":"x","op":"create","content":""}`)),
		openaitest.Chat().WantTools(withStart...).
			ReplyToolCalls(tc("v2", "choir_skill_transition", `{"on":"done"}`)),
		openaitest.Chat().ReplyToolCalls(tc("v3", "choir_skill_start", `{"skill":"short"}`)),
		openaitest.Chat().WantTools(withStart...).ReplyText("I could not follow the skill."),
	)
	if got := e.handle("review something"); got != "I could not follow the skill." {
		t.Errorf("reply = %q", got)
	}
	v1 := toolOutput(t, e.model, "v1")
	if v1["kind"] != "forbidden_tool" || !equalList(v1["allowed_tools"], "choir.fs.read") ||
		!equalList(v1["valid_transitions"], "complete") || v1["state"] != "read" || v1["skill"] != "review" {
		t.Errorf("forbidden tool violation = %v", v1)
	}
	v2 := toolOutput(t, e.model, "v2")
	if v2["kind"] != "invalid_transition" || !equalList(v2["valid_transitions"], "complete") {
		t.Errorf("invalid transition violation = %v", v2)
	}
	v3 := toolOutput(t, e.model, "v3")
	if v3["kind"] != "forbidden_tool" || v3["skill_failed"] != true {
		t.Errorf("third violation = %v; want the skill failed", v3)
	}
	want := []string{"start:->read:running", "fail:read->read:failed"}
	if got := transitions(e); !slices.Equal(got, want) {
		t.Errorf("transitions = %v; want %v", got, want)
	}
	if e.lane.Skill() != nil {
		t.Error("the lane kept a failed skill")
	}
	// Nothing forbidden ran.
	if e.read("x") != "" {
		t.Error("the forbidden write happened")
	}
}

// A skill past its max_steps fails; the model is told and gets the usual
// tools back.
func TestSkillMaxSteps(t *testing.T) {
	e := newEnv(t, envOptions{skills: true})
	e.write("a.txt", "x\n")
	read := func(id string) *openaitest.Step {
		return openaitest.Chat().WantTools(withStart...).
			ReplyToolCalls(tc(id, "choir_fs_read", `{"path":"a.txt"}`))
	}
	e.model.Expect(
		openaitest.Chat().ReplyToolCalls(tc("s1", "choir_skill_start", `{"skill":"short"}`)),
		read("r1"), read("r2"),
		openaitest.Chat().WantTools(withStart...).
			Check(func(t testing.TB, req *openaitest.Request) {
				ms := req.Messages()
				last := ms[len(ms)-1]
				if last.Role != "user" || !strings.Contains(last.Content, "The skill short ended with the status failed") ||
					!strings.Contains(last.Content, "max_steps") {
					t.Errorf("last message = %+v; want the note that the skill failed", last)
				}
			}).
			ReplyText("The skill ran out of steps."),
	)
	if got := e.handle("look around"); got != "The skill ran out of steps." {
		t.Errorf("reply = %q", got)
	}
	want := []string{"start:->look:running", "fail:look->look:failed"}
	if got := transitions(e); !slices.Equal(got, want) {
		t.Errorf("transitions = %v; want %v", got, want)
	}
}

func equalList(v any, want ...string) bool {
	l, ok := v.([]any)
	if !ok || len(l) != len(want) {
		return false
	}
	for i := range l {
		if l[i] != want[i] {
			return false
		}
	}
	return true
}
