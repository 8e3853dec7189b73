package lane

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
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
	"choir/internal/config"
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
// arbiter, and either the fake model server or an in-process model. Run
// serves the lane until the test ends.
type env struct {
	t     testing.TB
	ws    string
	a     *arbiter.Arbiter
	lane  *Lane
	model *openaitest.Server
	stop  context.CancelFunc // stops Run: the session ends
	ran   chan error         // Run's result

	mu      sync.Mutex
	set     Settings
	notify  []string
	replies []Reply
	reports []report

	replyCh  chan Reply
	reportCh chan report
	notifyCh chan string
}

// report is one call of Config.Report.
type report struct{ job, kind, text string }

type envOptions struct {
	skills    bool
	model     ModelClient // nil: the fake server through the real client
	window    int
	steps     int
	ident     Identity
	laneTools bool          // register Tools(host): core jobs and working memory
	host      tool.HostFunc // the lane tools' EXECUTE_HOST_TOOL; nil: none
	budgets   config.Budgets
	percent   int         // compaction_threshold_percent
	ctxWindow int         // the model's context window
	compactor ModelClient // nil: compaction calls fail (prompts stay deterministic)
	coreModel ModelClient // nil: the edge's model
	coreSet   func() Settings
	// endSession receives Config.EndSession's reason; nil: not set.
	endSession func(reason string)
	log        *slog.Logger // Config.Log; nil discards
}

// failing is a model that refuses every call.
type failing struct{}

func (failing) Chat(context.Context, openai.ChatRequest) (*openai.ChatResponse, error) {
	return nil, errors.New("compaction is off in this test")
}

func (f failing) ChatWithRateLimitRetry(ctx context.Context, req openai.ChatRequest, _ openai.RateLimitRetry) (*openai.ChatResponse, error) {
	return f.Chat(ctx, req)
}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	e := &env{t: t, ws: t.TempDir(), set: Settings{Model: "test-model", RateLimitWait: time.Millisecond, ContextWindow: o.ctxWindow},
		replyCh: make(chan Reply, 4096), reportCh: make(chan report, 4096), notifyCh: make(chan string, 4096)}
	builtins := workspace.Tools(workspace.Options{NoRipgrep: true})
	if o.laneTools {
		builtins = append(builtins, Tools(o.host)...)
	}
	reg, err := tool.Load(builtins, "", "")
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
	if o.compactor == nil {
		o.compactor = failing{}
	}
	e.lane, err = New(Config{
		SessionID:                  "s-test",
		CompactionModel:            o.compactor,
		CoreModel:                  o.coreModel,
		CoreSettings:               o.coreSet,
		Model:                      model,
		Settings:                   e.settings,
		Arbiter:                    e.a,
		Tools:                      reg,
		Skills:                     skills,
		Identity:                   o.ident,
		EventWindow:                o.window,
		MaxSteps:                   o.steps,
		Budgets:                    o.budgets,
		CompactionThresholdPercent: o.percent,
		EndSession:                 o.endSession,
		Log:                        o.log,
		Notify: func(msg string) {
			e.mu.Lock()
			e.notify = append(e.notify, msg)
			e.mu.Unlock()
			e.notifyCh <- msg
		},
		Reply: func(r Reply) {
			e.mu.Lock()
			e.replies = append(e.replies, r)
			e.mu.Unlock()
			e.replyCh <- r
		},
		Report: func(job, kind, text string) {
			r := report{job, kind, text}
			e.mu.Lock()
			e.reports = append(e.reports, r)
			e.mu.Unlock()
			e.reportCh <- r
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	e.stop, e.ran = stop, make(chan error, 1)
	go func() { e.ran <- e.lane.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-e.ran })
	return e
}

// deadline bounds every wait of a test on a condition.
const deadline = 20 * time.Second

// nextReply waits for the next reply delivered through Config.Reply.
func (e *env) nextReply() Reply {
	e.t.Helper()
	select {
	case r := <-e.replyCh:
		return r
	case <-time.After(deadline):
		e.t.Fatal("no reply")
		return Reply{}
	}
}

// nextReport waits for the next core job report.
func (e *env) nextReport() report {
	e.t.Helper()
	select {
	case r := <-e.reportCh:
		return r
	case <-time.After(deadline):
		e.t.Fatal("no core report")
		return report{}
	}
}

// nextNotice waits for the next notice to the user.
func (e *env) nextNotice() string {
	e.t.Helper()
	select {
	case n := <-e.notifyCh:
		return n
	case <-time.After(deadline):
		e.t.Fatal("no notice")
		return ""
	}
}

// waitFor polls cond until it holds, failing the test at the deadline.
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// idle waits until the edge is idle again: FINALIZING -> IDLE follows the
// delivery of the reply.
func (e *env) idle() {
	e.t.Helper()
	e.waitFor("the edge to be idle", func() bool { return e.lane.State() == EdgeIdle })
}

// noLocks waits until no lock is held or awaited.
func (e *env) noLocks() {
	e.t.Helper()
	e.waitFor("every lock to be released", func() bool {
		s := e.a.Locks().Snapshot()
		return len(s.Held) == 0 && len(s.Waiting) == 0
	})
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
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	reply, err := e.lane.Handle(ctx, msg)
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
