package lane

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/agent/arbiter"
	"choir/agent/skill"
	"choir/agent/tool"
	"choir/agent/tool/workspace"
	"choir/internal/openai"
	"choir/internal/rpc"
	"choir/testkit/openaitest"
)

// reviewSkill is a small skill with two working states and an end.
const reviewSkill = `{
  "name": "review",
  "description": "Read a file, then write a review of it.",
  "initial_state": "read",
  "max_steps": 8,
  "states": {
    "read":  {"objective": "Read the file under review.", "allowed_tools": ["choir.fs.read"],
              "transitions": [{"on": "complete", "to": "write"}]},
    "write": {"objective": "Write the review to review.txt.", "allowed_tools": ["choir.fs.write"],
              "transitions": [{"on": "done", "to": "finished"}, {"on": "reread", "to": "read"}]},
    "finished": {"terminal": true}
  }
}`

// shortSkill runs out of steps quickly.
const shortSkill = `{
  "name": "short",
  "description": "A skill with little room.",
  "initial_state": "look",
  "max_steps": 2,
  "states": {
    "look": {"objective": "Look around.", "allowed_tools": ["choir.fs.read"], "transitions": [{"on": "complete", "to": "end"}]},
    "end":  {"terminal": true}
  }
}`

// env is a lane over the real workspace tools in a temp workspace, the real
// arbiter, and either the fake model server or an in-process model.
type env struct {
	t      testing.TB
	ws     string
	a      *arbiter.Arbiter
	lane   *Lane
	model  *openaitest.Server
	notify []string
	mu     sync.Mutex
	set    Settings
}

type envOptions struct {
	skills bool
	model  ModelClient // nil: the fake server through the real client
	window int
	steps  int
	ident  Identity
}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	e := &env{t: t, ws: t.TempDir(), set: Settings{Model: "test-model", RateLimitWait: time.Millisecond}}
	reg, err := tool.Load(workspace.Tools(workspace.Options{NoRipgrep: true}), "", "")
	if err != nil {
		t.Fatal(err)
	}
	var skills *skill.Registry
	if o.skills {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "review.json"), []byte(reviewSkill), 0o644)
		os.WriteFile(filepath.Join(dir, "short.json"), []byte(shortSkill), 0o644)
		// The built-in skills name host tools that later issues register.
		known := func(n string) bool {
			return reg.Has(n) || strings.HasPrefix(n, "choir.memory.") || strings.HasPrefix(n, "choir.propose.")
		}
		if skills, err = skill.LoadDir(dir, known); err != nil {
			t.Fatal(err)
		}
	}
	e.a = arbiter.New(arbiter.Config{Tools: reg, Skills: skills, Workspace: e.ws})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	model := o.model
	if model == nil {
		e.model = openaitest.New(t)
		c, err := openai.New(openai.Config{Endpoint: e.model.URL(), APIKey: "sk-test"})
		if err != nil {
			t.Fatal(err)
		}
		model = c
	}
	e.lane, err = New(Config{
		Model:       model,
		Settings:    e.settings,
		Arbiter:     e.a,
		Tools:       reg,
		Skills:      skills,
		Identity:    o.ident,
		EventWindow: o.window,
		MaxSteps:    o.steps,
		Notify: func(msg string) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.notify = append(e.notify, msg)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) settings() Settings {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.set
}

func (e *env) write(rel, content string) {
	e.t.Helper()
	p := filepath.Join(e.ws, rel)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) read(rel string) string {
	b, _ := os.ReadFile(filepath.Join(e.ws, rel))
	return string(b)
}

// handle runs one turn and fails the test on an error.
func (e *env) handle(msg string) string {
	e.t.Helper()
	reply, err := e.lane.Handle(context.Background(), msg)
	if err != nil {
		e.t.Fatalf("Handle(%q) = %v", msg, err)
	}
	return reply
}

// events returns the committed events of one type.
func (e *env) events(typ string) []rpc.Event {
	var out []rpc.Event
	for _, ev := range e.a.Events(0) {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// want describes one message of a request: role and exact content, or
// content containing each of has. callID, when set, is the tool_call_id;
// calls, when set, the names of the tool calls.
type want struct {
	role, content string
	has           []string
	callID        string
	calls         []string
}

func sys(content string) want    { return want{role: "system", content: content} }
func user(content string) want   { return want{role: "user", content: content} }
func asst(content string) want   { return want{role: "assistant", content: content} }
func calls(names ...string) want { return want{role: "assistant", calls: names} }
func result(id string, has ...string) want {
	return want{role: "tool", callID: id, has: has}
}

// conversation checks a request's messages, in order.
func conversation(ws ...want) func(testing.TB, *openaitest.Request) {
	return func(t testing.TB, req *openaitest.Request) {
		t.Helper()
		got := req.Messages()
		if len(got) != len(ws) {
			t.Errorf("request %d: %d messages; want %d:\n%s", req.Number, len(got), len(ws), dump(got))
			return
		}
		for i, w := range ws {
			g := got[i]
			ok := g.Role == w.role
			if w.has == nil && w.calls == nil && g.Content != w.content {
				ok = false
			}
			for _, h := range w.has {
				if !strings.Contains(g.Content, h) {
					ok = false
				}
			}
			if w.callID != "" && g.ToolCallID != w.callID {
				ok = false
			}
			if w.calls != nil {
				var names []string
				for _, c := range g.ToolCalls {
					names = append(names, c.Name)
				}
				if strings.Join(names, ",") != strings.Join(w.calls, ",") {
					ok = false
				}
			}
			if !ok {
				t.Errorf("request %d: messages[%d] = %+v; want %+v\nall:\n%s", req.Number, i, g, w, dump(got))
			}
		}
	}
}

func dump(ms []openaitest.Message) string {
	var b strings.Builder
	for i, m := range ms {
		c := m.Content
		if len(c) > 120 {
			c = c[:120] + "…"
		}
		b.WriteString(strings.Repeat(" ", 2))
		b.WriteString(m.Role)
		if m.ToolCallID != "" {
			b.WriteString("(" + m.ToolCallID + ")")
		}
		for _, tc := range m.ToolCalls {
			b.WriteString(" call " + tc.Name + " " + tc.Arguments)
		}
		b.WriteString(": " + c + "\n")
		_ = i
	}
	return b.String()
}

// toolOutput decodes the content of the tool message answering id in the
// last request that has one.
func toolOutput(t *testing.T, s *openaitest.Server, id string) map[string]any {
	t.Helper()
	reqs := s.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		for _, m := range reqs[i].Messages() {
			if m.Role == "tool" && m.ToolCallID == id {
				var v map[string]any
				if err := json.Unmarshal([]byte(m.Content), &v); err != nil {
					t.Fatalf("tool message %s = %q: %v", id, m.Content, err)
				}
				return v
			}
		}
	}
	t.Fatalf("no tool message answers %s", id)
	return nil
}

func tc(id, name, args string) openaitest.ToolCall {
	return openaitest.ToolCall{ID: id, Name: name, Arguments: args}
}

// edgeTools are the wire names of the workspace tools, in the order offered.
var edgeTools = []string{"choir_exec", "choir_fs_read", "choir_fs_search", "choir_fs_write"}
