package assembly

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/agent/session"
	"choir/testkit"

	"choir/internal/config"
	"choir/internal/openai"
	"choir/internal/rpc"
	"choir/testkit/openaitest"
)

// spendChoird is lanesChoird serving SPEND: it records every reserve and
// settle and refuses reserves while refuse is set.
type spendChoird struct {
	*lanesChoird
	smu      sync.Mutex
	reserves []rpc.SpendReq
	settles  []rpc.SpendReq
	refuse   string
}

func (c *spendChoird) HandleSpend(_ context.Context, r rpc.SpendReq) (rpc.SpendResp, error) {
	c.smu.Lock()
	defer c.smu.Unlock()
	if r.Op == rpc.SpendSettle {
		c.settles = append(c.settles, r)
		return rpc.SpendResp{Allowed: true}, nil
	}
	c.reserves = append(c.reserves, r)
	if c.refuse != "" {
		return rpc.SpendResp{Allowed: false, Cap: "agent per_day", Message: c.refuse}, nil
	}
	return rpc.SpendResp{Allowed: true}, nil
}

func (c *spendChoird) spendCalls() (reserves, settles []rpc.SpendReq) {
	c.smu.Lock()
	defer c.smu.Unlock()
	return append([]rpc.SpendReq(nil), c.reserves...), append([]rpc.SpendReq(nil), c.settles...)
}

// spendRuntime runs a runtime against c (runtimeFor and runLanes, with
// SPEND served) and returns the publisher of push events and its log.
func spendRuntime(t *testing.T, c *spendChoird) (*rpc.Server, *testkit.Buffer) {
	t.Helper()
	srv := rpc.NewServer(c, rpc.DefaultLimits(), slog.New(slog.DiscardHandler))
	srv.Open("s-1", "agent-1", "tok")
	sock := filepath.Join(t.TempDir(), "choird.sock")
	l, err := rpc.ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv}
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close() })
	cp, err := rpc.Dial(rpc.Options{Transport: rpc.TransportUDS, Socket: sock, SessionID: "s-1", LeaseToken: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	logs := &testkit.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sess := session.New(cp, session.Identity{AgentID: "agent-1", SessionID: "s-1"}, rpc.ImageInfo{ImageVersion: "v"}, 10*time.Millisecond, log)
	New(cp, sess, Config{ChoirDir: t.TempDir(), Workspace: t.TempDir(), Log: log}).Attach()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sess.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("the session did not stop")
		}
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	return srv, logs
}

// callRecords returns the ModelCall events the heartbeats carried.
func (c *fakeChoird) callRecords(t *testing.T) []rpc.CallRecord {
	t.Helper()
	var out []rpc.CallRecord
	seen := map[int64]bool{}
	for _, hb := range c.heartbeatsSent() {
		for _, e := range hb.Patches {
			if e.Type != rpc.ModelCallEvent || seen[e.Rev] {
				continue
			}
			seen[e.Rev] = true
			var r rpc.CallRecord
			if err := json.Unmarshal(e.Payload, &r); err != nil {
				t.Fatalf("ModelCall payload %s: %v", e.Payload, err)
			}
			out = append(out, r)
		}
	}
	return out
}

// Each attempt of a call, the fallback's too, is reserved before it is
// made and recorded once, with its tokens, cached tokens and cost (the
// price's), in a ModelCall event that the heartbeats replicate, and
// settled with that record; the "llm call" log line is the same record.
func TestEveryAttemptIsReservedAndRecorded(t *testing.T) {
	first, second := openaitest.New(t), openaitest.New(t)
	c := &spendChoird{lanesChoird: twoModels(first, second, true)}
	backup := c.dyn.Models["backup"]
	backup.Price = &config.Price{Input: 2, Output: 10}
	c.dyn.Models["backup"] = backup
	c.dyn.Currency = "EUR"
	first.Expect(openaitest.Chat().ReplyError(503, "server_error", "", "overloaded"))
	second.Expect(openaitest.Chat().WithUsage(1000, 100).ReplyText("Backup here."))
	srv, logs := spendRuntime(t, c)
	srv.Publish("s-1", rpc.EventUserMessage, rpc.UserMessage{ID: "m1", From: "console", Text: "hi"})
	if r := c.waitDM(t, rpc.DMReply); r.Text != "Backup here." {
		t.Fatalf("reply = %+v; want the fallback's answer", r)
	}
	var recs []rpc.CallRecord
	c.waitFor(t, "two ModelCall events replicated", func() bool { recs = c.callRecords(t); return len(recs) == 2 })
	if r := recs[0]; r.Model != "main" || r.Attempt != 0 || r.Outcome == rpc.OutcomeOK || r.PromptTokens != 0 || r.CostSource != rpc.CostNone {
		t.Errorf("first attempt's record = %+v; want main's failure, no tokens, no cost", r)
	}
	if r := recs[1]; r.Model != "backup" || r.ProviderModel != "backup-model" || r.Attempt != 1 || r.Outcome != rpc.OutcomeOK ||
		r.PromptTokens != 1000 || r.CompletionTokens != 100 || r.CostSource != rpc.CostPrice || r.Cost != 0.003 || r.Currency != "EUR" || r.Purpose != "turn" {
		t.Errorf("fallback's record = %+v; want backup's 1000+100 tokens at 2/10 per million (0.003 EUR)", r)
	}
	reserves, settles := c.spendCalls()
	if len(reserves) != 2 || reserves[0].Model != "main" || reserves[1].Model != "backup" || reserves[0].Lane != "edge" ||
		reserves[0].PromptTokens <= 0 || reserves[0].MaxOutputTokens != DefaultReserveOutputTokens {
		t.Errorf("reserves = %+v; want one per attempt, the prompt estimated, 4096 for the answer", reserves)
	}
	c.waitFor(t, "two settles", func() bool { _, settles = c.spendCalls(); return len(settles) == 2 })
	for _, s := range settles {
		if s.Record == nil || s.Record.CallID != s.CallID || s.Unreplicated {
			t.Errorf("settle = %+v; want the replicated record of its call", s)
		}
	}
	if n := strings.Count(logs.String(), `"msg":"llm call"`); n != 2 || !strings.Contains(logs.String(), `"call_id":"`+recs[1].CallID+`"`) {
		t.Errorf("%d llm call log lines; want 2, one per attempt, naming the call id", n)
	}
}

// A refused reserve makes no call: the DM hears which cap and why, and the
// session answers the next message once the cap allows.
func TestRefusedReserveMakesNoCall(t *testing.T) {
	model := openaitest.New(t)
	c := &spendChoird{lanesChoird: newLanesChoird(map[string]config.Model{"m": {Provider: "openai", Model: "m1", Endpoint: model.URL(), Secret: "k"}}, "m", "", map[string]string{"k": "sk-k-12345"})}
	c.refuse = "agent agent-1's daily cap of 5.00 USD is reached: 5.00 USD spent or reserved. It resets 2026-11-26 00:00 UTC."
	srv, _ := spendRuntime(t, c)
	srv.Publish("s-1", rpc.EventUserMessage, rpc.UserMessage{ID: "m1", From: "console", Text: "hi"})
	r := c.waitDM(t, rpc.DMError)
	if !strings.Contains(r.Text, "spend cap reached: agent agent-1's daily cap") || !strings.Contains(r.Text, "resets") {
		t.Fatalf("reply = %+v; want the refusal", r)
	}
	if n := len(model.Requests()); n != 0 {
		t.Fatalf("the model got %d requests; want none", n)
	}
	c.smu.Lock()
	c.refuse = ""
	c.smu.Unlock()
	model.Expect(openaitest.Chat().ReplyText("Back."))
	srv.Publish("s-1", rpc.EventUserMessage, rpc.UserMessage{ID: "m2", From: "console", Text: "again"})
	c.waitFor(t, "the answer after the cap", func() bool {
		for _, m := range c.dms() {
			if m.Kind == rpc.DMReply && m.Text == "Back." {
				return true
			}
		}
		return false
	})
}

// A provider that reports its own cost (OpenRouter's usage.cost) is
// believed over the model's price: the record, its settle and the "llm
// call" line carry that cost, marked provider, with the cached tokens of
// prompt_tokens_details.
func TestProviderCostWinsOverThePrice(t *testing.T) {
	model := openaitest.New(t)
	c := &spendChoird{lanesChoird: newLanesChoird(map[string]config.Model{"m": {Provider: "openrouter", Model: "m1", Endpoint: model.URL(), Secret: "k",
		Price: &config.Price{Input: 100, Output: 100}}}, "m", "", map[string]string{"k": "sk-k-12345"})}
	model.Expect(openaitest.Chat().ReplyRaw(http.StatusOK, `{"id":"gen-1","object":"chat.completion","model":"vendor/m1-2026",
		"choices":[{"index":0,"message":{"role":"assistant","content":"Priced by the provider."},"finish_reason":"stop"}],
		"usage":{"prompt_tokens":1200,"completion_tokens":30,"total_tokens":1230,"prompt_tokens_details":{"cached_tokens":1000},"cost":0.00042}}`))
	srv, logs := spendRuntime(t, c)
	srv.Publish("s-1", rpc.EventUserMessage, rpc.UserMessage{ID: "m1", From: "console", Text: "hi"})
	if r := c.waitDM(t, rpc.DMReply); r.Text != "Priced by the provider." {
		t.Fatalf("reply = %+v", r)
	}
	var recs []rpc.CallRecord
	c.waitFor(t, "the ModelCall event replicated", func() bool { recs = c.callRecords(t); return len(recs) == 1 })
	if r := recs[0]; r.Cost != 0.00042 || r.CostSource != rpc.CostProvider || r.CachedTokens != 1000 || r.PromptTokens != 1200 ||
		r.CompletionTokens != 30 || r.ProviderModel != "vendor/m1-2026" || r.Estimated {
		t.Errorf("record = %+v; want the provider's cost 0.00042 (not the price's 0.123), 1000 of 1200 prompt tokens cached, the model it answered with", r)
	}
	var settles []rpc.SpendReq
	c.waitFor(t, "the settle", func() bool { _, settles = c.spendCalls(); return len(settles) == 1 })
	if r := settles[0].Record; r == nil || r.Cost != 0.00042 || r.CostSource != rpc.CostProvider {
		t.Errorf("settle = %+v; want the provider's cost", settles[0])
	}
	if l := logs.String(); !strings.Contains(l, `"cost":0.00042`) || !strings.Contains(l, `"cost_source":"provider"`) || !strings.Contains(l, `"cached_tokens":1000`) {
		t.Errorf("the llm call line lacks the provider's cost or the cached tokens:\n%s", l)
	}
}

func TestReserveOutputAndPromptEstimate(t *testing.T) {
	ten, body := 10, map[string]json.RawMessage{"max_tokens": json.RawMessage(`321`)}
	for _, tt := range []struct {
		name string
		req  openai.ChatRequest
		m    config.Model
		want int64
	}{
		{"default", openai.ChatRequest{}, config.Model{}, DefaultReserveOutputTokens},
		{"request", openai.ChatRequest{MaxTokens: &ten}, config.Model{Request: &config.ModelRequest{Body: body}}, 10},
		{"completion", openai.ChatRequest{MaxCompletionTokens: &ten}, config.Model{}, 10},
		{"template", openai.ChatRequest{}, config.Model{Request: &config.ModelRequest{Body: body}}, 321},
		{"template not a number", openai.ChatRequest{}, config.Model{Request: &config.ModelRequest{Body: map[string]json.RawMessage{"max_tokens": json.RawMessage(`"lots"`)}}}, DefaultReserveOutputTokens},
		{"template negative", openai.ChatRequest{}, config.Model{Request: &config.ModelRequest{Body: map[string]json.RawMessage{"max_tokens": json.RawMessage(`-5`)}}}, DefaultReserveOutputTokens},
	} {
		if got := reserveOutput(tt.req, tt.m); got != tt.want {
			t.Errorf("reserveOutput(%s) = %d; want %d", tt.name, got, tt.want)
		}
	}
	req := openai.ChatRequest{Messages: []openai.Message{openai.UserMessage(strings.Repeat("x", 400))},
		Tools: []openai.Tool{{Name: "t", Parameters: json.RawMessage(strings.Repeat(" ", 396))}}}
	if got := promptTokens(req); got != 104+104 {
		t.Errorf("promptTokens = %d; want 208 (a token per four bytes, plus framing)", got)
	}
}
