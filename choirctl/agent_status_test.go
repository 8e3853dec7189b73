package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"choir/internal/config"
	"choir/internal/ctl"
)

// statusJSON is what choird answers for agent-1, as raw JSON: the edge
// with the session's counts and one core job with its own.
const statusJSON = `{"agent_id":"agent-1","state":"running","session_id":"s-1","container":"c1","image":"choir-agent-1:v1",
 "uptime":"5m0s","config_version":7,
 "lanes":{
  "edge":{"lane":"edge","state":"EDGE_WAITING_TOOL","budget_remaining":{"total_session_tokens":99000,"max_tool_calls_per_session":196,"max_core_jobs":3},"tokens_used":1000,"tool_calls":4},
  "core:style":{"lane":"core:style","state":"CORE_REASONING","skill":"review","step":2,"budget_remaining":{"per_job_max_steps":48},"tokens_used":207,"tool_calls":1}}}`

// fakeStatusAdmin serves GET /v1/agents/agent-1 with body.
func fakeStatusAdmin(t *testing.T, body string) *env {
	t.Helper()
	home := config.Home{Dir: t.TempDir()}
	os.MkdirAll(filepath.Dir(home.AdminSocket()), 0o700)
	l, err := net.Listen("unix", home.AdminSocket())
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/agents/agent-1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(body))
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return &env{home: home, stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
}

// `agent status` shows, per lane, the tokens and tool calls used and the
// budget left, and the config version the agent runs; --json carries the
// same numbers.
func TestAgentStatusShowsLaneUsage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e := fakeStatusAdmin(t, statusJSON)
	if err := agentStatus(ctx, e, []string{"agent-1"}); err != nil {
		t.Fatalf("agent status = %v", err)
	}
	out := e.stdout.(*bytes.Buffer).String()
	for _, want := range []string{
		"config version   7",
		"lane core:style  CORE_REASONING skill=review step=2 tokens=207 tool_calls=1 budget_left: per_job_max_steps=48",
		"lane edge        EDGE_WAITING_TOOL tokens=1000 tool_calls=4 budget_left: max_core_jobs=3 max_tool_calls_per_session=196 total_session_tokens=99000",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("agent status output lacks %q:\n%s", want, out)
		}
	}

	e = fakeStatusAdmin(t, statusJSON)
	if err := agentStatus(ctx, e, []string{"agent-1", "--json"}); err != nil {
		t.Fatalf("agent status --json = %v", err)
	}
	var got struct {
		ConfigVersion int64 `json:"config_version"`
		Lanes         map[string]struct {
			TokensUsed      int64            `json:"tokens_used"`
			ToolCalls       int64            `json:"tool_calls"`
			BudgetRemaining map[string]int64 `json:"budget_remaining"`
		} `json:"lanes"`
	}
	if err := json.Unmarshal(e.stdout.(*bytes.Buffer).Bytes(), &got); err != nil {
		t.Fatalf("agent status --json: %v", err)
	}
	edge, core := got.Lanes["edge"], got.Lanes["core:style"]
	if got.ConfigVersion != 7 || edge.TokensUsed != 1000 || edge.ToolCalls != 4 || edge.BudgetRemaining["total_session_tokens"] != 99000 ||
		core.TokensUsed != 207 || core.ToolCalls != 1 || core.BudgetRemaining["per_job_max_steps"] != 48 {
		t.Errorf("agent status --json = %+v", got)
	}
}

// TestAgentStatusShowsTheRestartPolicy: `agent status` says the policy,
// the restarts so far, when the next one comes, or that choird gave up
// and why.
func TestAgentStatusShowsTheRestartPolicy(t *testing.T) {
	now := time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		r    ctl.RestartStatus
		want []string
		not  []string
	}{
		{"off", ctl.RestartStatus{Policy: "off"}, []string{"off (a crashed session stays ended)"}, []string{"on-crash"}},
		{"pending", ctl.RestartStatus{Policy: "on-crash", MaxRestarts: 5, Restarts: 1, NextAt: now.Add(4 * time.Second), Backoff: "4s", LastCrash: "container exited unexpectedly with code 137"},
			[]string{"on-crash, 1 restart(s) in a row so far of at most 5", "next restart in 4s", "after a wait of 4s", "last crash: container exited unexpectedly with code 137"}, []string{"GAVE UP"}},
		{"restarting", ctl.RestartStatus{Policy: "on-crash", MaxRestarts: 5, Restarts: 2, Restarting: true}, []string{"restarting now"}, nil},
		{"failed attempt", ctl.RestartStatus{Policy: "on-crash", MaxRestarts: 5, Restarts: 2, NextAt: now.Add(8 * time.Second), Backoff: "8s", LastError: "no image for agent a1"},
			[]string{"next restart in 8s", "last restart failed: no image for agent a1"}, nil},
		{"gave up", ctl.RestartStatus{Policy: "on-crash", MaxRestarts: 3, Restarts: 3, GaveUp: "restart 3 of 3 in a row failed", LastError: "x"},
			[]string{"GAVE UP: restart 3 of 3 in a row failed", "start it again by hand"}, []string{"next restart", "last restart failed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := restartLine(&tc.r, now)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("restartLine = %q; want %q", got, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("restartLine = %q; must not say %q", got, n)
				}
			}
		})
	}
	var out bytes.Buffer
	if err := writeAgentStatus(&out, &ctl.AgentStatus{AgentID: "a1", State: "stopped", Restart: &ctl.RestartStatus{Policy: "on-crash", MaxRestarts: 5, GaveUp: "why"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "restart") || !strings.Contains(out.String(), "GAVE UP: why") {
		t.Errorf("agent status =\n%s\nwant a restart line", out.String())
	}
}
