package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"choir/testkit"
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
