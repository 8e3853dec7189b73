package main

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"choir/internal/ctl"
	"choir/internal/openai"
	"choir/testkit"
	"choir/testkit/bravetest"
	"choir/testkit/dockertest"
	"choir/testkit/imagetest"
)

// egressKey is the fake Brave's subscription token.
const egressKey = "BSA-egress-Key-3Vq8"

// noRouteCommand tries the network directly, as a tool told to by what it
// read would: a TCP connection to an outside address, then a DNS lookup.
const noRouteCommand = `python3 -c "
import socket
for f in (lambda: socket.create_connection(('192.0.2.7', 443), 3), lambda: socket.getaddrinfo('exfil.example.org', 443)):
    try:
        f()
        print('REACHED')
    except OSError as e:
        print('refused:', e)
"`

// egressModel answers "CALL <wire name> <JSON>" with that tool call
// (toolModel), and a headless run's objective with choir.exec of
// noRouteCommand.
func egressModel() *callerModel {
	exec, _ := json.Marshal(map[string]any{"command": noRouteCommand})
	return &callerModel{call: func(text string) (string, string, bool) {
		if strings.Contains(text, "[choir headless run ") {
			return openai.WireName("choir.exec"), string(exec), true
		}
		i := strings.Index(text, "CALL ")
		if i < 0 {
			return "", "", false
		}
		name, args, _ := strings.Cut(strings.TrimSpace(text[i+len("CALL "):]), " ")
		return name, args, true
	}}
}

// TestEgressEndToEnd (issue 25 items 1 and 7): eg-1 is an interactive
// agent in network policy mode in a real container without a network
// route. Its model (on the host's loopback, which no container reaches)
// answers through choird; its web search reaches a fake Brave on the
// host's loopback through choird's tunnel, the only way out, with its
// key (the container holds the search key, not the model's); a tool that
// tries the network directly (a TCP connect and a DNS lookup) fails with
// no route, and choird counts the attempts from the host and logs them.
// Then a headless run of eg-1 whose tool does the same gets an Anomaly
// receipt (unexpected_network) and its work item's next mood is PARANOID.
func TestEgressEndToEnd(t *testing.T) {
	dc := dockertest.Engine(t)
	home := filepath.Join(t.TempDir(), "h")
	ctlRun(t, home, "", "init")
	env := backends(t, home)

	// The workspace: a git repository, for the headless run.
	ws := testkit.Workspace(t)
	gitIn := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", ws, "-c", "safe.directory=*"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	gitIn("init", "-q", "-b", "main")
	for name, body := range map[string]string{"README": "eg-1\n", ".gitignore": ".choirtmp/\n"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn("add", ".")
	gitIn("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "start")
	if err := filepath.Walk(ws, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, testkit.ToolUID, testkit.ToolGID)
	}); err != nil {
		t.Fatal(err)
	}

	// The model and Brave listen on the host's loopback only.
	ml, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ms := &http.Server{Handler: egressModel()}
	go ms.Serve(ml)
	t.Cleanup(func() { ms.Close() })
	brave := bravetest.NewOn(t, "127.0.0.1:0", egressKey)
	brave.SetResults(bravetest.Result{Title: "Egress through choird", URL: "https://choir.example/egress", Description: "eg-Result-5Kp"})

	editConfig(t, home, func(cfg map[string]any) {
		cfg["global_repo"] = map[string]any{"url": "/nonexistent/global.git"}
		cfg["workspaces"] = map[string]any{"main": map[string]any{"path": ws}}
		cfg["models"] = map[string]any{"m": map[string]any{"provider": "test", "model": "egress", "endpoint": "http://" + ml.Addr().String() + "/v1", "secret": "llm-key"}}
		cfg["git_identities"] = map[string]any{"dev": map[string]any{"name": "Dev", "email": "dev@choir.local", "secret": "git-token"}}
		cfg["search"] = map[string]any{"brave": map[string]any{"endpoint": brave.URL(), "secret": "brave-key"}}
		cfg["gateways"] = map[string]any{"console": map[string]any{"type": "console"}}
		cfg["dms"] = map[string]any{"eg": map[string]any{"gateway": "console", "admin": true}}
		cfg["agents"] = map[string]any{"eg-1": map[string]any{
			"network":  map[string]any{"mode": "policy"},
			"defaults": map[string]any{"workspace": "main", "llm": "m", "git_identity": "dev", "dm": "eg"}}}
		cfg["heartbeat_interval_ms"] = 200
	})
	for name, value := range map[string]string{"llm-key": apiSecret, "git-token": "ghp-e2e-Token-5Yt", "brave-key": egressKey} {
		if _, stderr, code := ctlRun(t, home, "", "secret", "set", name, value); code != 0 {
			t.Fatalf("secret set %s = %d %s", name, code, stderr)
		}
	}
	// Debian's image: the tool below runs python3 (busybox's has none).
	dockertest.AgentImageFrom(t, dc, imagetest.Debian(t, dc), "eg-1", "eg1")
	d := startChoird(t, home, env)
	waitReady(t, home, d)
	report := func() string {
		data, _ := os.ReadFile(filepath.Join(home, "logs", "eg-1.log"))
		return "choird:\n" + tail(d.stderr.String(), 4000) + "\nagent log:\n" + tail(string(data), 3000)
	}
	if out, stderr, code := ctlRun(t, home, "", "agent", "start", "eg-1", "--dm=eg"); code != 0 {
		t.Fatalf("agent start eg-1 = %d %q %q\n%s", code, out, stderr, report())
	}
	say := func(msg string) string {
		t.Helper()
		out, stderr, code := ctlRun(t, home, msg, "chat", "eg-1", "--once", "--timeout", "3m")
		if code != 0 {
			t.Fatalf("eg-1 did not answer %q: %d %q %q\n%s", msg, code, out, stderr, report())
		}
		return out
	}

	// Its container has no route: network none.
	var st ctl.AgentStatus
	out, _, _ := ctlRun(t, home, "", "agent", "status", "eg-1", "--json")
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Container == "" {
		t.Fatalf("agent status eg-1 = %q (%v)", out, err)
	}
	c, err := dc.ContainerInspect(t.Context(), st.Container)
	if err != nil || c.HostConfig == nil || c.HostConfig.NetworkMode != "none" {
		t.Fatalf("eg-1's container: %+v, %v; want network mode none", c.HostConfig, err)
	}

	// A web search goes out through choird's tunnel, with the agent's key.
	reply := say(`CALL choir_web_search {"query":"egress","count":1}`)
	if !strings.Contains(reply, "eg-Result-5Kp") {
		data, _ := os.ReadFile(filepath.Join(home, "logs", "eg-1.log"))
		t.Errorf("search reply = %q; want the fake Brave's result\nagent log:\n%s", reply, data)
	}
	if reqs := brave.Requests(); len(reqs) != 1 || reqs[0].Token != egressKey || reqs[0].Query.Get("q") != "egress" {
		t.Errorf("Brave received %+v; want one search with the key", reqs)
	}

	// A tool's direct attempts fail with no route, and are counted.
	args, _ := json.Marshal(map[string]any{"command": noRouteCommand})
	reply = say("CALL " + openai.WireName("choir.exec") + " " + string(args))
	if strings.Contains(reply, "REACHED") || !strings.Contains(reply, "refused:") {
		t.Errorf("the tool's network attempts: %q; want both refused", reply)
	}
	waitUntil(t, "choird to count eg-1's network attempts", time.Minute, func() bool {
		return strings.Contains(d.stderr.String(), "network attempts from an offline container")
	}, report)
	if logs := d.stderr.String(); !strings.Contains(logs, `"agent_id":"eg-1"`) || !strings.Contains(logs, `"attempts":`) {
		t.Errorf("choird's log lacks the attempts:\n%s", tail(logs, 3000))
	}
	if out, _, _ := ctlRun(t, home, "", "agent", "stop", "eg-1"); strings.Contains(out, "error") {
		t.Errorf("agent stop: %s", out)
	}

	// A headless run whose tool tries the network: an Anomaly receipt.
	var item ctl.WorkItem
	out, stderr, code := ctlRun(t, home, "", "work", "add", "eg-1", "check the mirror is reachable", "--accept", "it answers", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &item) != nil || item.ID == "" {
		t.Fatalf("work add = %d %q %q", code, out, stderr)
	}
	var r ctl.Run
	out, stderr, code = ctlRun(t, home, "", "run", "start", item.ID, "--json")
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("run start = %d %q %q\n%s", code, out, stderr, report())
	}
	waitUntil(t, "run "+r.ID+" to end", 5*time.Minute, func() bool {
		var rd ctl.RunDetail
		out, _, code := ctlRun(t, home, "", "run", "show", r.ID, "--json")
		return code == 0 && json.Unmarshal([]byte(out), &rd) == nil && (rd.Run.Status == "failed" || rd.Run.Status == "committed" || rd.Run.Status == "discarded")
	}, report)
	receipts, _, _ := ctlRun(t, home, "", "run", "receipts", r.ID)
	if !strings.Contains(receipts, "Anomaly") || !strings.Contains(receipts, "unexpected_network") || !strings.Contains(d.stderr.String(), "to no route") {
		t.Errorf("run %s's receipts = %s; want an unexpected_network Anomaly\n%s", r.ID, receipts, report())
	}
	if !strings.Contains(receipts, "PARANOID") {
		t.Errorf("run %s's receipts = %s; want the move to PARANOID", r.ID, receipts)
	}

	if err := d.stop(t); err != nil {
		t.Errorf("choird stop = %v\n%s", err, d.stderr.String())
	}
	assertNoSecrets(t, filepath.Join(home, "logs"), d.stderr.String(), reply)
	if strings.Contains(d.stderr.String(), egressKey) {
		t.Error("choird's log holds the search key")
	}
}
