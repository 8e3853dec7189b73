package assembly

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"choir/internal/config"
	"choir/internal/rpc"
	"choir/testkit/openaitest"
)

// twoModels is a config whose edge model "main" (on first) falls back to
// "backup" (on second) when fallback is set, each with its own key.
func twoModels(first, second *openaitest.Server, fallback bool) *lanesChoird {
	main := config.Model{Provider: "openai", Model: "main-model", Endpoint: first.URL(), Secret: "main-key"}
	if fallback {
		main.Fallback = []string{"backup"}
	}
	c := newLanesChoird(map[string]config.Model{
		"main":   main,
		"backup": {Provider: "openai", Model: "backup-model", Endpoint: second.URL(), Secret: "backup-key", Temperature: config.Null[float64]()},
	}, "main", "", map[string]string{"main-key": "sk-main-1111", "backup-key": "sk-backup-2222"})
	c.dyn.Tunables.RateLimitRetryMS = 1
	return c
}

func (c *lanesChoird) notices() []string {
	var out []string
	for _, m := range c.dms() {
		if m.Kind == rpc.DMNotice {
			out = append(out, m.Text)
		}
	}
	return out
}

// A model answering 503, 504, or 429 twice (§7.7's retry included) is
// answered by its fallback, with the fallback's model id, settings and key,
// and the DM is told which model failed and which answered.
func TestFallbackAnswersWhenTheModelFails(t *testing.T) {
	for _, tt := range []struct {
		name  string
		fails []*openaitest.Step
		why   string
	}{
		{"503", []*openaitest.Step{openaitest.Chat().ReplyError(503, "server_error", "", "overloaded")}, "HTTP 503"},
		{"504", []*openaitest.Step{openaitest.Chat().ReplyError(504, "", "", "gateway timeout")}, "HTTP 504"},
		{"error in a 200", []*openaitest.Step{openaitest.Chat().ReplyRaw(200, `{"error":{"message":"upstream died","code":502}}`)}, "main failed"},
		{"429 twice", []*openaitest.Step{openaitest.Chat().ReplyRateLimited("0"), openaitest.Chat().ReplyRateLimited("0")}, "rate-limited"},
		{"timeout", []*openaitest.Step{openaitest.Chat().Hang()}, "timeout"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			first, second := openaitest.New(t), openaitest.New(t)
			c := twoModels(first, second, true)
			c.dyn.Tunables.Budgets.LLMCallTimeoutMS = 1000 // the hanging model's limit, and the fallback's own
			first.Expect(tt.fails...)
			second.Expect(openaitest.Chat().WantModel("backup-model").WantNoTemperature().ReplyText("Backup here."))
			srv, _ := runLanes(t, c)
			srv.Publish("s-1", rpc.EventUserMessage, rpc.UserMessage{ID: "m1", From: "console", Text: "hi"})
			if r := c.waitDM(t, rpc.DMReply); r.Text != "Backup here." {
				t.Errorf("reply = %+v; want the fallback's answer", r)
			}
			var told []string
			for _, n := range c.notices() {
				if strings.Contains(n, "fallback") {
					told = append(told, n)
				}
			}
			if len(told) != 1 || !strings.Contains(told[0], "main failed") || !strings.Contains(told[0], "backup answered") || !strings.Contains(told[0], tt.why) {
				t.Errorf("fallback notices = %q; want one naming main, why (%s) and backup", told, tt.why)
			}
			if reqs := second.Requests(); len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer sk-backup-2222" {
				t.Errorf("the fallback got %d requests; want one with its own key", len(reqs))
			}
		})
	}
}

// Without a fallback list §7.7 is as it was: one call, the error as the
// reply, nothing else called. With one, a failure that a fallback cannot
// mend (a refused request, a bad key) is not retried elsewhere either, and
// a fallback outside the config is never called.
func TestNoFallbackWhereNoneApplies(t *testing.T) {
	for _, tt := range []struct {
		name     string
		fallback bool
		fail     *openaitest.Step
		models   func(c *lanesChoird)
	}{
		{"no fallback configured", false, openaitest.Chat().ReplyError(503, "server_error", "", "overloaded"), nil},
		{"400", true, openaitest.Chat().ReplyError(400, "invalid_request_error", "", "bad request"), nil},
		{"401", true, openaitest.Chat().ReplyError(401, "auth", "", "bad key"), nil},
		{"fallback not in the config", true, openaitest.Chat().ReplyError(503, "server_error", "", "overloaded"), func(c *lanesChoird) {
			m := c.dyn.Models["main"]
			m.Fallback = []string{"ghost"}
			c.dyn.Models["main"] = m
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			first, second := openaitest.New(t), openaitest.New(t)
			c := twoModels(first, second, tt.fallback)
			if tt.models != nil {
				tt.models(c)
			}
			first.Expect(tt.fail)
			srv, _ := runLanes(t, c)
			srv.Publish("s-1", rpc.EventUserMessage, rpc.UserMessage{ID: "m1", From: "console", Text: "hi"})
			if r := c.waitDM(t, rpc.DMError); !strings.Contains(r.Text, "the model failed") {
				t.Errorf("error reply = %+v; want §7.7's model error", r)
			}
			if n := len(first.Requests()); n != 1 {
				t.Errorf("the model got %d requests; want 1 (no retry)", n)
			}
			if n := len(second.Requests()); n != 0 {
				t.Errorf("the other model got %d requests; want none", n)
			}
			for _, n := range c.notices() {
				if strings.Contains(n, "fallback") {
					t.Errorf("notice %q; want no fallback notice", n)
				}
			}
		})
	}
}

// A turn whose every call needs the fallback tells the DM once; the next
// turn tells it again.
func TestFallbackNoticeOncePerTurn(t *testing.T) {
	first, second := openaitest.New(t), openaitest.New(t)
	c := twoModels(first, second, true)
	down := func() *openaitest.Step { return openaitest.Chat().ReplyError(503, "server_error", "", "overloaded") }
	first.Expect(down(), down(), down())
	second.Expect(
		openaitest.Chat().ReplyToolCalls(openaitest.ToolCall{ID: "c1", Name: "choir_core_list", Arguments: `{}`}),
		openaitest.Chat().ReplyText("One."),
		openaitest.Chat().ReplyText("Two."),
	)
	srv, _ := runLanes(t, c)
	srv.Publish("s-1", rpc.EventUserMessage, rpc.UserMessage{ID: "m1", From: "console", Text: "first"})
	if r := c.waitDM(t, rpc.DMReply); r.Text != "One." {
		t.Fatalf("reply = %+v", r)
	}
	count := func() int {
		n := 0
		for _, t := range c.notices() {
			if strings.Contains(t, "fallback backup answered") {
				n++
			}
		}
		return n
	}
	if n := count(); n != 1 {
		t.Errorf("after a turn of two calls through the fallback: %d notices; want 1", n)
	}
	srv.Publish("s-1", rpc.EventUserMessage, rpc.UserMessage{ID: "m2", From: "console", Text: "second"})
	c.waitFor(t, "the second reply", func() bool { return len(c.replies()) == 2 })
	if n := count(); n != 2 {
		t.Errorf("after the second turn: %d notices; want 2", n)
	}
}

func (c *lanesChoird) replies() []string {
	var out []string
	for _, m := range c.dms() {
		if m.Kind == rpc.DMReply {
			out = append(out, m.Text)
		}
	}
	return out
}

// A model's request template reaches the wire (body fields, literal
// headers, a header holding a named secret in its format), follows a
// config change at the next call, and the secret never reaches the log.
func TestRequestTemplateOnTheWire(t *testing.T) {
	model := openaitest.New(t)
	m := config.Model{Provider: "openrouter", Model: "test-model", Endpoint: model.URL(), Request: &config.ModelRequest{
		Body: map[string]json.RawMessage{"provider": json.RawMessage(`{"order":["openai"]}`), "usage": json.RawMessage(`{"include":true}`)},
		Headers: map[string]config.HeaderValue{
			"X-Title":       {Value: "choir"},
			"Authorization": {Secret: "gw-key", Format: "Token %s"},
		},
	}}
	c := newLanesChoird(map[string]config.Model{"m": m}, "m", "", map[string]string{"gw-key": "tok-SECRET-7777"})
	model.Expect(openaitest.Chat().ReplyText("One."), openaitest.Chat().ReplyText("Two."))
	srv, sess, logs := runtimeFor(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sess.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	srv.Publish("s-1", rpc.EventUserMessage, rpc.UserMessage{ID: "m1", From: "console", Text: "hi"})
	c.waitDM(t, rpc.DMReply)
	r := model.Requests()[0]
	if p, _ := r.JSON["provider"].(map[string]any); p == nil || len(p["order"].([]any)) != 1 {
		t.Errorf("provider = %v; want the template's", r.JSON["provider"])
	}
	if u, _ := r.JSON["usage"].(map[string]any); u["include"] != true {
		t.Errorf("usage = %v; want the template's", r.JSON["usage"])
	}
	if got := r.Header.Get("X-Title"); got != "choir" {
		t.Errorf("X-Title = %q", got)
	}
	if got := r.Header.Get("Authorization"); got != "Token tok-SECRET-7777" {
		t.Errorf("Authorization = %q; want the secret in its format", got)
	}

	// Hot reload: the next call sends the new template.
	d := c.dyn
	nm := d.Models["m"]
	nm.Request = &config.ModelRequest{Headers: map[string]config.HeaderValue{"X-Title": {Value: "choir-2"}}}
	d.Models = map[string]config.Model{"m": nm}
	c.setDynamic(d)
	c.waitFor(t, "the agent to fetch config version 2", func() bool { return sess.ConfigVersion() >= 2 })
	srv.Publish("s-1", rpc.EventUserMessage, rpc.UserMessage{ID: "m2", From: "console", Text: "again"})
	c.waitFor(t, "the second reply", func() bool { return len(c.replies()) == 2 })
	if reqs := model.Requests(); len(reqs) != 2 || reqs[1].Header.Get("X-Title") != "choir-2" || reqs[1].Has("provider") || reqs[1].Header.Get("Authorization") != "" {
		t.Errorf("second request: %d requests, X-Title %q; want the new template alone", len(reqs), reqs[len(reqs)-1].Header.Get("X-Title"))
	}
	if strings.Contains(logs.String(), "tok-SECRET-7777") {
		t.Errorf("the agent's log holds the header's secret value")
	}
}

// The session summary is made by summary_llm's model when it is set.
func TestSummaryModelMakesTheSummary(t *testing.T) {
	edge, cheap := openaitest.New(t), openaitest.New(t)
	c := newLanesChoird(map[string]config.Model{
		"m":     {Provider: "openai", Model: "test-model", Endpoint: edge.URL(), Secret: "k"},
		"cheap": {Provider: "openai", Model: "cheap-model", Endpoint: cheap.URL(), Secret: "k2"},
	}, "m", "", map[string]string{"k": "sk-test-5555", "k2": "sk-cheap-6666"})
	c.dyn.SummaryLLM = "cheap"
	edge.Expect(openaitest.Chat().ReplyText("Hello."))
	cheap.Expect(openaitest.Chat().WantModel("cheap-model").WantTools("session_summary").
		ReplyToolCalls(openaitest.ToolCall{ID: "s1", Name: "session_summary",
			Arguments: `{"title":"Notes","summary":"Tidy.","decisions":[],"open_items":[],"facts":[]}`}))
	final, _ := stopAfterATurn(t, c)
	if !strings.Contains(string(final.Summary), "Notes") {
		t.Errorf("final summary = %s; want cheap's", final.Summary)
	}
	if n := len(edge.Requests()); n != 1 {
		t.Errorf("the edge's model got %d requests; want only the turn's", n)
	}
	if r := cheap.Requests(); len(r) != 1 || r[0].Header.Get("Authorization") != "Bearer sk-cheap-6666" {
		t.Errorf("the summary model got %d requests; want one with its key", len(r))
	}
}

// waitFor waits until cond holds, each change choird sees (a DM, a
// heartbeat) checking it again.
func (c *lanesChoird) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for !cond() {
		select {
		case <-c.changed:
		case <-deadline:
			t.Fatalf("waited 30 s for %s", what)
		}
	}
}
