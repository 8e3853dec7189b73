package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"choir/testkit"
	"choir/testkit/browsertest"
	"choir/testkit/dockertest"
)

// browseModel answers "browse URL" (or "shot URL", for a screenshot) with a
// choir.web.browse call (callerModel).
func browseModel() *callerModel {
	return &callerModel{call: func(text string) (string, string, bool) {
		verb, target, _ := strings.Cut(text, " ")
		mode, ok := map[string]string{"browse": "text", "shot": "screenshot"}[verb]
		args, _ := json.Marshal(map[string]any{"url": target, "mode": mode})
		return "choir_web_browse", string(args), ok
	}}
}

// TestBrowseEndToEnd: two agents in real containers under choird, whose
// model calls choir.web.browse on pages the test serves on loopback (the
// browser runs on the host, in choird's browser worker): the reply carries
// the page's text, a screenshot lands in the agent's .choirtmp/send/, and
// neither agent sees the other's cookie; a new session starts with none.
func TestBrowseEndToEnd(t *testing.T) {
	drv := browsertest.Find(t)
	dc := dockertest.Engine(t)
	home := filepath.Join(t.TempDir(), "h")
	ctlRun(t, home, "", "init")
	env := append(backends(t, home), browsertest.EnvDriver+"="+drv.DriverDir, browsertest.EnvChromium+"="+drv.Executable)

	l, err := net.Listen("tcp", net.JoinHostPort(dockertest.BridgeIP(t), "0"))
	if err != nil {
		t.Fatal(err)
	}
	model := &http.Server{Handler: browseModel()}
	go model.Serve(l)
	t.Cleanup(func() { model.Close() })
	site := browsertest.Serve(t, "127.0.0.1")

	path := filepath.Join(home, "config.json")
	data, _ := os.ReadFile(path)
	var cfg map[string]any
	json.Unmarshal(data, &cfg)
	cfg["global_repo"] = map[string]any{"url": "/nonexistent/global.git"}
	cfg["models"] = map[string]any{"m": map[string]any{"provider": "test", "model": "browse", "endpoint": "http://" + l.Addr().String() + "/v1", "secret": "llm-key"}}
	cfg["git_identities"] = map[string]any{
		"browse-1": map[string]any{"name": "One", "email": "one@choir.local", "secret": "git-token"},
		"browse-2": map[string]any{"name": "Two", "email": "two@choir.local", "secret": "git-token"},
	}
	cfg["gateways"] = map[string]any{"console": map[string]any{"type": "console"}}
	workspaces, dms, agents := map[string]any{}, map[string]any{}, map[string]any{}
	ws := map[string]string{}
	for _, a := range []string{"browse-1", "browse-2"} {
		ws[a] = testkit.Workspace(t)
		workspaces[a] = map[string]any{"path": ws[a]}
		dms[a] = map[string]any{"gateway": "console", "admin": true}
		agents[a] = map[string]any{"defaults": map[string]any{"workspace": a, "llm": "m", "git_identity": a, "dm": a}}
		dockertest.AgentImage(t, dc, a, "br1")
	}
	cfg["workspaces"], cfg["dms"], cfg["agents"] = workspaces, dms, agents
	out, _ := json.MarshalIndent(cfg, "", "  ")
	os.WriteFile(path, out, 0o644)
	for name, value := range map[string]string{"llm-key": apiSecret, "git-token": "ghp-browse-Token-8Wc"} {
		if _, stderr, code := ctlRun(t, home, "", "secret", "set", name, value); code != 0 {
			t.Fatalf("secret set %s = %d %s", name, code, stderr)
		}
	}
	d := startChoird(t, home, env)
	waitReady(t, home, d)
	start := func(agent string) {
		t.Helper()
		if out, stderr, code := ctlRun(t, home, "", "agent", "start", agent, "--dm="+agent); code != 0 {
			t.Fatalf("agent start %s = %d %q %q\nchoird: %s", agent, code, out, stderr, d.stderr.String())
		}
	}
	say := func(agent, msg string) string {
		t.Helper()
		out, stderr, code := ctlRun(t, home, msg, "chat", agent, "--once", "--timeout", "3m", "--files", t.TempDir())
		if code != 0 {
			data, _ := os.ReadFile(filepath.Join(home, "logs", agent+".log"))
			t.Fatalf("%s did not answer %q: %d %q %q\nagent log tail:\n%s", agent, msg, code, out, stderr, data[max(0, len(data)-3000):])
		}
		return out
	}
	start("browse-1")
	start("browse-2")

	if out := say("browse-1", "browse "+site.URL+"/hello"); !strings.Contains(out, browsertest.HelloText) {
		t.Fatalf("browse-1's reply = %q; want the page's text %q\nchoird: %s", out, browsertest.HelloText, d.stderr.String())
	}
	// The screenshot lands in .choirtmp/send/ and goes out with the reply.
	files := filepath.Join(t.TempDir(), "files")
	shot, stderr, code := ctlRun(t, home, "shot "+site.URL+"/hello", "chat", "browse-1", "--once", "--timeout", "3m", "--files", files)
	if code != 0 || !strings.Contains(shot, ".choirtmp/send/browse-main-") {
		t.Fatalf("screenshot chat = %d %q %q; want a reply naming a file under .choirtmp/send/", code, shot, stderr)
	}
	waitFor(t, "the screenshot to reach the chat", func() bool {
		ents, _ := os.ReadDir(files)
		return len(ents) == 1
	})
	ents, _ := os.ReadDir(files)
	if b, err := os.ReadFile(filepath.Join(files, ents[0].Name())); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) || !strings.HasPrefix(ents[0].Name(), "browse-main-") {
		t.Errorf("the file the chat received, %s: %v (%d bytes); want the PNG screenshot", ents[0].Name(), err, len(b))
	}
	if ents, _ := os.ReadDir(filepath.Join(ws["browse-1"], ".choirtmp", "send")); len(ents) != 0 {
		t.Errorf("after delivery, .choirtmp/send/ still holds %d files", len(ents))
	}

	say("browse-1", "browse "+site.URL+"/cookie/set?v=one-Secret-4Rk")
	if out := say("browse-2", "browse "+site.URL+"/cookie/show"); !strings.Contains(out, "no cookies") || strings.Contains(out, "one-Secret-4Rk") {
		t.Errorf("browse-2 sees %q; want no cookies (browse-1's cookie is browse-1's)", out)
	}
	if out := say("browse-1", "browse "+site.URL+"/cookie/show"); !strings.Contains(out, "choir=one-Secret-4Rk") {
		t.Errorf("browse-1 sees %q; want its own cookie", out)
	}

	// The context ends with the session: a new session has no cookie.
	if out, stderr, code := ctlRun(t, home, "", "agent", "stop", "browse-1"); code != 0 {
		t.Fatalf("agent stop = %d %q %q", code, out, stderr)
	}
	start("browse-1")
	if out := say("browse-1", "browse "+site.URL+"/cookie/show"); !strings.Contains(out, "no cookies") {
		t.Errorf("browse-1's next session sees %q; want no cookies", out)
	}
	if err := d.stop(t); err != nil {
		t.Errorf("choird stop = %v\n%s", err, d.stderr.String())
	}
	assertNoSecrets(t, filepath.Join(home, "logs"), d.stderr.String())
}
