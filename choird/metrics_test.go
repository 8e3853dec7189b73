package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"choir/choird/store"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/metrics"
	"choir/internal/metrics/metricstest"
	"choir/internal/rpc"
)

// Values that must never reach /metrics: secrets, a message's text, a
// Telegram user id, a bot token, a resource id from an admin path.
const (
	metricsSecret   = "sk-metrics-Secret-Q8r"
	metricsSecretLC = "lowercasepw"
	metricsText     = "please transfer the money"
	metricsUserID   = "987654321"
	metricsToken    = "123456:AAE-bot-Token-x9"
	metricsAgentArg = "agent-from-a-path"
)

// freeLoopback returns a loopback address with a port nobody listened on
// a moment ago (startMetrics, like an operator, wants a fixed port).
func freeLoopback(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func metricsConfig(listen string) *config.Loaded {
	return &config.Loaded{
		Config: &config.Config{
			Agents:    map[string]config.Agent{"m-alpha": {}},
			Models:    map[string]config.Model{"fast": {Model: "gpt-test"}, "backup": {Model: "gpt-backup"}},
			Embedding: &config.Embedding{Provider: "openrouter", Model: "m-embed"},
			Metrics:   &config.Metrics{Listen: listen},
		},
		Secrets: config.Secrets{"api": metricsSecret, "pw": metricsSecretLC, "tiny": "ab"},
	}
}

type fakeHandler struct{ rpc.ControlPlaneHandler }

func (fakeHandler) HandleHeartbeat(context.Context, rpc.HeartbeatReq) (rpc.HeartbeatResp, error) {
	return rpc.HeartbeatResp{AckRev: 1}, nil
}
func (fakeHandler) HandleSecrets(context.Context, rpc.SecretReq) (rpc.SecretResp, error) {
	return rpc.SecretResp{}, rpc.Errorf(http.StatusUnauthorized, rpc.CodeUnauthorized, "no such session")
}
func (fakeHandler) HandleStatus(context.Context, rpc.StatusReq) (rpc.StatusResp, error) {
	return rpc.StatusResp{}, errors.New("the store is down: " + metricsText)
}

func event(rev int64, typ string, payload any) rpc.Event {
	raw, _ := json.Marshal(payload)
	return rpc.Event{Rev: rev, Type: typ, Payload: raw}
}

// The events an agent replicates, hostile ones included: a tool named by
// a secret, a message text and a user id. A ModelOutput event counts
// nothing: model calls are counted from the ledger's rows (metricsCalls).
func metricsEvents() []rpc.Event {
	return []rpc.Event{
		event(1, "UserMsg", map[string]any{"text": metricsText + " from " + metricsUserID}),
		event(2, "ModelOutput", map[string]any{"model": "gpt-test", "text": metricsText, "latency_ms": 1500,
			"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}),
		event(7, "ToolResultCommitted", map[string]any{"tool": "choir.fs.read", "status": "success", "duration_ms": 30, "output": metricsText}),
		event(8, "ToolResultCommitted", map[string]any{"tool": "choir.exec", "status": "error", "duration_ms": 2000}),
		event(9, "ToolResultCommitted", map[string]any{"tool": "choir." + metricsSecretLC, "status": "success"}),
		event(10, "ToolResultCommitted", map[string]any{"tool": "choir.x." + metricsUserID, "status": "success"}),
		event(11, "ToolResultCommitted", map[string]any{"tool": "say \"" + metricsText + "\"\n", "status": "error"}),
		event(12, "ToolResultCommitted", map[string]any{"tool": "choir.fs.read", "status": "success", "duration_ms": 10}),
		event(13, "ToolResultCommitted", `not an object`),
	}
}

// The ledger's rows as the store tells them (store.Store.CallsStored):
// every purpose, a fallback attempt, choird's own embedding call, and
// hostile names the agent wrote into its records.
func metricsCalls() []store.CallRow {
	ok := rpc.OutcomeOK
	return []store.CallRow{
		{AgentID: "m-alpha", Model: "fast", Purpose: "turn", PromptTokens: 100, CachedTokens: 40, CompletionTokens: 20, Cost: 0.25, CostSource: rpc.CostPrice, LatencyMS: 1500, Outcome: ok},
		{AgentID: "m-alpha", Model: "fast", Purpose: "compaction", PromptTokens: 50, CompletionTokens: 5, LatencyMS: 200, Outcome: "model_server_503"},
		{AgentID: "m-alpha", Model: "backup", Purpose: "compaction", Attempt: 1, PromptTokens: 50, CompletionTokens: 6, Cost: 0.01, CostSource: rpc.CostProvider, LatencyMS: 100, Outcome: ok},
		{AgentID: "m-alpha", Model: "fast", Purpose: "summary", PromptTokens: 30, CompletionTokens: 3, Outcome: ok},
		{AgentID: "-", Model: "m-embed", Purpose: "embedding", PromptTokens: 7, Estimated: true, LatencyMS: 40, Outcome: ok},
		{AgentID: "m-alpha", Model: metricsSecret, Purpose: metricsText, PromptTokens: 1, Outcome: ok},
		{AgentID: "m-alpha", Model: metricsUserID, Purpose: "turn", Outcome: "model_error"},
		{AgentID: metricsAgentArg, Model: "fast", Purpose: "turn", PromptTokens: 1, Outcome: ok},
	}
}

func TestMetricsEndpoint(t *testing.T) {
	loaded := metricsConfig(freeLoopback(t))
	now := time.Now()
	src := metricsSources{
		Agents: func() []ctl.AgentStatus {
			return []ctl.AgentStatus{
				{AgentID: "m-alpha", State: "running", LastHeartbeat: now.Add(-2 * time.Second)},
				{AgentID: "m-beta", State: "stopped"},
				{AgentID: "m-gamma", State: "stopped"},
				{AgentID: "m-delta", State: "starting"},
			}
		},
		Running:  func() int { return 1 },
		Pending:  func(context.Context) (int, error) { return 2, nil },
		Gateways: func() []ctl.GatewayStatus { return []ctl.GatewayStatus{{Gateway: "m-main", Updates: 5}} },
		Outbox: func(context.Context) ([]store.OutboxStat, error) {
			return []store.OutboxStat{{AgentID: "m-alpha", DM: "m-dm", Queued: 7}}, nil
		},
	}
	addr, stop, err := startMetrics(loaded.Config, src, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	// The agent protocol, through the rpc server choird serves with
	// countRPC: answered calls, a call without the token, and a path that
	// names no verb (the caller's text, never a label).
	rs := rpc.NewServer(fakeHandler{}, rpc.DefaultLimits(), slog.New(slog.DiscardHandler))
	rs.Observe = countRPC
	rs.Open("s-m", "m-alpha", "tok-m")
	call := func(path, token, body string) {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.Header.Set(rpc.HeaderSessionID, "s-m")
		req.Header.Set(rpc.HeaderRequestID, "r-1")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rs.ServeHTTP(httptest.NewRecorder(), req)
	}
	call("/rpc/HEARTBEAT", "tok-m", `{"base_rev":0,"new_rev":0,"patches":[]}`)
	call("/rpc/HEARTBEAT", "tok-m", `{"base_rev":0,"new_rev":0,"patches":[]}`)
	call("/rpc/HEARTBEAT", "tok-m", `{"events":[]}`) // refused before the handler
	call("/rpc/GET_SECRETS", "tok-m", `{}`)
	call("/rpc/REPORT_STATUS", "tok-m", `{"lane":"edge","state":"IDLE"}`)
	call("/rpc/HEARTBEAT", "", `{"base_rev":0,"new_rev":0,"patches":[]}`)
	call("/rpc/"+metricsSecret, "tok-m", `{}`)

	// Events stored, then the same batch resent: counted once.
	ec := eventCounter{loaded: func() *config.Loaded { return loaded }}
	evs := metricsEvents()
	ec.stored("m-alpha", 0, evs)
	ec.stored("m-alpha", evs[len(evs)-1].Rev, evs)
	callCounter{loaded: func() *config.Loaded { return loaded }}.stored(metricsCalls())

	// The admin API, by route pattern.
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/agents/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotFound) })
	admin := httptest.NewServer(countAdmin(mux))
	defer admin.Close()
	for range 2 {
		resp, err := http.Get(admin.URL + "/v1/agents/" + metricsAgentArg)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	// Telegram, through the counting client: a 429, a 200, a file download.
	tg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/sendMessage") {
			w.WriteHeader(http.StatusTooManyRequests)
		}
		io.WriteString(w, `{"ok":true,"result":[]}`)
	}))
	defer tg.Close()
	hc := telegramHTTP()
	for _, p := range []string{"/bot" + metricsToken + "/sendMessage", "/bot" + metricsToken + "/getUpdates", "/file/bot" + metricsToken + "/voice/" + metricsUserID + ".oga"} {
		resp, err := hc.Get(tg.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != metrics.ContentType {
		t.Fatalf("GET /metrics = %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := string(body)
	for _, want := range []string{
		`choir_agents{state="running"} 1`,
		`choir_agents{state="stopped"} 2`,
		`choir_agents{state="starting"} 1`,
		`choir_agents{state="stopping"} 0`,
		`choir_sessions_active 1`,
		`choir_approvals_pending 2`,
		`choir_outbox_depth{agent="m-alpha",dm="m-dm"} 7`,
		`choir_telegram_updates_total{gateway="m-main"} 5`,
		`choir_rpc_requests_total{verb="HEARTBEAT",code="ok"} 2`,
		`choir_rpc_requests_total{verb="HEARTBEAT",code="unauthorized"} 1`,
		`choir_rpc_requests_total{verb="HEARTBEAT",code="bad_request"} 1`,
		`choir_rpc_requests_total{verb="GET_SECRETS",code="unauthorized"} 1`,
		`choir_rpc_requests_total{verb="REPORT_STATUS",code="internal"} 1`,
		`choir_rpc_request_duration_seconds_count{verb="HEARTBEAT"} 4`,
		`choir_admin_requests_total{route="GET /v1/agents/{id}",code="404"} 2`,
		`choir_llm_calls_total{agent="m-alpha",model="fast",purpose="turn"} 1`,
		`choir_llm_calls_total{agent="m-alpha",model="fast",purpose="compaction"} 1`,
		`choir_llm_calls_total{agent="m-alpha",model="fast",purpose="summary"} 1`,
		`choir_llm_calls_total{agent="m-alpha",model="backup",purpose="compaction"} 1`,
		`choir_llm_calls_total{agent="-",model="m-embed",purpose="embedding"} 1`,
		`choir_llm_calls_total{agent="m-alpha",model="other",purpose="other"} 1`,
		`choir_llm_calls_total{agent="m-alpha",model="other",purpose="turn"} 1`,
		`choir_llm_calls_total{agent="other",model="fast",purpose="turn"} 1`,
		`choir_llm_call_errors_total{agent="m-alpha",model="fast",purpose="compaction"} 1`,
		`choir_llm_call_errors_total{agent="m-alpha",model="other",purpose="turn"} 1`,
		`choir_llm_fallback_attempts_total{agent="m-alpha",model="backup"} 1`,
		`choir_llm_tokens_total{agent="m-alpha",model="fast",kind="prompt"} 180`,
		`choir_llm_tokens_total{agent="m-alpha",model="fast",kind="cached"} 40`,
		`choir_llm_tokens_total{agent="m-alpha",model="fast",kind="completion"} 28`,
		`choir_llm_tokens_total{agent="-",model="m-embed",kind="prompt"} 7`,
		`choir_llm_cost_total{agent="m-alpha",model="fast"} 0.25`,
		`choir_llm_cost_total{agent="m-alpha",model="backup"} 0.01`,
		`choir_llm_call_duration_seconds_bucket{agent="m-alpha",model="fast",le="1"} 1`,
		`choir_llm_call_duration_seconds_bucket{agent="m-alpha",model="fast",le="2.5"} 2`,
		`choir_llm_call_duration_seconds_sum{agent="m-alpha",model="fast"} 1.7`,
		`choir_tool_calls_total{tool="choir.fs.read"} 2`,
		`choir_tool_calls_total{tool="choir.exec"} 1`,
		`choir_tool_calls_total{tool="other"} 3`,
		`choir_tool_call_errors_total{tool="choir.exec"} 1`,
		`choir_tool_call_errors_total{tool="other"} 1`,
		`choir_tool_call_duration_seconds_sum{tool="choir.fs.read"} 0.04`,
		`choir_telegram_requests_total{method="sendMessage",code="429"} 1`,
		`choir_telegram_requests_total{method="getUpdates",code="200"} 1`,
		`choir_telegram_requests_total{method="file",code="200"} 1`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(out, `model="gpt-test"`) {
		t.Errorf("/metrics counts a ModelOutput event; want model calls counted from the ledger's rows only")
	}
	if !strings.Contains(out, `choir_heartbeat_age_seconds{agent="m-alpha"} `) {
		t.Errorf("/metrics lacks the heartbeat age of the running agent")
	}
	for _, leak := range []string{metricsSecret, metricsSecretLC, metricsText, metricsUserID, metricsToken, "AAE-bot", metricsAgentArg, "m-beta\""} {
		if strings.Contains(out, leak) {
			t.Errorf("/metrics contains %q:\n%s", leak, out)
		}
	}
	metricstest.Check(t, body)
	if t.Failed() {
		t.Logf("/metrics:\n%s", out)
	}
}

func TestMetricsOffWhenUnset(t *testing.T) {
	for _, c := range []*config.Config{nil, {}, {Metrics: &config.Metrics{}}} {
		addr, stop, err := startMetrics(c, metricsSources{}, slog.New(slog.DiscardHandler))
		if err != nil || addr != "" {
			t.Errorf("startMetrics(%+v) = %q, %v; want off", c, addr, err)
		}
		stop()
	}
}

func TestMetricsListenRefusals(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, tc := range []struct {
		name string
		m    *config.Metrics
		want string
	}{
		{"not loopback", &config.Metrics{Listen: "0.0.0.0:9464"}, "metrics.allow_remote: true"},
		{"malformed", &config.Metrics{Listen: "127.0.0.1"}, "want host:port"},
		{"port taken", &config.Metrics{Listen: busy.Addr().String()}, "choose a free port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, _, err := startMetrics(&config.Config{Metrics: tc.m}, metricsSources{}, slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "metrics.listen") {
				t.Errorf("startMetrics(%q) = %q, %v; want an error naming metrics.listen and %q", tc.m.Listen, addr, err, tc.want)
			}
		})
	}
}

func TestTelegramMethod(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"/bot123:ABC/sendMessage", "sendMessage"},
		{"/prefix/bot123:ABC/getUpdates", "getUpdates"},
		{"/file/bot123:ABC/voice/file_1.oga", "file"},
		{"/file/bot123:ABC/botfile", "file"},
		{"/bot123:ABC/send-message", "other"},
		{"/bot123:ABC/sendMessage/extra", "other"},
		{"/bot123:ABC/", "other"},
		{"/bot123:ABC", "other"},
		{"/sendMessage", "other"},
		{"/bot123:ABC/" + strings.Repeat("a", 41), "other"},
		{"", "other"},
	} {
		if got := telegramMethod(tc.path); got != tc.want {
			t.Errorf("telegramMethod(%q) = %q; want %q", tc.path, got, tc.want)
		}
	}
}

// BenchmarkScrape100Agents measures one scrape of /metrics (the handler,
// the text built in memory) with the series of 100 running agents: each
// with heartbeats, two models' calls, tokens and latencies, and tools.
func BenchmarkScrape100Agents(b *testing.B) {
	var agents []ctl.AgentStatus
	now := time.Now()
	for i := range 100 {
		agents = append(agents, ctl.AgentStatus{AgentID: fmt.Sprintf("bench-%03d", i), State: "running", LastHeartbeat: now})
	}
	sourcesMu.Lock()
	saved := sources
	sourcesMu.Unlock()
	registerFunctionFamilies()
	sourcesMu.Lock()
	sources = metricsSources{Agents: func() []ctl.AgentStatus { return agents }, Running: func() int { return len(agents) },
		Pending: func(context.Context) (int, error) { return 0, nil }}
	sourcesMu.Unlock()
	defer func() {
		sourcesMu.Lock()
		sources = saved
		sourcesMu.Unlock()
	}()
	for _, a := range agents {
		metrics.HeartbeatsReceived.With(a.AgentID).Inc()
		for _, m := range []string{"bench-fast", "bench-slow"} {
			metrics.LLMCalls.With(a.AgentID, m, "turn").Inc()
			metrics.LLMTokens.With(a.AgentID, m, "prompt").Add(1000)
			metrics.LLMTokens.With(a.AgentID, m, "cached").Add(800)
			metrics.LLMTokens.With(a.AgentID, m, "completion").Add(100)
			metrics.LLMCost.With(a.AgentID, m).Add(0.01)
			metrics.LLMSeconds.With(a.AgentID, m).Observe(1.2)
		}
	}
	for _, tool := range []string{"choir.fs.read", "choir.fs.write", "choir.exec", "choir.memory.query", "choir.net.fetch"} {
		metrics.ToolCalls.With(tool).Inc()
		metrics.ToolSeconds.With(tool).Observe(0.3)
	}
	h := metrics.Default.Handler()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	var size int
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		size = w.Body.Len()
	}
	b.ReportMetric(float64(size), "bytes/scrape")
}
