package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"choir/internal/config"
	"choir/internal/docker"
	"choir/internal/rpc"
	"choir/testkit"
	"choir/testkit/dockertest"
	"choir/testkit/telegramtest"
)

// agentConfig adds what one agent needs to a home's config.json and secrets.
func agentConfig(t *testing.T, home, workspace string) {
	t.Helper()
	path := filepath.Join(home, "config.json")
	data, _ := os.ReadFile(path)
	var cfg map[string]any
	json.Unmarshal(data, &cfg)
	cfg["global_repo"] = map[string]any{"url": "/nonexistent/global.git"}
	cfg["workspaces"] = map[string]any{"main": map[string]any{"path": workspace}}
	cfg["models"] = map[string]any{
		"m":  map[string]any{"provider": "test", "model": "x", "endpoint": "http://127.0.0.1:9/v1", "secret": "llm-key"},
		"m2": map[string]any{"provider": "test", "model": "y", "endpoint": "http://127.0.0.1:9/v1", "secret": "llm-key"},
	}
	cfg["git_identities"] = map[string]any{"dev": map[string]any{"name": "Dev", "email": "dev@choir.local", "secret": "git-token"}}
	cfg["gateways"] = map[string]any{"bot": map[string]any{"type": "telegram", "secret": "tg", "api_base": fakeTelegram(t)}}
	cfg["dms"] = map[string]any{"dm1": map[string]any{"gateway": "bot", "user_id": "1"}}
	cfg["agents"] = map[string]any{"agent-1": map[string]any{"defaults": map[string]any{"workspace": "main", "llm": "m", "git_identity": "dev", "dm": "dm1"}}}
	cfg["heartbeat_interval_ms"], cfg["crash_detection_threshold_ms"] = 200, 3000
	out, _ := json.MarshalIndent(cfg, "", "  ")
	os.WriteFile(path, out, 0o644)
	for name, value := range map[string]string{"llm-key": apiSecret, "git-token": "ghp-e2e-Token-5Yt", "tg": "12345:tg-e2e-Token-9Kd"} {
		if _, stderr, code := ctlRun(t, home, "", "secret", "set", name, value); code != 0 {
			t.Fatalf("secret set %s = %d %s", name, code, stderr)
		}
	}
}

func TestAgentsThroughChoirctl(t *testing.T) {
	home := filepath.Join(t.TempDir(), "h")
	workspace := testkit.Workspace(t)
	ctlRun(t, home, "", "init")
	env := backends(t, home)
	agentConfig(t, home, workspace)
	dc := dockertest.Engine(t)
	dockertest.AgentImage(t, dc, "agent-1", "e2e1")
	d := startChoird(t, home, env)
	waitReady(t, home, d)

	if _, stderr, code := ctlRun(t, home, "", "agent", "start", "agent-1"); code != 2 || !strings.Contains(stderr, "--dm is required") {
		t.Errorf("agent start without --dm = %d %q; want usage", code, stderr)
	}
	out, stderr, code := ctlRun(t, home, "", "agent", "start", "agent-1", "--dm=dm1")
	if code != 0 || !strings.Contains(out, "agent-1 started") {
		t.Fatalf("agent start = %d %q %q\nchoird: %s", code, out, stderr, d.stderr.String())
	}
	out, _, _ = ctlRun(t, home, "", "agent", "status", "agent-1")
	for _, want := range []string{"state           running", "image           choir-agent-agent-1:e2e1", "workspace=main", "dm=dm1"} {
		if !strings.Contains(out, want) {
			t.Errorf("agent status lacks %q:\n%s", want, out)
		}
	}
	if out, _, _ := ctlRun(t, home, "", "agent", "list"); !strings.Contains(out, "agent-1  running") {
		t.Errorf("agent list = %q", out)
	}
	if out, _, _ := ctlRun(t, home, "", "workspace", "list"); !strings.Contains(out, "agent-1") {
		t.Errorf("workspace list = %q; want agent-1 as the holder", out)
	}
	if _, stderr, code := ctlRun(t, home, "", "agent", "start", "agent-1", "--dm=dm1"); code != 1 || !strings.Contains(stderr, "already running") {
		t.Errorf("second start = %d %q; want refusal", code, stderr)
	}
	if out, _, _ := ctlRun(t, home, "", "status"); !strings.Contains(out, "agents running       1") {
		t.Errorf("status = %q; want one agent running", out)
	}

	// An approval requested by the agent (here: by the test, holding the
	// agent's own lease token) is listed, decided once, and refused twice.
	approvalRoundTrip(t, home, dc)

	// A refreshed secret reaches the running agent.
	agentLog := filepath.Join(home, "logs", "agent-1.log")
	received := func() int {
		data, _ := os.ReadFile(agentLog)
		return strings.Count(string(data), "secrets received")
	}
	waitFor(t, "the agent's first secrets", func() bool { return received() >= 1 })
	ctlRun(t, home, "", "secret", "set", "llm-key", apiSecret+"-rotated")
	out, stderr, code = ctlRun(t, home, "", "secret", "apply")
	if code != 0 || !strings.Contains(out, "1 running agents told to refresh") {
		t.Fatalf("secret apply = %d %q %q", code, out, stderr)
	}
	waitFor(t, "the agent to fetch its secrets again", func() bool { return received() >= 2 })
	// Sessions, models and voices.
	sessionsAndModels(t, home, received)

	// A secret the config needs cannot be removed by apply.
	ctlRun(t, home, "", "secret", "delete", "git-token")
	if _, stderr, code := ctlRun(t, home, "", "secret", "apply"); code != 1 || !strings.Contains(stderr, "nothing applied") {
		t.Errorf("secret apply without a needed secret = %d %q; want refusal", code, stderr)
	}
	ctlRun(t, home, "", "secret", "set", "git-token", "ghp-e2e-Token-5Yt")

	// choird killed while the agent runs: the next choird removes the orphan
	// and marks the session crashed.
	d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
	d.done <- nil
	d = startChoird(t, home, env)
	waitReady(t, home, d)
	out, _, _ = ctlRun(t, home, "", "status")
	if !strings.Contains(out, "remove orphaned containers               ok: 1 removed") || !strings.Contains(out, "1 stale sessions marked crashed") {
		t.Errorf("status after a restart over a running agent:\n%s", out)
	}
	cs, _ := dc.ContainerList(context.Background(), docker.ContainerListOptions{All: true, Filters: docker.Filters{"label": {"choir.agent=agent-1", instanceLabel(home)}}})
	if len(cs) != 0 {
		t.Errorf("%d agent containers left after choird restarted; want the orphan removed", len(cs))
	}

	// Start again and stop gracefully.
	if _, stderr, code := ctlRun(t, home, "", "agent", "start", "agent-1", "--dm=dm1"); code != 0 {
		t.Fatalf("agent start after restart = %d %q", code, stderr)
	}
	if out, stderr, code := ctlRun(t, home, "", "agent", "stop", "agent-1"); code != 0 || !strings.Contains(out, "agent-1 stopped") {
		t.Errorf("agent stop = %d %q %q", code, out, stderr)
	}
	if out, _, _ := ctlRun(t, home, "", "agent", "status", "agent-1"); !strings.Contains(out, "stopped") {
		t.Errorf("status after stop = %q", out)
	}
	if _, stderr, code := ctlRun(t, home, "", "agent", "stop", "agent-1"); code != 1 || !strings.Contains(stderr, "not running") {
		t.Errorf("stop of a stopped agent = %d %q", code, stderr)
	}
	if _, stderr, code := ctlRun(t, home, "", "agent", "status", "ghost"); code != 1 || !strings.Contains(stderr, `no agent named "ghost"`) {
		t.Errorf("status of an unknown agent = %d %q", code, stderr)
	}
	if err := d.stop(t); err != nil {
		t.Errorf("choird stop = %v\n%s", err, d.stderr.String())
	}
	assertNoSecrets(t, filepath.Join(home, "logs"), d.stderr.String())
	assertNoSecrets(t, workspace)
}

// fakeTelegram serves the Bot API for the test's bot token.
func fakeTelegram(t *testing.T) string {
	t.Helper()
	tg := telegramtest.New(t)
	tg.AddBot("12345:tg-e2e-Token-9Kd", "choir_e2e_bot")
	return tg.URL()
}

// approvalRoundTrip asks for an approval as agent-1 would (with the lease
// token choird gave its container) and decides it with choirctl.
func approvalRoundTrip(t *testing.T, home string, dc *docker.Client) {
	t.Helper()
	ctx := context.Background()
	cs, err := dc.ContainerList(ctx, docker.ContainerListOptions{Filters: docker.Filters{"label": {"choir.agent=agent-1", instanceLabel(home)}}})
	if err != nil || len(cs) != 1 {
		t.Fatalf("agent-1's container: %v (%d found)", err, len(cs))
	}
	c, err := dc.ContainerInspect(ctx, cs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range c.Config.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	sock := filepath.Join(config.Home{Dir: home}.AgentSocketDir(), "agent-1", "choird.sock")
	// The agent's socket refuses a forged token, and one that is a secret's
	// value is not logged (assertNoSecrets checks the logs at the end).
	forged, err := rpc.Dial(rpc.Options{Transport: rpc.TransportUDS, Socket: sock, SessionID: env["CHOIR_SESSION_ID"], LeaseToken: "sk-agents-Secret-" + "forged"})
	if err != nil {
		t.Fatal(err)
	}
	var rerr *rpc.Error
	if _, err := forged.Heartbeat(ctx, rpc.HeartbeatReq{}); !errors.As(err, &rerr) || rerr.Status != http.StatusUnauthorized {
		t.Errorf("heartbeat with a forged token on agent-1's socket = %v; want 401", err)
	}
	forged.Close()
	cp, err := rpc.Dial(rpc.Options{Transport: rpc.TransportUDS, Socket: sock, SessionID: env["CHOIR_SESSION_ID"], LeaseToken: env["CHOIR_LEASE_TOKEN"]})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	resp, err := cp.RequestApproval(ctx, rpc.ApprovalReq{RequestType: "tool", Payload: json.RawMessage(`{"manifest":{"llm":{"name":"notes.add"}},"rationale":"the user asked"}`)})
	if err != nil || resp.Status != rpc.ApprovalPending || resp.ApprovalID == "" {
		t.Fatalf("REQUEST_APPROVAL = %+v, %v; want a pending approval", resp, err)
	}
	out, stderr, code := ctlRun(t, home, "", "approval", "list")
	if code != 0 || !strings.Contains(out, resp.ApprovalID) || !strings.Contains(out, "pending") {
		t.Errorf("approval list = %d %q %q", code, out, stderr)
	}
	if out, _, _ := ctlRun(t, home, "", "approval", "show", resp.ApprovalID); !strings.Contains(out, "notes.add") {
		t.Errorf("approval show = %q; want the payload", out)
	}
	if out, stderr, code := ctlRun(t, home, "", "approval", "approve", resp.ApprovalID); code != 0 || !strings.Contains(out, "approved") {
		t.Errorf("approval approve = %d %q %q", code, out, stderr)
	}
	if _, stderr, code := ctlRun(t, home, "", "approval", "reject", resp.ApprovalID); code != 1 || !strings.Contains(stderr, "choirctl") {
		t.Errorf("second decision = %d %q; want refused, naming who decided", code, stderr)
	}
}

func sessionsAndModels(t *testing.T, home string, received func() int) {
	t.Helper()
	out, _, code := ctlRun(t, home, "", "session", "list", "agent-1")
	if code != 0 || !strings.Contains(out, "active") {
		t.Fatalf("session list = %d %q", code, out)
	}
	sessionID := strings.Fields(strings.Split(out, "\n")[1])[0]
	if out, stderr, code := ctlRun(t, home, "", "session", "events", sessionID); code != 0 {
		t.Errorf("session events = %d %q %q", code, out, stderr)
	}
	if out, _, code := ctlRun(t, home, "", "session", "cores", sessionID); code != 0 || !strings.Contains(out, "no core jobs") {
		t.Errorf("session cores = %d %q", code, out)
	}
	if _, stderr, code := ctlRun(t, home, "", "session", "compact", sessionID); code != 0 {
		t.Errorf("session compact = %d %q", code, stderr)
	}
	if _, stderr, code := ctlRun(t, home, "", "session", "cancel", "no-such-session", "job"); code != 1 || !strings.Contains(stderr, "no running session") {
		t.Errorf("cancel on an unknown session = %d %q", code, stderr)
	}
	if out, _, _ := ctlRun(t, home, "", "model", "list"); !strings.Contains(out, "m2") {
		t.Errorf("model list = %q", out)
	}
	if out, _, _ := ctlRun(t, home, "", "model", "get", "agent-1"); strings.TrimSpace(out) != "m" {
		t.Errorf("model get = %q; want m", out)
	}
	before := received()
	if out, stderr, code := ctlRun(t, home, "", "model", "set", "agent-1", "--llm=m2"); code != 0 || !strings.Contains(out, "now uses model m2") {
		t.Errorf("model set = %d %q %q", code, out, stderr)
	}
	waitFor(t, "the agent to refetch after model set", func() bool { return received() > before })
	if out, _, _ := ctlRun(t, home, "", "model", "get", "agent-1"); strings.TrimSpace(out) != "m2" {
		t.Errorf("model get after set = %q; want m2", out)
	}
	if _, stderr, code := ctlRun(t, home, "", "model", "set", "agent-1", "--llm=gpt-9"); code != 1 || !strings.Contains(stderr, `no model named "gpt-9"`) {
		t.Errorf("model set to an unknown model = %d %q", code, stderr)
	}
	if _, stderr, code := ctlRun(t, home, "", "voice", "set", "agent-1", "nobody"); code != 1 || !strings.Contains(stderr, `no voice profile named "nobody"`) {
		t.Errorf("voice set to an unknown voice = %d %q", code, stderr)
	}
}
