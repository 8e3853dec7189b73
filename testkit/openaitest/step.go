package openaitest

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
)

// Step is one scripted exchange: the request the server expects next, what
// to check in it, and how to answer. Build one with Chat or Embeddings, add
// checks (Want…, Check) and one reply (Reply…, Hang); the last reply set wins.
type Step struct {
	number int    // position in the script, set by Expect
	kind   string // "chat" or "embeddings"
	path   string
	what   string // the reply, for messages

	checks  []func(testing.TB, *Request)
	respond func(st *Step, w http.ResponseWriter, r *http.Request, req *Request, done <-chan struct{})
	usage   *usage
}

type usage struct{ prompt, completion int }

// Chat expects POST /v1/chat/completions. Unless told otherwise it answers
// with an empty text reply.
func Chat() *Step {
	return (&Step{kind: "chat", path: "/v1/chat/completions"}).ReplyText("")
}

// Embeddings expects POST /v1/embeddings. Unless told otherwise it answers
// with a 3-dimensional vector per input, [i, len(input i), 1], in order.
func Embeddings() *Step {
	st := &Step{kind: "embeddings", path: "/v1/embeddings", what: "default vectors"}
	st.respond = func(st *Step, w http.ResponseWriter, _ *http.Request, req *Request, _ <-chan struct{}) {
		var items []Embedding
		for i, in := range req.Inputs() {
			items = append(items, Embedding{Index: i, Vector: []float32{float32(i), float32(len(in)), 1}})
		}
		writeEmbeddings(w, st, req, items)
	}
	return st
}

func (st *Step) String() string {
	return fmt.Sprintf("step %d (%s, replying %s)", st.number, st.kind, st.what)
}

func (st *Step) matches(req *Request) bool { return req.Path == st.path }

// Check adds a check run on each request this step consumes. It runs on the
// server's goroutine: Fatal there marks the test failed without stopping it.
func (st *Step) Check(f func(t testing.TB, req *Request)) *Step {
	st.checks = append(st.checks, f)
	return st
}

// WantModel checks the model field.
func (st *Step) WantModel(model string) *Step {
	return st.Check(func(t testing.TB, req *Request) {
		t.Helper()
		if got := req.Model(); got != model {
			t.Errorf("openaitest: %s: model = %q; want %q", st, got, model)
		}
	})
}

// WantRoles checks the roles of the messages, in order.
func (st *Step) WantRoles(roles ...string) *Step {
	return st.Check(func(t testing.TB, req *Request) {
		t.Helper()
		var got []string
		for _, m := range req.Messages() {
			got = append(got, m.Role)
		}
		if !slices.Equal(got, roles) {
			t.Errorf("openaitest: %s: message roles = %q; want %q", st, got, roles)
		}
	})
}

// WantMessages checks the messages in order: role and content always, the
// tool_call_id when want's is set, and the tool calls when want has any.
func (st *Step) WantMessages(want ...Message) *Step {
	return st.Check(func(t testing.TB, req *Request) {
		t.Helper()
		got := req.Messages()
		if len(got) != len(want) {
			t.Errorf("openaitest: %s: %d messages %+v; want %d %+v", st, len(got), got, len(want), want)
			return
		}
		for i, w := range want {
			g := got[i]
			if g.Role != w.Role || g.Content != w.Content ||
				w.ToolCallID != "" && g.ToolCallID != w.ToolCallID ||
				len(w.ToolCalls) > 0 && !slices.Equal(g.ToolCalls, w.ToolCalls) {
				t.Errorf("openaitest: %s: messages[%d] = %+v; want %+v", st, i, g, w)
			}
		}
	})
}

// WantTools checks the names of the tools offered, in order.
func (st *Step) WantTools(names ...string) *Step {
	return st.Check(func(t testing.TB, req *Request) {
		t.Helper()
		if got := req.ToolNames(); !slices.Equal(got, names) {
			t.Errorf("openaitest: %s: tools = %q; want %q", st, got, names)
		}
	})
}

// WantTemperature checks that temperature is sent with value v.
func (st *Step) WantTemperature(v float64) *Step {
	return st.Check(func(t testing.TB, req *Request) {
		t.Helper()
		if got, ok := req.Temperature(); !ok || got != v {
			t.Errorf("openaitest: %s: temperature = %v (sent: %v); want %v", st, req.JSON["temperature"], req.Has("temperature"), v)
		}
	})
}

// WantNoTemperature checks that the temperature field is absent, not even null.
func (st *Step) WantNoTemperature() *Step { return st.WantAbsent("temperature") }

// WantReasoningEffort checks that reasoning_effort is sent with value v.
func (st *Step) WantReasoningEffort(v string) *Step {
	return st.Check(func(t testing.TB, req *Request) {
		t.Helper()
		if got, ok := req.ReasoningEffort(); !ok || got != v {
			t.Errorf("openaitest: %s: reasoning_effort = %v (sent: %v); want %q", st, req.JSON["reasoning_effort"], req.Has("reasoning_effort"), v)
		}
	})
}

// WantNoReasoningEffort checks that the reasoning_effort field is absent.
func (st *Step) WantNoReasoningEffort() *Step { return st.WantAbsent("reasoning_effort") }

// WantAbsent checks that a top-level field is absent from the body.
func (st *Step) WantAbsent(field string) *Step {
	return st.Check(func(t testing.TB, req *Request) {
		t.Helper()
		if req.Has(field) {
			t.Errorf("openaitest: %s: %s is sent as %v; want it absent", st, field, req.JSON[field])
		}
	})
}

// WantHeader checks a request header; value "" checks that it is absent.
func (st *Step) WantHeader(name, value string) *Step {
	return st.Check(func(t testing.TB, req *Request) {
		t.Helper()
		got, sent := req.Header.Get(name), len(req.Header.Values(name)) > 0
		switch {
		case value == "" && sent:
			t.Errorf("openaitest: %s: header %s is sent (%d bytes); want it absent", st, name, len(got))
		case value != "" && got != value:
			t.Errorf("openaitest: %s: header %s differs from the expected value (sent: %v)", st, name, sent)
		}
	})
}

// WantInputs checks an embeddings request's inputs, in order.
func (st *Step) WantInputs(inputs ...string) *Step {
	return st.Check(func(t testing.TB, req *Request) {
		t.Helper()
		if got := req.Inputs(); !slices.Equal(got, inputs) {
			t.Errorf("openaitest: %s: input = %q; want %q", st, got, inputs)
		}
	})
}
