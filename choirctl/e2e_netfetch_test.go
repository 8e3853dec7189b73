package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"choir/internal/ctl"
	"choir/testkit"
	"choir/testkit/demomodel"
	"choir/testkit/dockertest"
)

// fetchModel answers "fetch URL" with a choir.net.fetch call (callerModel),
// and then with the tool's result.
func fetchModel() *callerModel {
	return &callerModel{call: func(text string) (string, string, bool) {
		verb, target, _ := strings.Cut(text, " ")
		args, _ := json.Marshal(map[string]any{"url": target})
		return "choir_net_fetch", string(args), verb == "fetch"
	}}
}

// TestNetFetchEndToEnd (issue 25 items 1 and 7): nf-1 is an interactive
// agent in network policy mode, in a real container. Its model calls
// choir.net.fetch on a page the test serves on the host's loopback, which
// the allowlist names: the reply carries the page's text, fetched by
// choird. A URL outside the allowlist is refused with the reason and the
// policy's path, and never reaches the server. Both are in choird's log.
func TestNetFetchEndToEnd(t *testing.T) {
	dc := dockertest.Engine(t)
	home := filepath.Join(t.TempDir(), "h")
	workspace := testkit.Workspace(t)
	ctlRun(t, home, "", "init")
	env := backends(t, home)
	agentConfig(t, home, workspace)

	// The model and the site listen on the host's loopback only: nothing
	// in a container reaches them but through choird.
	ml, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ms := &http.Server{Handler: fetchModel()}
	go ms.Serve(ml)
	t.Cleanup(func() { ms.Close() })
	var secretHits atomic.Int64
	site := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/allowed/page":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			io.WriteString(w, "the allowed page says nf-Page-7Qx")
		default:
			secretHits.Add(1)
			io.WriteString(w, "nf-Secret-3Zw")
		}
	})}
	sl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go site.Serve(sl)
	t.Cleanup(func() { site.Close() })
	siteURL := "http://" + sl.Addr().String()

	editConfig(t, home, func(cfg map[string]any) {
		cfg["models"].(map[string]any)["m"] = map[string]any{"provider": "test", "model": "fetch", "endpoint": "http://" + ml.Addr().String() + "/v1", "secret": "llm-key"}
		cfg["gateways"] = map[string]any{"console": map[string]any{"type": "console"}}
		cfg["dms"] = map[string]any{"nf": map[string]any{"gateway": "console", "admin": true}}
		cfg["agents"] = map[string]any{"nf-1": map[string]any{
			"network":  map[string]any{"mode": "policy", "allow": []any{siteURL + "/allowed/"}},
			"defaults": map[string]any{"workspace": "main", "llm": "m", "git_identity": "dev", "dm": "nf"}}}
	})
	dockertest.AgentImage(t, dc, "nf-1", "nf1")
	d := startChoird(t, home, env)
	waitReady(t, home, d)
	if out, stderr, code := ctlRun(t, home, "", "agent", "start", "nf-1", "--dm=nf"); code != 0 {
		t.Fatalf("agent start nf-1 = %d %q %q\n%s", code, out, stderr, d.stderr.String())
	}
	say := func(msg string) string {
		t.Helper()
		out, stderr, code := ctlRun(t, home, msg, "chat", "nf-1", "--once", "--timeout", "3m")
		if code != 0 {
			data, _ := os.ReadFile(filepath.Join(home, "logs", "nf-1.log"))
			t.Fatalf("nf-1 did not answer %q: %d %q %q\nagent log tail:\n%s\nchoird:\n%s", msg, code, out, stderr, data[max(0, len(data)-3000):], d.stderr.String())
		}
		return out
	}

	out := say("fetch " + siteURL + "/allowed/page")
	if !strings.Contains(out, "nf-Page-7Qx") || !strings.Contains(out, "untrusted") {
		t.Errorf("nf-1's reply = %q; want the allowed page's text, marked untrusted\nchoird:\n%s", out, d.stderr.String())
	}
	out = say("fetch " + siteURL + "/secret")
	for _, want := range []string{"denied", "outside every allowed prefix", "agents.nf-1.network.allow", "ask the operator"} {
		if !strings.Contains(out, want) {
			t.Errorf("nf-1's reply to a denied URL = %q; want it to say %q", out, want)
		}
	}
	if strings.Contains(out, "nf-Secret-3Zw") || secretHits.Load() != 0 {
		t.Errorf("the denied URL was fetched (%d requests reached it)", secretHits.Load())
	}

	if err := d.stop(t); err != nil {
		t.Errorf("choird stop = %v\n%s", err, d.stderr.String())
	}
	// choird logged both requests, the denied one with its reason.
	logs := d.stderr.String()
	if !strings.Contains(logs, `"msg":"choir.net.fetch"`) || !strings.Contains(logs, "/allowed/page") || !strings.Contains(logs, `"allowed":false`) {
		t.Errorf("choird's log does not record both fetches:\n%s", logs)
	}
	assertNoSecrets(t, filepath.Join(home, "logs"), d.stderr.String(), out)
}

// researchModel answers a headless run's objective with two choir.net.fetch
// calls, the allowed URL and then the denied one, and then with what the
// tools said.
type researchModel struct {
	demo            demomodel.Server
	allowed, denied string
}

func (m *researchModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	if json.Unmarshal(body, &req) == nil && len(req.Messages) > 0 && offers(req.Tools, "net_fetch") {
		tools, last := 0, req.Messages[len(req.Messages)-1]
		for _, msg := range req.Messages {
			if msg.Role == "tool" {
				tools++
			}
		}
		call := func(url string) {
			args, _ := json.Marshal(map[string]any{"url": url})
			writeCompletion(w, req.Model, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": "call_" + strconv.Itoa(tools), "type": "function",
				"function": map[string]any{"name": "choir_net_fetch", "arguments": string(args)}}}}, "tool_calls")
		}
		switch {
		case last.Role == "user":
			call(m.allowed)
			return
		case last.Role == "tool" && tools == 1:
			call(m.denied)
			return
		case last.Role == "tool":
			writeCompletion(w, req.Model, map[string]any{"role": "assistant", "content": "research done"}, "stop")
			return
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	m.demo.ServeHTTP(w, r)
}

// TestNetFetchResearchRun (issue 25 item 7): a CURIOUS run of nf-2 in a
// run container of its own (no network) fetches a page its mood's
// allowlist (headless.moods.CURIOUS.allow) names and is refused one it
// does not: both are NetRequest receipts on the run, the allowed one
// citing the page stored as a source object, the denied one with its
// reason; the denied URL is never requested.
func TestNetFetchResearchRun(t *testing.T) {
	dc := dockertest.Engine(t)
	home := filepath.Join(t.TempDir(), "h")
	ctlRun(t, home, "", "init")
	env := backends(t, home)
	ws := testkit.Workspace(t)
	gitIn := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", ws, "-c", "safe.directory=*"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	gitIn("init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(ws, "README"), []byte("research\n"), 0o644)
	gitIn("add", ".")
	gitIn("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "start")
	filepath.Walk(ws, func(p string, _ os.FileInfo, err error) error {
		if err == nil {
			os.Lchown(p, testkit.ToolUID, testkit.ToolGID)
		}
		return nil
	})

	var secretHits atomic.Int64
	site := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/docs/page" {
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "research page nf-Doc-5Lm")
			return
		}
		secretHits.Add(1)
		io.WriteString(w, "nf-Secret-3Zw")
	})}
	sl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go site.Serve(sl)
	t.Cleanup(func() { site.Close() })
	siteURL := "http://" + sl.Addr().String()
	ml, err := net.Listen("tcp", "127.0.0.1:0") // a run's model calls go through choird
	if err != nil {
		t.Fatal(err)
	}
	ms := &http.Server{Handler: &researchModel{allowed: siteURL + "/docs/page", denied: siteURL + "/private/x"}}
	go ms.Serve(ml)
	t.Cleanup(func() { ms.Close() })

	editConfig(t, home, func(cfg map[string]any) {
		cfg["global_repo"] = map[string]any{"url": "/nonexistent/global.git"}
		cfg["workspaces"] = map[string]any{"main": map[string]any{"path": ws}}
		cfg["models"] = map[string]any{"m": map[string]any{"provider": "test", "model": "x", "endpoint": "http://" + ml.Addr().String() + "/v1", "secret": "llm-key"}}
		cfg["git_identities"] = map[string]any{"dev": map[string]any{"name": "Dev", "email": "dev@choir.local", "secret": "git-token"}}
		cfg["gateways"] = map[string]any{"console": map[string]any{"type": "console"}}
		cfg["dms"] = map[string]any{"nf2": map[string]any{"gateway": "console", "admin": true}}
		cfg["agents"] = map[string]any{"nf-2": map[string]any{"defaults": map[string]any{"workspace": "main", "llm": "m", "git_identity": "dev", "dm": "nf2"}}}
		cfg["heartbeat_interval_ms"] = 200
		cfg["headless"] = map[string]any{"moods": map[string]any{"CURIOUS": map[string]any{"allow": []any{siteURL + "/docs/"}}}}
	})
	for name, value := range map[string]string{"llm-key": apiSecret, "git-token": "ghp-e2e-Token-5Yt"} {
		if _, stderr, code := ctlRun(t, home, "", "secret", "set", name, value); code != 0 {
			t.Fatalf("secret set %s = %d %s", name, code, stderr)
		}
	}
	dockertest.AgentImage(t, dc, "nf-2", "nf2")
	d := startChoird(t, home, env)
	waitReady(t, home, d)
	report := func() string { return "choird:\n" + tail(d.stderr.String(), 6000) }

	var item ctl.WorkItem
	out, stderr, code := ctlRun(t, home, "", "work", "add", "nf-2", "read the docs page", "--accept", "the page was read", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &item) != nil || item.ID == "" {
		t.Fatalf("work add = %d %q %q", code, out, stderr)
	}
	var run ctl.Run
	out, stderr, code = ctlRun(t, home, "", "run", "start", item.ID, "--mood", "CURIOUS", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &run) != nil {
		t.Fatalf("run start = %d %q %q\n%s", code, out, stderr, report())
	}
	var receipts []ctl.Receipt
	waitUntil(t, "run "+run.ID+" to end", 5*time.Minute, func() bool {
		out, _, code := ctlRun(t, home, "", "run", "receipts", run.ID, "--json")
		if code != 0 || json.Unmarshal([]byte(out), &receipts) != nil {
			return false
		}
		return slices.ContainsFunc(receipts, func(r ctl.Receipt) bool { return r.Kind == "RunEnded" })
	}, report)

	var got []map[string]any
	var objects [][]string
	for _, r := range receipts {
		if r.Kind == "NetRequest" {
			var b map[string]any
			json.Unmarshal(r.Body, &b)
			got, objects = append(got, b), append(objects, r.Objects)
		}
	}
	if len(got) != 2 {
		out, _, _ := ctlRun(t, home, "", "run", "receipts", run.ID)
		t.Fatalf("NetRequest receipts = %v; want two (allowed, denied)\n%s\n%s", got, out, report())
	}
	if got[0]["allowed"] != true || got[0]["status"] != float64(200) || got[0]["policy"] != "headless.moods.CURIOUS.allow" ||
		got[0]["source"] == nil || len(objects[0]) != 1 || objects[0][0] != got[0]["source"] {
		t.Errorf("the allowed fetch's receipt = %v (objects %v); want allowed, 200, the mood's list and its source object", got[0], objects[0])
	}
	if len(objects[0]) == 1 && len(objects[0][0]) == 64 {
		if b, err := os.ReadFile(filepath.Join(home, "objects", objects[0][0][:2], objects[0][0])); err != nil || !strings.Contains(string(b), "nf-Doc-5Lm") {
			t.Errorf("the source object holds %q, %v; want the page", b, err)
		}
	}
	if got[1]["allowed"] != false || got[1]["code"] != "denied" || !strings.Contains(fmt.Sprint(got[1]["reason"]), "outside every allowed prefix") {
		t.Errorf("the denied fetch's receipt = %v; want denied with the reason", got[1])
	}
	if secretHits.Load() != 0 {
		t.Errorf("the denied URL was requested %d times", secretHits.Load())
	}
	if err := d.stop(t); err != nil {
		t.Errorf("choird stop = %v\n%s", err, d.stderr.String())
	}
	assertNoSecrets(t, filepath.Join(home, "logs"), d.stderr.String())
}
