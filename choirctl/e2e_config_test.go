package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/testkit"
	"choir/testkit/demomodel"
	"choir/testkit/dockertest"
)

// countingModel is the demo model behind a counter and a gate that can
// keep the user's turns in flight.
type countingModel struct {
	demo  demomodel.Server
	mu    sync.Mutex
	turns int
	seen  []string // every request body
	gate  chan struct{}
	held  int
}

func (m *countingModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 16<<20))
	turn := requestKind(body) == "turn"
	m.mu.Lock()
	m.seen = append(m.seen, string(body))
	gate := m.gate
	if turn {
		m.turns++
		if gate != nil {
			m.held++
		}
	}
	m.mu.Unlock()
	if turn && gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	m.demo.ServeHTTP(w, r)
}

func (m *countingModel) count() (turns, held int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.turns, m.held
}

func (m *countingModel) saw(text string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.seen {
		if strings.Contains(s, text) {
			return true
		}
	}
	return false
}

// serveModel serves a countingModel where containers reach it and returns
// its /v1 endpoint.
func serveModel(t *testing.T, m *countingModel) string {
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

// TestConfigApplyAndAgentUpdate is the two-phase change of a running
// installation (§16.3, §17.4-17.6) on a real engine: a hot change (the
// model's endpoint) reaches the running agent without a restart while a
// call in flight finishes where it began; a restart-required change is
// reported by diff and refused by apply; a repo change is reported file by
// file and applied by agent update, which resumes the session on the new
// image.
func TestConfigApplyAndAgentUpdate(t *testing.T) {
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
	a, b := &countingModel{}, &countingModel{}
	endpointA, endpointB := serveModel(t, a), serveModel(t, b)
	env := backends(t, home)
	editConfig(t, home, func(cfg map[string]any) {
		cfg["global_repo"] = map[string]any{"url": global, "ref": "main"}
		cfg["workspaces"] = map[string]any{"main": map[string]any{"path": testkit.Workspace(t)}}
		cfg["models"] = map[string]any{"m": map[string]any{"provider": "test", "model": "x", "endpoint": endpointA, "secret": "llm-key"}}
		cfg["git_identities"] = map[string]any{"dev": map[string]any{"name": "Dev", "email": "dev@choir.local", "secret": "git-token"}}
		cfg["gateways"] = map[string]any{"console": map[string]any{"type": "console"}}
		cfg["dms"] = map[string]any{"dm1": map[string]any{"gateway": "console", "admin": true}}
		cfg["agents"] = map[string]any{"agent-1": map[string]any{"repo": map[string]any{"url": agentRepo, "ref": "main"},
			"defaults": map[string]any{"workspace": "main", "llm": "m", "git_identity": "dev", "dm": "dm1"}}}
		cfg["heartbeat_interval_ms"] = 200
	})
	for name, value := range map[string]string{"llm-key": apiSecret, "git-token": "ghp-e2e-Token-5Yt"} {
		if _, stderr, code := ctlRun(t, home, "", "secret", "set", name, value); code != 0 {
			t.Fatalf("secret set %s = %d %s", name, code, stderr)
		}
	}
	d := startChoird(t, home, env)
	waitReady(t, home, d)
	t.Cleanup(func() { removeAgentImages(t, "agent-1") })
	report := func() string { return "choird:\n" + tail(d.stderr.String(), 3000) }
	if out, stderr, code := ctlRun(t, home, "", "agent", "build", "agent-1"); code != 0 {
		t.Fatalf("agent build = %d\n%s\n%s", code, out, stderr)
	}
	if _, stderr, code := ctlRun(t, home, "", "agent", "start", "agent-1", "--dm=dm1"); code != 0 {
		t.Fatalf("agent start = %d %q\n%s", code, stderr, report())
	}
	t.Cleanup(func() { ctlRun(t, home, "", "agent", "stop", "agent-1") })
	say := func(msg string) string {
		t.Helper()
		out, stderr, code := ctlRun(t, home, msg, "chat", "agent-1", "--once", "--timeout", "2m")
		if code != 0 || !strings.Contains(out, demomodel.Prefix) {
			t.Fatalf("chat %q = %d %q %q\n%s", msg, code, out, stderr, report())
		}
		return out
	}
	say("hello")
	before := agentState(t, home, "agent-1")

	// A hot change while a call is in flight at the old endpoint.
	a.mu.Lock()
	a.gate = make(chan struct{})
	a.mu.Unlock()
	inFlight := goChat(t, home, "agent-1", "a question in flight")
	waitUntil(t, "the call in flight at model A", time.Minute, func() bool { _, held := a.count(); return held == 1 }, report)
	editConfig(t, home, func(cfg map[string]any) {
		cfg["models"].(map[string]any)["m"].(map[string]any)["endpoint"] = endpointB
	})
	out, stderr, code := ctlRun(t, home, "", "config", "load")
	if code != 0 || !strings.Contains(out, "~ config.json: models.m [hot-reload] → included in: choirctl config apply") {
		t.Fatalf("config load = %d %q %q; want the model's change, hot", code, out, stderr)
	}
	if out, stderr, code := ctlRun(t, home, "", "config", "apply"); code != 0 || !strings.Contains(out, "applied 1 change(s)") {
		t.Fatalf("config apply = %d %q %q", code, out, stderr)
	}
	version := choirdStatus(t, home).ConfigVersion
	waitUntil(t, "the agent on the applied config version", time.Minute, func() bool {
		return agentState(t, home, "agent-1").ConfigVersion == version
	}, report)
	close(a.gate)
	if r := <-inFlight; r.code != 0 || !strings.Contains(r.out, demomodel.Prefix) {
		t.Errorf("the chat in flight during the apply = %d %q %q; want its answer", r.code, r.out, r.stderr)
	}
	turnsA, _ := a.count()
	say("after the apply")
	if n, _ := a.count(); n != turnsA {
		t.Errorf("model A got %d more turn(s) after the apply; want none", n-turnsA)
	}
	if !b.saw("after the apply") {
		t.Errorf("model B never saw the turn after the apply\n%s", report())
	}
	if st := agentState(t, home, "agent-1"); st.Container != before.Container || st.SessionID != before.SessionID {
		t.Errorf("the apply restarted the agent: container %s -> %s, session %s -> %s", before.Container, st.Container, before.SessionID, st.SessionID)
	}

	// A restart-required change: reported, refused, nothing applied.
	editConfig(t, home, func(cfg map[string]any) { cfg["approval_timeout_ms"] = 123456 })
	out, _, code = ctlRun(t, home, "", "config", "load")
	if code != 0 || !strings.Contains(out, "~ config.json: approval_timeout_ms [restart-required]") || !strings.Contains(out, "config apply would refuse") {
		t.Errorf("config load of a restart-required change = %d %q", code, out)
	}
	if _, stderr, code := ctlRun(t, home, "", "config", "apply"); code != 1 || !strings.Contains(stderr, "restart choird") || !strings.Contains(stderr, "nothing applied") {
		t.Errorf("config apply of a restart-required change = %d %q; want 1 saying to restart choird", code, stderr)
	}
	if choirdStatus(t, home).ConfigVersion != version {
		t.Error("a refused apply moved the config version")
	}
	if shown, _, _ := ctlRun(t, home, "", "config", "show"); strings.Contains(shown, "123456") {
		t.Error("a refused apply changed the running configuration")
	}
	editConfig(t, home, func(cfg map[string]any) { delete(cfg, "approval_timeout_ms") })

	// A repo change: listed file by file, applied by agent update.
	commitFile(t, agentRepo, "identity/SOUL.md", "You are the updated soul, SOUL-MARK-2.\n", 0o644)
	out, stderr, code = ctlRun(t, home, "", "config", "load")
	for _, want := range []string{"~ agent-1 repo: ", "~ agent-1:identity/SOUL.md [restart-required] → use: choirctl agent update agent-1"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("config load after a repo commit = %d %q %q; want %q", code, out, stderr, want)
		}
	}
	out, stderr, code = ctlRun(t, home, "", "agent", "update", "agent-1")
	if code != 0 || !strings.Contains(out, "agent-1: redeployed") {
		t.Fatalf("agent update = %d %q %q\n%s", code, out, stderr, report())
	}
	after := agentState(t, home, "agent-1")
	if after.Container == before.Container || after.SessionID != before.SessionID || after.Resumed == nil {
		t.Errorf("after update: container %s (was %s), session %s (was %s), resumed %v; want a new container resuming the session",
			after.Container, before.Container, after.SessionID, before.SessionID, after.Resumed)
	}
	if after.Image == before.Image {
		t.Errorf("after update the agent runs %s, the image it ran before", after.Image)
	}
	say("after the update")
	if !b.saw("SOUL-MARK-2") {
		t.Error("the updated agent's prompt lacks the new SOUL.md")
	}
	if out, stderr, code := ctlRun(t, home, "", "agent", "update-all"); code != 0 || !strings.Contains(out, "agent-1: skipped") {
		t.Errorf("agent update-all with nothing new = %d %q %q; want agent-1 skipped", code, out, stderr)
	}
	if _, stderr, code := ctlRun(t, home, "", "agent", "stop", "agent-1"); code != 0 {
		t.Errorf("agent stop = %d %q", code, stderr)
	}
	d.stop(t)
}
