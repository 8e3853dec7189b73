package lane

import (
	"choir/testkit"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"choir/agent/arbiter"
	"choir/internal/logs"
	"choir/internal/openai"
	"choir/internal/rpc"
	"choir/testkit/openaitest"
)

// sessionLog is a logger like the agent's: JSON lines carrying the
// session id (choir-agent's main adds it to every line).
func sessionLog() (*slog.Logger, *testkit.Buffer) {
	lines := &testkit.Buffer{}
	return slog.New(slog.NewJSONHandler(lines, nil)).With(logs.KeySource, "ada", logs.KeySession, "s-test"), lines
}

// slowModel is a model whose answers take at least min: latency the lane
// must measure.
type slowModel struct {
	ModelClient
	min time.Duration
}

func (m slowModel) ChatWithRateLimitRetry(ctx context.Context, req openai.ChatRequest, rl openai.RateLimitRetry) (*openai.ChatResponse, error) {
	took := time.After(m.min) // the model's own latency, not synchronisation
	resp, err := m.ModelClient.ChatWithRateLimitRetry(ctx, req, rl)
	<-took
	return resp, err
}

// modelOutput decodes a ModelOutput payload's telemetry.
type modelOutput struct {
	Error     string     `json:"error"`
	LatencyMS *int64     `json:"latency_ms"`
	Model     string     `json:"model"`
	Usage     *callUsage `json:"usage"`
}

// Every model call is logged with the session, the lane, the model, its
// tokens, latency and outcome; a reply's ModelOutput event carries its
// usage and latency; the edge's status counts the session's tokens and
// tool calls (§22.1).
func TestLLMCallTelemetry(t *testing.T) {
	srv := openaitest.New(t)
	c, err := openai.New(openai.Config{Endpoint: srv.URL(), APIKey: "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	log, lines := sessionLog()
	e := newEnv(t, envOptions{model: slowModel{c, 5 * time.Millisecond}, log: log})
	e.write("notes.txt", "alpha\n")
	srv.Expect(
		openaitest.Chat().ReplyToolCalls(tc("call_r", "choir_fs_read", `{"path":"notes.txt"}`)).WithUsage(100, 20),
		openaitest.Chat().ReplyText("It says alpha.").WithUsage(150, 10),
		openaitest.Chat().ReplyError(400, "invalid_request_error", "bad_request", "no such thing"),
	)
	if got := e.handle("what is in notes.txt?"); got != "It says alpha." {
		t.Fatalf("reply = %q", got)
	}
	e.idle()
	if st := e.lane.Status(); st[0].Lane != "edge" || st[0].TokensUsed != 280 || st[0].ToolCalls != 1 {
		t.Errorf("edge status = %+v; want tokens_used 280, tool_calls 1", st[0])
	}
	e.handle("again")

	var outs []modelOutput
	for _, ev := range e.events(arbiter.ModelOutput) {
		var o modelOutput
		if err := json.Unmarshal(ev.Payload, &o); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, o)
	}
	if len(outs) != 3 {
		t.Fatalf("%d ModelOutput events; want 3", len(outs))
	}
	for i, want := range []callUsage{{Prompt: 100, Completion: 20, Total: 120}, {Prompt: 150, Completion: 10, Total: 160}} {
		if outs[i].Usage == nil || *outs[i].Usage != want {
			t.Errorf("ModelOutput %d usage = %+v; want %+v", i, outs[i].Usage, want)
		}
		if outs[i].LatencyMS == nil || *outs[i].LatencyMS < 5 {
			t.Errorf("ModelOutput %d latency_ms = %v; want at least the model's 5 ms", i, outs[i].LatencyMS)
		}
	}
	if outs[2].Error == "" {
		t.Errorf("ModelOutput 2 = %+v; want the failed call's error", outs[2])
	}

	calls := lines.Records(t, msgLLMCall)
	if len(calls) != 3 {
		t.Fatalf("%d %q records; want 3:\n%s", len(calls), msgLLMCall, lines.String())
	}
	for i, want := range []struct {
		total   float64
		outcome string
		level   string
	}{{120, outcomeOK, "INFO"}, {160, outcomeOK, "INFO"}, {0, "model_bad_request_400", "WARN"}} {
		m := calls[i]
		if m[logs.KeySession] != "s-test" || m[logs.KeyLane] != "edge" || m[keyModel] != "test-model" || m[keyPurpose] != purposeTurn {
			t.Errorf("record %d = %v; want session s-test, lane edge, model test-model, purpose turn", i, m)
		}
		if m[keyTotalTokens] != want.total || m[keyOutcome] != want.outcome || m["level"] != want.level {
			t.Errorf("record %d = %v; want total_tokens %v, outcome %s, level %s", i, m, want.total, want.outcome, want.level)
		}
		if ms, _ := m[keyLatency].(float64); ms < 5 {
			t.Errorf("record %d latency_ms = %v; want at least 5", i, m[keyLatency])
		}
	}
	moves := lines.Records(t, "lane transition")
	if len(moves) == 0 {
		t.Fatal("no lane transition logged")
	}
	for _, m := range moves {
		if m[logs.KeySession] != "s-test" || m[logs.KeyLane] != "edge" || m["from"] == nil || m["to"] == nil {
			t.Errorf("lane transition record = %v; want session, lane, from and to", m)
		}
	}
}

// withUsage answers with next, reporting prompt and completion tokens.
func withUsage(prompt, completion int, next answer) answer {
	return func(ctx context.Context, req openai.ChatRequest) (*openai.ChatResponse, error) {
		resp, err := next(ctx, req)
		if resp != nil {
			resp.Usage = openai.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
		}
		return resp, err
	}
}

// A running core job's status counts its own tokens and tool calls; the
// edge's counts the session's, every lane's.
func TestCoreStatusCountsItsOwn(t *testing.T) {
	log, lines := sessionLog()
	e, s := coreEnv(t, envOptions{log: log})
	gate := make(chan struct{})
	s.on("edge", withUsage(30, 5, use(SpawnTool, spawnArgs("style", "reformat main.go"))), withUsage(40, 3, say("Started.")))
	e.write("main.go", "package main\n")
	s.on("style",
		withUsage(200, 7, use("choir.fs.read", `{"path":"main.go"}`)),
		after(gate, withUsage(300, 9, use(FinishTool, finishArgs("done")))))
	e.handle("reformat main.go")
	e.waitFor("the core's second call", func() bool { return len(s.requests("style")) == 2 })

	var core, edge *rpc.StatusReq
	st := e.lane.Status()
	for i := range st {
		switch st[i].Lane {
		case "core:style":
			core = &st[i]
		case "edge":
			edge = &st[i]
		}
	}
	if core == nil || core.TokensUsed != 207 || core.ToolCalls != 1 {
		t.Errorf("core status = %+v; want tokens_used 207, tool_calls 1", core)
	}
	if edge == nil || edge.TokensUsed != 35+43+207 || edge.ToolCalls != 2 {
		t.Errorf("edge status = %+v; want the session's tokens_used %d and tool_calls 2 (spawn, read)", edge, 35+43+207)
	}
	close(gate)
	e.nextReport()

	var coreCalls int
	for _, m := range lines.Records(t, msgLLMCall) {
		if m[logs.KeyLane] == "core:style" {
			coreCalls++
			if m[logs.KeySession] != "s-test" {
				t.Errorf("core record = %v; want session s-test", m)
			}
		}
	}
	if coreCalls != 2 {
		t.Errorf("%d %q records of core:style; want 2", coreCalls, msgLLMCall)
	}
	for _, m := range lines.Records(t, "lane transition") {
		if l, _ := m[logs.KeyLane].(string); l != "edge" && l != "core:style" {
			t.Errorf("lane transition record names lane %q", l)
		}
	}
}
