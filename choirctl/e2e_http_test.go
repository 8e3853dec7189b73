package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"choir/internal/docker"
	"choir/testkit"
	"choir/testkit/demomodel"
	"choir/testkit/dockertest"
	"choir/testkit/imagetest"
)

// TestAgentOverTheHTTPTransport: with --transport=http choird serves HTTPS
// where containers reach it, with a certificate it signs itself; a real
// agent starts with no socket (its directory holds only the CA it
// trusts), says hello, chats and calls a tool, stops, and resumes its
// session, as over the socket.
func TestAgentOverTheHTTPTransport(t *testing.T) {
	dc := dockertest.Engine(t)
	home := filepath.Join(t.TempDir(), "h")
	ctlRun(t, home, "", "init")
	env := backends(t, home)
	workspace := testkit.Workspace(t)
	agentConfig(t, home, workspace)
	model := &countingModel{}
	endpoint := serveModel(t, model)
	editConfig(t, home, func(cfg map[string]any) {
		cfg["models"].(map[string]any)["m"].(map[string]any)["endpoint"] = endpoint
		cfg["gateways"] = map[string]any{"console": map[string]any{"type": "console"}}
		cfg["dms"] = map[string]any{"dm1": map[string]any{"gateway": "console", "admin": true}}
	})
	dockertest.AgentImageFrom(t, dc, imagetest.Debian(t, dc), "agent-1", "http1") // choir.exec needs a shell
	bridge := dockertest.BridgeIP(t)
	d := startChoird(t, home, env, "--transport=http", "--listen="+bridge+":0")
	waitReady(t, home, d)
	report := func() string { return "choird:\n" + tail(d.stderr.String(), 3000) }
	st := choirdStatus(t, home)
	if st.Transport != "http" || !strings.HasPrefix(st.AgentSocket, "https://"+bridge+":") {
		t.Fatalf("status: transport %q, endpoint %q; want http at https://%s:PORT", st.Transport, st.AgentSocket, bridge)
	}

	if _, stderr, code := ctlRun(t, home, "", "agent", "start", "agent-1", "--dm=dm1"); code != 0 {
		t.Fatalf("agent start over http = %d %q\n%s", code, stderr, report())
	}
	t.Cleanup(func() { ctlRun(t, home, "", "agent", "stop", "agent-1") })
	dir := filepath.Join(home, "socks", "agent", "agent-1")
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "ca.pem" {
		t.Errorf("the agent's directory holds %v; want only ca.pem (no socket with the HTTP transport)", names)
	}
	cs, err := dc.ContainerList(t.Context(), docker.ContainerListOptions{Filters: docker.Filters{"label": {"choir.agent=agent-1", instanceLabel(home)}}})
	if err != nil || len(cs) != 1 {
		t.Fatalf("the agent's container: %v (%d)", err, len(cs))
	}
	c, err := dc.ContainerInspect(t.Context(), cs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if cmd := strings.Join(c.Config.Cmd, " "); !strings.Contains(cmd, "--control-plane=http --endpoint="+st.AgentSocket+" --tls-ca=/run/choir/ca.pem") {
		t.Errorf("the container runs choir-agent %q; want the http control plane at %s", cmd, st.AgentSocket)
	}

	say := func(msg string) string {
		t.Helper()
		out, stderr, code := ctlRun(t, home, msg, "chat", "agent-1", "--once", "--timeout", "2m")
		if code != 0 || !strings.Contains(out, demomodel.Prefix) {
			t.Fatalf("chat %q over http = %d %q %q\n%s", msg, code, out, stderr, report())
		}
		return out
	}
	os.WriteFile(filepath.Join(workspace, "marker-over-http.txt"), []byte("x"), 0o644)
	if out := say("list the files"); !strings.Contains(out, "marker-over-http.txt") {
		t.Errorf("the tool call's answer %q does not list the workspace", out)
	}
	before := agentState(t, home, "agent-1")
	if _, stderr, code := ctlRun(t, home, "", "agent", "stop", "agent-1"); code != 0 {
		t.Fatalf("agent stop over http = %d %q", code, stderr)
	}
	started := time.Now()
	if _, stderr, code := ctlRun(t, home, "", "agent", "start", "agent-1", "--dm=dm1"); code != 0 {
		t.Fatalf("second start over http = %d %q\n%s", code, stderr, report())
	}
	t.Logf("agent start on the local engine, resumed: %s", time.Since(started).Round(time.Millisecond)) // compare e2e_swarm_test.go
	after := agentState(t, home, "agent-1")
	if after.SessionID != before.SessionID || after.Resumed == nil {
		t.Errorf("the second start: session %s (was %s), resumed %v; want the session resumed", after.SessionID, before.SessionID, after.Resumed)
	}
	say("hello again")
	waitUntil(t, "a heartbeat over http", time.Minute, func() bool { return !agentState(t, home, "agent-1").LastHeartbeat.IsZero() }, report)
	if _, stderr, code := ctlRun(t, home, "", "agent", "stop", "agent-1"); code != 0 {
		t.Errorf("final stop = %d %q", code, stderr)
	}
	d.stop(t)
}
