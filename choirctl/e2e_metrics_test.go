package main

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"choir/internal/metrics/metricstest"
	"choir/testkit/demomodel"
)

// TestMetricsOfARunningChoird scrapes a real choird's /metrics (config's
// metrics.listen on loopback) while it builds, starts and chats with a
// real agent on the engine, and checks what an operator's dashboard would
// read: the families in the Prometheus text format as promtool parses and
// lints it, the build, the start, the session, its heartbeats, its RPC and
// its model calls counted, and no secret nor message text in any label.
func TestMetricsOfARunningChoird(t *testing.T) {
	metricstest.Promtool(t) // before building anything
	addr := freeLoopbackAddr(t)
	ag := newBuiltAgent(t, builtOpts{config: func(cfg map[string]any) {
		cfg["metrics"] = map[string]any{"listen": addr}
	}})
	ag.say(t, "hello")

	scrape := func() string {
		t.Helper()
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatalf("scrape /metrics: %v\n%s", err, ag.report())
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /metrics = %d %s", resp.StatusCode, body)
		}
		return string(body)
	}
	// Heartbeats arrive every 200 ms; the chat's model call was stored with
	// the heartbeat that followed it.
	var out string
	waitUntil(t, "the model call and heartbeats counted", time.Minute, func() bool {
		out = scrape()
		return sampleAtLeast(out, `choir_llm_calls_total{agent="agent-1",model="`, 1) &&
			sampleAtLeast(out, `choir_heartbeats_received_total{agent="agent-1"}`, 2)
	}, func() string { return out })

	for _, want := range []string{
		`choir_agents{state="running"} 1`,
		`choir_sessions_active 1`,
		`choir_image_build_duration_seconds_count{outcome="ok"} 1`,
		`choir_agent_start_duration_seconds_count{outcome="ok"} 1`,
		`choir_rpc_requests_total{verb="INIT_HELLO",code="ok"} 1`,
		`choir_approvals_pending 0`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for _, prefix := range []string{
		`choir_rpc_requests_total{verb="HEARTBEAT",code="ok"}`,
		`choir_llm_tokens_total{agent="agent-1",model="`,
		`choir_admin_requests_total{route="POST /v1/agents/{id}/start",code="200"}`,
		`choir_heartbeat_age_seconds{agent="agent-1"}`,
	} {
		if !sampleAtLeast(out, prefix, 0) {
			t.Errorf("/metrics has no series %s…", prefix)
		}
	}
	for _, leak := range []string{apiSecret, pgSecret, "ghp-e2e-Token-5Yt", demomodel.Prefix} {
		if strings.Contains(out, leak) {
			t.Errorf("/metrics contains %q", leak)
		}
	}
	metricstest.Check(t, []byte(out))

	// The session's end is counted once it is recorded.
	if _, stderr, code := ctlRun(t, ag.home, "", "agent", "stop", "agent-1"); code != 0 {
		t.Fatalf("agent stop = %d %q", code, stderr)
	}
	waitUntil(t, "the stopped session counted", time.Minute, func() bool {
		out = scrape()
		return sampleAtLeast(out, `choir_sessions_ended_total{status="stopped"}`, 1)
	}, func() string { return out })
	if !strings.Contains(out, `choir_agents{state="stopped"} 1`+"\n") || !strings.Contains(out, "choir_sessions_active 0\n") {
		t.Errorf("after the stop, /metrics says:\n%s", grepLines(out, "choir_agents", "choir_sessions_active"))
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("/metrics:\n%s", out)
	}
}

// freeLoopbackAddr is a loopback address whose port nobody listened on a
// moment ago (metrics.listen wants a fixed port, as a scraper does).
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// sampleAtLeast reports whether a sample line starting with prefix has a
// value of at least min.
func sampleAtLeast(out, prefix string, min float64) bool {
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil && v >= min {
			return true
		}
	}
	return false
}
