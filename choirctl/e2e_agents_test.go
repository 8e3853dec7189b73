package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"choir/internal/docker"
	"choir/testkit/dockertest"
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
	cfg["models"] = map[string]any{"m": map[string]any{"provider": "test", "model": "x", "endpoint": "http://127.0.0.1:9/v1", "secret": "llm-key"}}
	cfg["git_identities"] = map[string]any{"dev": map[string]any{"name": "Dev", "email": "dev@choir.local", "secret": "git-token"}}
	cfg["gateways"] = map[string]any{"bot": map[string]any{"type": "telegram", "secret": "tg"}}
	cfg["dms"] = map[string]any{"dm1": map[string]any{"gateway": "bot", "user_id": "1"}}
	cfg["agents"] = map[string]any{"agent-1": map[string]any{"defaults": map[string]any{"workspace": "main", "llm": "m", "git_identity": "dev", "dm": "dm1"}}}
	cfg["heartbeat_interval_ms"], cfg["crash_detection_threshold_ms"] = 200, 3000
	out, _ := json.MarshalIndent(cfg, "", "  ")
	os.WriteFile(path, out, 0o644)
	for name, value := range map[string]string{"llm-key": apiSecret, "git-token": "ghp-e2e-Token-5Yt", "tg": "tg-e2e-Token-9Kd"} {
		if _, stderr, code := ctlRun(t, home, "", "secret", "set", name, value); code != 0 {
			t.Fatalf("secret set %s = %d %s", name, code, stderr)
		}
	}
}

func TestAgentsThroughChoirctl(t *testing.T) {
	home := filepath.Join(t.TempDir(), "h")
	workspace := filepath.Join(t.TempDir(), "ws")
	os.MkdirAll(workspace, 0o755)
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
	cs, _ := dc.ContainerList(context.Background(), docker.ContainerListOptions{All: true, Filters: docker.Filters{"label": {"choir.agent=agent-1"}}})
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
