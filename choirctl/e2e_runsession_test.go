package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"choir/internal/ctl"
	"choir/internal/docker"
	"choir/internal/openai"
	"choir/testkit"
	"choir/testkit/dockertest"
)

// TestRunSessionBesideTheInteractiveOne: agent rs-1's interactive session
// runs while choird's director performs a headless run of it in a run
// session of its own (a container without network, its model calls
// carried by choird): the fake model writes hello.txt with
// choir.fs.write in the run's worktree, the run commits it to the
// workspace's branch with the agent's answer as its summary, the run's
// container is gone afterwards, and the interactive session ran on
// throughout, its container and session unchanged.
func TestRunSessionBesideTheInteractiveOne(t *testing.T) {
	dc := dockertest.Engine(t)
	home := filepath.Join(t.TempDir(), "h")
	ctlRun(t, home, "", "init")
	env := backends(t, home)

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
	if err := os.WriteFile(filepath.Join(ws, "README"), []byte("rs-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The interactive session's scratch directory stays out of the repo.
	if err := os.WriteFile(filepath.Join(ws, ".gitignore"), []byte(".choirtmp/\n"), 0o644); err != nil {
		t.Fatal(err)
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

	// The first run writes hello.txt; any later one hangs in its model
	// call until the test ends (choird is killed under it).
	var mu sync.Mutex
	first, hung := "", 0
	release := make(chan struct{})
	model := &callerModel{call: func(text string) (string, string, bool) {
		i := strings.Index(text, "[choir headless run ")
		if i < 0 {
			return "", "", false
		}
		run, _, _ := strings.Cut(text[i+len("[choir headless run "):], ",")
		mu.Lock()
		if first == "" {
			first = run
		}
		hang := run != first
		if hang {
			hung++
		}
		mu.Unlock()
		if hang {
			<-release
			return "", "", false
		}
		args, _ := json.Marshal(map[string]any{"path": "hello.txt", "op": "create", "content": "hello from a run\n"})
		return openai.WireName("choir.fs.write"), string(args), true
	}}
	l, err := net.Listen("tcp", net.JoinHostPort(dockertest.BridgeIP(t), "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: model}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	t.Cleanup(func() { close(release) }) // first: the hanging call returns
	editConfig(t, home, func(cfg map[string]any) {
		cfg["global_repo"] = map[string]any{"url": "/nonexistent/global.git"}
		cfg["workspaces"] = map[string]any{"main": map[string]any{"path": ws}}
		cfg["models"] = map[string]any{"m": map[string]any{"provider": "test", "model": "x", "endpoint": "http://" + l.Addr().String() + "/v1", "secret": "llm-key"}}
		cfg["git_identities"] = map[string]any{"dev": map[string]any{"name": "Dev", "email": "dev@choir.local", "secret": "git-token"}}
		cfg["gateways"] = map[string]any{"console": map[string]any{"type": "console"}}
		cfg["dms"] = map[string]any{"dm1": map[string]any{"gateway": "console", "admin": true}}
		cfg["agents"] = map[string]any{"rs-1": map[string]any{"defaults": map[string]any{"workspace": "main", "llm": "m", "git_identity": "dev", "dm": "dm1"}}}
		cfg["heartbeat_interval_ms"] = 200
		cfg["headless"] = map[string]any{"verifiers": map[string]any{"hello": map[string]any{
			"command": []string{"sh", "-c", "grep -qx 'hello from a run' hello.txt"}, "timeout_s": 120}}}
	})
	for name, value := range map[string]string{"llm-key": apiSecret, "git-token": "ghp-e2e-Token-5Yt"} {
		if _, stderr, code := ctlRun(t, home, "", "secret", "set", name, value); code != 0 {
			t.Fatalf("secret set %s = %d %s", name, code, stderr)
		}
	}
	dockertest.AgentImage(t, dc, "rs-1", "e2e1")
	d := startChoird(t, home, env)
	waitReady(t, home, d)
	report := func() string {
		agentLog := ""
		filepath.Walk(filepath.Join(home, "logs"), func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() && strings.Contains(p, "rs-1") {
				b, _ := os.ReadFile(p)
				agentLog += "\n" + p + ":\n" + tail(string(b), 6000)
			}
			return nil
		})
		return "choird:\n" + tail(d.stderr.String(), 4000) + "\nrs-1's logs:" + agentLog
	}

	// The interactive session.
	if _, stderr, code := ctlRun(t, home, "", "agent", "start", "rs-1", "--dm=dm1"); code != 0 {
		t.Fatalf("agent start rs-1 = %d %s\n%s", code, stderr, report())
	}
	status := func() ctl.AgentStatus {
		t.Helper()
		var st ctl.AgentStatus
		out, _, _ := ctlRun(t, home, "", "agent", "status", "rs-1", "--json")
		json.Unmarshal([]byte(out), &st)
		return st
	}
	before := status()
	if before.State != "running" || before.SessionID == "" {
		t.Fatalf("rs-1 after start: %+v", before)
	}

	// The run.
	var item ctl.WorkItem
	out, stderr, code := ctlRun(t, home, "", "work", "add", "rs-1", "write hello.txt", "--accept", "hello.txt says hello", "--verifier", "hello", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &item) != nil || item.ID == "" {
		t.Fatalf("work add = %d %q %q", code, out, stderr)
	}
	var run ctl.Run
	out, stderr, code = ctlRun(t, home, "", "run", "start", item.ID, "--json")
	if code != 0 || json.Unmarshal([]byte(out), &run) != nil {
		t.Fatalf("run start = %d %q %q\n%s", code, out, stderr, report())
	}
	// While the run goes on, the interactive session keeps running.
	sawRunContainer := false
	var rd ctl.RunDetail
	waitUntil(t, "run "+run.ID+" committed", 5*time.Minute, func() bool {
		if cs, err := dc.ContainerList(context.Background(), docker.ContainerListOptions{Filters: docker.Filters{"label": {"choir.run=" + run.ID}}}); err == nil && len(cs) > 0 {
			sawRunContainer = true
			if st := status(); st.State != "running" || st.SessionID != before.SessionID {
				t.Errorf("rs-1 during the run: %s session %s; want running %s", st.State, st.SessionID, before.SessionID)
			}
		}
		out, _, _ := ctlRun(t, home, "", "run", "show", run.ID, "--json")
		json.Unmarshal([]byte(out), &rd)
		return rd.Run.Status == "committed" || rd.Run.Status == "failed"
	}, report)
	if rd.Run.Status != "committed" {
		receipts, _, _ := ctlRun(t, home, "", "run", "receipts", run.ID)
		t.Fatalf("run %s ended %s; want committed\nreceipts:\n%s\n%s", run.ID, rd.Run.Status, receipts, report())
	}
	if !sawRunContainer {
		t.Error("no container labelled choir.run=" + run.ID + " was seen while the run went on")
	}
	if got := gitIn("show", "main:hello.txt"); got != "hello from a run" {
		t.Errorf("hello.txt on main = %q; want the run's", got)
	}
	// The agent's answer (the fake model's reply to the tool result) is
	// the commit's summary.
	if msg := gitIn("log", "-1", "--format=%B", "main"); !strings.Contains(msg, "result:") {
		t.Errorf("the run's commit message does not carry the agent's answer:\n%s", msg)
	}
	waitUntil(t, "the run's container gone", time.Minute, func() bool {
		cs, err := dc.ContainerList(context.Background(), docker.ContainerListOptions{All: true, Filters: docker.Filters{"label": {"choir.run=" + run.ID}}})
		return err == nil && len(cs) == 0
	}, report)
	if after := status(); after.State != "running" || after.SessionID != before.SessionID || after.Container != before.Container {
		t.Errorf("rs-1 after the run: %+v; want its interactive session %s in container %s still running", after, before.SessionID, before.Container)
	}

	// choird dies (SIGKILL) while a second run's session works: at the
	// next start its container is swept as an orphan, its session ended
	// as crashed, and the run discarded.
	var item2 ctl.WorkItem
	out, stderr, code = ctlRun(t, home, "", "work", "add", "rs-1", "write hello.txt again", "--accept", "hello.txt says hello", "--verifier", "hello", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &item2) != nil || item2.ID == "" {
		t.Fatalf("work add (2) = %d %q %q", code, out, stderr)
	}
	out, stderr, code = ctlRun(t, home, "", "run", "start", item2.ID, "--json")
	var run2 ctl.Run
	if code != 0 || json.Unmarshal([]byte(out), &run2) != nil {
		t.Fatalf("run start (2) = %d %q %q\n%s", code, out, stderr, report())
	}
	runSession := ""
	waitUntil(t, "run 2's session working", 3*time.Minute, func() bool {
		cs, err := dc.ContainerList(context.Background(), docker.ContainerListOptions{Filters: docker.Filters{"label": {"choir.run=" + run2.ID}}})
		if err != nil || len(cs) != 1 {
			return false
		}
		runSession = cs[0].Labels["choir.session"]
		mu.Lock()
		defer mu.Unlock()
		return hung > 0 // its model call waits
	}, report)
	d.cmd.Process.Signal(syscall.SIGKILL)
	err = <-d.done
	d.done <- err // for its cleanup
	d = startChoird(t, home, env)
	waitReady(t, home, d)
	if cs, err := dc.ContainerList(context.Background(), docker.ContainerListOptions{All: true, Filters: docker.Filters{"label": {"choir.run=" + run2.ID}}}); err != nil || len(cs) != 0 {
		t.Errorf("run 2's container after the restart: %+v, %v; want it swept", cs, err)
	}
	var sessions []ctl.SessionInfo
	out, _, _ = ctlRun(t, home, "", "session", "list", "--json", "rs-1")
	json.Unmarshal([]byte(out), &sessions)
	found := false
	for _, s := range sessions {
		if s.SessionID == runSession {
			found = true
			if s.Status != "crashed" {
				t.Errorf("run 2's session %s after the restart is %s; want crashed", s.SessionID, s.Status)
			}
		}
	}
	if !found {
		t.Errorf("run 2's session %q is not in the session list: %s", runSession, out)
	}
	waitUntil(t, "run 2 discarded", 2*time.Minute, func() bool {
		out, _, _ := ctlRun(t, home, "", "run", "show", run2.ID, "--json")
		json.Unmarshal([]byte(out), &rd)
		return rd.Run.Status == "discarded" || rd.Run.Status == "failed"
	}, report)
}
