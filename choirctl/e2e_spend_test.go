package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"choir/internal/config"
	"choir/internal/ctl"
	"choir/testkit"
	"choir/testkit/dockertest"
)

// spendModel is a fake model for the spend tests. Every answer reports
// the usage set in prompt/completion/cached. A user turn that says "spawn
// N" spawns N core jobs in one reply; a core job reports progress (a new
// text each time, so no loop breaker fires) until its calls are refused;
// anything else is answered "ok".
type spendModel struct {
	prompt, completion, cached atomic.Int64
	served                     atomic.Int64 // answers given
	coreCalls                  atomic.Int64
	mu                         sync.Mutex
	n                          int
}

func (m *spendModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 16<<20))
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if json.Unmarshal(body, &req) != nil || len(req.Messages) == 0 {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.n++
	n := m.n
	m.mu.Unlock()
	last := req.Messages[len(req.Messages)-1]
	var text string
	json.Unmarshal(last.Content, &text)
	msg := map[string]any{"role": "assistant", "content": "ok"}
	finish := "stop"
	call := func(name string, args any) map[string]any {
		a, _ := json.Marshal(args)
		return map[string]any{"id": fmt.Sprintf("call_%d_%s", n, name), "type": "function", "function": map[string]any{"name": name, "arguments": string(a)}}
	}
	switch {
	case offers(req.Tools, "session_summary"), offers(req.Tools, "memory_delta"):
		msg = map[string]any{"role": "assistant", "content": "nothing to add"}
	case offers(req.Tools, "core_report"):
		m.coreCalls.Add(1)
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
			call("choir_core_report", map[string]any{"type": "progress", "text": fmt.Sprintf("step %d", n)})}}
		finish = "tool_calls"
	case last.Role == "user" && strings.HasPrefix(text, "spawn "):
		var k int
		fmt.Sscanf(text, "spawn %d", &k)
		var calls []any
		for i := range k {
			calls = append(calls, call("choir_core_spawn", map[string]any{"job_name": fmt.Sprintf("job-%d", i), "task_spec": "report progress until stopped"}))
		}
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": calls}
		finish = "tool_calls"
	}
	m.served.Add(1)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("cmpl-%d", n), "object": "chat.completion", "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage": map[string]any{"prompt_tokens": m.prompt.Load(), "completion_tokens": m.completion.Load(),
			"total_tokens": m.prompt.Load() + m.completion.Load(), "prompt_tokens_details": map[string]any{"cached_tokens": m.cached.Load()}},
	})
}

func serveSpendModel(t *testing.T, m *spendModel) string {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(dockertest.BridgeIP(t), "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: m}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String() + "/v1"
}

// spendRig is agent-1 built from real repos and started on a real engine
// and Postgres, with spendModel as its model and the given spend config
// (newBuiltAgent's installation, with choird started by restartChoird:
// the shared test Postgres may make a start wait for its turn).
func spendRig(t *testing.T, m *spendModel, spend func(cfg map[string]any)) *builtAgent {
	t.Helper()
	endpoint := serveSpendModel(t, m)
	dc := dockertest.Engine(t)
	testkit.Build(t, "choir/agent")
	dockertest.BusyboxImage(t, dc, "choir-test/busybox:1")
	home := filepath.Join(t.TempDir(), "h")
	repos := t.TempDir()
	global, agentRepo := filepath.Join(repos, "global.git"), filepath.Join(repos, "agent-1.git")
	if _, stderr, code := ctlRun(t, home, "", "init", "--global-repo", global); code != 0 {
		t.Fatalf("init = %d %q", code, stderr)
	}
	commitFile(t, global, "Dockerfile.base", "FROM choir-test/busybox:1\nCOPY choir-agent /choir/bin/choir-agent\nENTRYPOINT [\"/choir/bin/choir-agent\"]\n", 0o644)
	if _, stderr, code := ctlRun(t, home, "", "agent", "init", "agent-1", "--repo", agentRepo); code != 0 {
		t.Fatalf("agent init = %d %q", code, stderr)
	}
	backends(t, home)
	editConfig(t, home, func(cfg map[string]any) {
		cfg["global_repo"] = map[string]any{"url": global, "ref": "main"}
		cfg["workspaces"] = map[string]any{"main": map[string]any{"path": testkit.Workspace(t)}}
		cfg["models"] = map[string]any{"m": map[string]any{"provider": "test", "model": "x", "endpoint": endpoint, "secret": "llm-key"}}
		cfg["git_identities"] = map[string]any{"dev": map[string]any{"name": "Dev", "email": "dev@choir.local", "secret": "git-token"}}
		cfg["gateways"] = map[string]any{"console": map[string]any{"type": "console"}}
		cfg["dms"] = map[string]any{"dm1": map[string]any{"gateway": "console", "admin": true}}
		cfg["agents"] = map[string]any{"agent-1": map[string]any{"repo": map[string]any{"url": agentRepo, "ref": "main"},
			"defaults": map[string]any{"workspace": "main", "llm": "m", "git_identity": "dev", "dm": "dm1"}}}
		cfg["heartbeat_interval_ms"] = 200
		spend(cfg)
	})
	for name, value := range map[string]string{"llm-key": apiSecret, "git-token": "ghp-e2e-Token-5Yt"} {
		if _, stderr, code := ctlRun(t, home, "", "secret", "set", name, value); code != 0 {
			t.Fatalf("secret set %s = %d %s", name, code, stderr)
		}
	}
	b := &builtAgent{home: home, agentRepo: agentRepo, d: restartChoird(t, home)}
	t.Cleanup(func() { removeAgentImages(t, "agent-1") })
	if out, stderr, code := ctlRun(t, home, "", "agent", "build", "agent-1"); code != 0 {
		t.Fatalf("agent build = %d\n%s\n%s", code, out, stderr)
	}
	if _, stderr, code := ctlRun(t, home, "", "agent", "start", "agent-1", "--dm=dm1"); code != 0 {
		t.Fatalf("agent start = %d %q\n%s", code, stderr, b.report())
	}
	t.Cleanup(func() { ctlRun(t, home, "", "agent", "stop", "agent-1") })
	return b
}

// chat sends one message and returns what the DM got.
func (b *builtAgent) chat(t *testing.T, msg string) string {
	t.Helper()
	out, stderr, _ := ctlRun(t, b.home, msg, "chat", "agent-1", "--once", "--timeout", "2m")
	return out + stderr
}

func usageOf(t *testing.T, home string, args ...string) ctl.UsageReport {
	t.Helper()
	out, stderr, code := ctlRun(t, home, "", append([]string{"usage", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("usage --json %v = %d %s", args, code, stderr)
	}
	var rep ctl.UsageReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("usage --json: %v\n%s", err, out)
	}
	return rep
}

// ledgerTokens sums a report: the calls answered (the attempts recorded,
// less those that failed: a failed attempt is recorded too), their tokens
// and cached tokens.
func ledgerTokens(rep ctl.UsageReport) (answered, tokens, cached int64) {
	for _, r := range rep.Rows {
		answered += r.Calls - r.Failed
		tokens += r.PromptTokens + r.CompletionTokens
		cached += r.CachedTokens
	}
	return answered, tokens, cached
}

// ledgerAttempts counts every recorded attempt.
func ledgerAttempts(rep ctl.UsageReport) (attempts, failed int64) {
	for _, r := range rep.Rows {
		attempts += r.Calls
		failed += r.Failed
	}
	return attempts, failed
}

func waitUntilT(t *testing.T, what string, d time.Duration, cond func() bool, report func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s\n%s", d, what, report())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDailyCapHoldsAcrossSessionsAndRestarts: an agent's daily cap in
// tokens is reached and the next call refused with a message that says
// which cap, what was spent, when it resets and how to raise it; the
// session stays alive. A new session is still refused, and so is one after
// choird is killed with SIGKILL and started again; `usage allow` lets the
// agent answer again. Every answer the model gave is in the ledger once.
func TestDailyCapHoldsAcrossSessionsAndRestarts(t *testing.T) {
	m := &spendModel{}
	m.prompt.Store(100_000)
	m.completion.Store(50)
	m.cached.Store(40_000)
	b := spendRig(t, m, func(cfg map[string]any) {
		a := cfg["agents"].(map[string]any)["agent-1"].(map[string]any)
		a["spend"] = map[string]any{"per_day_tokens": 150_000}
	})
	for i := range 2 {
		if out := b.chat(t, fmt.Sprintf("hello %d", i)); !strings.Contains(out, "ok") {
			t.Fatalf("chat %d under the cap = %q\n%s", i, out, b.report())
		}
	}
	refused := func(when string) {
		t.Helper()
		out := b.chat(t, "one more")
		for _, want := range []string{"spend cap reached", "daily cap in tokens of 150000 tokens", "resets", "choirctl usage allow agent-1"} {
			if !strings.Contains(out, want) {
				t.Fatalf("%s: chat = %q; want the refusal to say %q\n%s", when, out, want, b.report())
			}
		}
	}
	refused("at the cap")
	if out, _, code := ctlRun(t, b.home, "", "agent", "status", "agent-1"); code != 0 || !strings.Contains(out, "running") ||
		!strings.Contains(out, "of 150000 tokens (daily cap in tokens)") {
		t.Fatalf("agent status after the refusal = %d %q; want the session still running and today's spend against the cap", code, out)
	}

	// A new session: the cap is the agent's, not the session's.
	if _, stderr, code := ctlRun(t, b.home, "", "agent", "stop", "agent-1"); code != 0 {
		t.Fatalf("agent stop = %d %s", code, stderr)
	}
	if _, stderr, code := ctlRun(t, b.home, "", "agent", "start", "agent-1", "--fresh", "--dm=dm1"); code != 0 {
		t.Fatalf("agent start --fresh = %d %s\n%s", code, stderr, b.report())
	}
	refused("in a new session")

	// choird killed and started again: the ledger is in Postgres.
	b.d.cmd.Process.Kill()
	err := <-b.d.done
	b.d.done <- err
	b.d = restartChoird(t, b.home)
	if _, stderr, code := ctlRun(t, b.home, "", "agent", "start", "agent-1", "--fresh", "--dm=dm1"); code != 0 {
		t.Fatalf("agent start after choird's restart = %d %s\n%s", code, stderr, b.report())
	}
	refused("after choird was killed and started again")

	if out, stderr, code := ctlRun(t, b.home, "", "usage", "allow", "agent-1", "200000", "--tokens", "--until", "1h"); code != 0 || !strings.Contains(out, "agent-1 may spend 200000 more") {
		t.Fatalf("usage allow = %d %q %q", code, out, stderr)
	}
	if out := b.chat(t, "and now?"); !strings.Contains(out, "ok") || strings.Contains(out, "spend cap") {
		t.Fatalf("chat after usage allow = %q; want an answer\n%s", out, b.report())
	}
	if !strings.Contains(b.d.stderr.String(), "spend allowance granted") {
		t.Error("choird's log does not record the allowance")
	}

	// The ledger holds each answer once, with its cached tokens.
	served := m.served.Load()
	var rep ctl.UsageReport
	waitUntilT(t, "every answer in the ledger", time.Minute, func() bool {
		rep = usageOf(t, b.home, "--agent", "agent-1", "--by", "session")
		calls, _, _ := ledgerTokens(rep)
		return calls >= served
	}, func() string { return fmt.Sprintf("served %d; usage %+v\n%s", served, rep, b.report()) })
	calls, tokens, cached := ledgerTokens(rep)
	if calls != served || tokens != served*100_050 || cached != served*40_000 {
		t.Errorf("ledger: %d calls, %d tokens, %d cached; want %d answers of 100050 tokens, 40000 cached", calls, tokens, cached, served)
	}
	if len(rep.Rows) != 2 || !strings.Contains(rep.Today["agent-1"], "of 350000 tokens (daily cap in tokens)") {
		t.Errorf("usage by session = %+v; want the first and last sessions (refused calls cost nothing) and today's spend against the raised cap", rep)
	}
	out, _, _ := ctlRun(t, b.home, "", "usage", "--by", "session")
	if !strings.Contains(out, "CACHED") || !strings.Contains(out, "agent-1: today ") {
		t.Errorf("usage --by session =\n%s\nwant the cached column and today's line", out)
	}
}

// TestParallelCoresStayUnderTheCap: eight core jobs spawned at once call
// the model as fast as they can; the installation's daily token cap stops
// them, and the ledger's total never passes it (the documented bound is
// zero when every call uses less than it reserved, which this model's
// answers do). Every answer is in the ledger once, and the replicated log
// holds one ModelCall per ledger row.
func TestParallelCoresStayUnderTheCap(t *testing.T) {
	// default: each call reserves its prompt and 4096 tokens for the
	// answer; max_tokens: the model's request template sends max_tokens
	// 100, which the reservation takes instead.
	for _, tc := range []struct {
		name    string
		request map[string]any
	}{{"default", nil}, {"max_tokens", map[string]any{"body": map[string]any{"max_tokens": 100}}}} {
		t.Run(tc.name, func(t *testing.T) { parallelCores(t, tc.request) })
	}
}

func parallelCores(t *testing.T, request map[string]any) {
	const capTokens = 40_000
	m := &spendModel{}
	m.prompt.Store(200)
	m.completion.Store(20)
	b := spendRig(t, m, func(cfg map[string]any) {
		cfg["spend"] = map[string]any{"per_day_tokens": capTokens, "warn_at": 0.5}
		cfg["budgets"] = map[string]any{"max_core_jobs": 8, "per_job_max_steps": 500, "per_job_max_tool_calls": 500,
			"max_tool_calls_per_session": 5000, "total_session_tokens": 10_000_000}
		if request != nil {
			cfg["models"].(map[string]any)["m"].(map[string]any)["request"] = request
		}
	})
	if out := b.chat(t, "spawn 8"); !strings.Contains(out, "ok") {
		t.Fatalf("chat spawn 8 = %q\n%s", out, b.report())
	}
	st := agentStatusOf(t, b.home)
	report := func() string { return b.report() }
	waitUntilT(t, "the eight core jobs stopped", 3*time.Minute, func() bool {
		out, _, _ := ctlRun(t, b.home, "", "session", "events", st.SessionID, "--json")
		return strings.Count(out, `"CoreStopped"`) >= 8
	}, report)
	// An answer the model wrote while its core job was being stopped (the
	// cap ends the jobs, cancelling calls in flight) never reached the
	// agent: the ledger holds it as a failed (cancelled) attempt. Every
	// answer the model gave is in the ledger once, either way.
	served := m.served.Load()
	var rep ctl.UsageReport
	waitUntilT(t, "every answer in the ledger", time.Minute, func() bool {
		rep = usageOf(t, b.home)
		calls, _, _ := ledgerTokens(rep)
		_, failed := ledgerAttempts(rep)
		return calls+failed >= served
	}, report)
	calls, tokens, _ := ledgerTokens(rep)
	attempts, failed := ledgerAttempts(rep)
	t.Logf("8 cores: %d model calls answered (%d attempts failed), %d tokens against a cap of %d (overshoot %d); %d core calls",
		calls, failed, tokens, capTokens, tokens-capTokens, m.coreCalls.Load())
	if calls > served || calls+failed < served {
		t.Errorf("ledger has %d answered calls and %d failed attempts; the model answered %d", calls, failed, served)
	}
	if tokens > capTokens {
		t.Errorf("ledger total %d tokens; want at most the cap %d", tokens, capTokens)
	}
	if m.coreCalls.Load() < 16 {
		t.Errorf("the cores made %d calls; want them to have run against the cap", m.coreCalls.Load())
	}
	out, _, _ := ctlRun(t, b.home, "", "session", "events", st.SessionID, "--json")
	if n := int64(strings.Count(out, `"ModelCall"`)); n != attempts {
		t.Errorf("the replicated log holds %d ModelCall events; the ledger %d rows", n, attempts)
	}
	if !strings.Contains(out, "spend cap reached") {
		t.Errorf("no core job ended on the cap; events:\n%s", tail(out, 3000))
	}
}

// restartChoird starts choird again on home. The test Postgres serves one
// connection at a time to every test binary on the machine, so a choird
// may give up at its Postgres step while other tests hold the slot: it is
// started again until it is ready, within five minutes.
func restartChoird(t *testing.T, home string) *daemon {
	t.Helper()
	env := []string{"DOCKER_HOST=" + dockertest.Engine(t).Host()}
	c := ctl.NewClient(config.Home{Dir: home}.AdminSocket())
	defer c.Close()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		d := startChoird(t, home, env)
		for {
			if _, err := c.Status(context.Background()); err == nil {
				return d
			}
			select {
			case err := <-d.done:
				d.done <- err
				if time.Now().After(deadline) {
					t.Fatalf("choird did not start within 5 minutes:\n%s", d.stderr.String())
				}
				if !strings.Contains(d.stderr.String(), "Postgres") {
					t.Fatalf("choird exited (%v):\n%s", err, d.stderr.String())
				}
			case <-time.After(20 * time.Millisecond):
				continue
			}
			break
		}
	}
}

func agentStatusOf(t *testing.T, home string) ctl.AgentStatus {
	t.Helper()
	out, stderr, code := ctlRun(t, home, "", "agent", "status", "agent-1", "--json")
	if code != 0 {
		t.Fatalf("agent status = %d %s", code, stderr)
	}
	var st ctl.AgentStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("agent status --json: %v\n%s", err, out)
	}
	return st
}
