package main

import (
	"context"
	"encoding/json"
	"fmt"
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

// Headless runs end to end (issue 16, item 8): a work item "make the
// failing test in this repo pass" on a local git repository, performed by
// choird's director loop with a real agent in a run container of its own
// (network none, its model calls carried by choird) and the fake model
// writing the fix with choir.fs.write; the verifier runs in its own
// container. Run 1 writes a wrong answer: its verifier fails and nothing
// reaches the branch. Run 2 writes the right one; choird is killed with
// SIGKILL while run 2's verifier runs, started again, resumes the
// verification and commits exactly once.
//
// The verifier waits for a file named gate in the worktree (ignored by
// git, so never part of the patch) before it runs the project's test: the
// test holds each verification there until it has done what it must at
// that point (nothing, or kill choird).

// fixModel answers a headless run's objective with one choir.fs.write of
// answer.txt (the first run it sees gets the wrong answer, every later one
// the right one), and the tool's result with a summary.
func fixModel() *callerModel {
	var mu sync.Mutex
	runs := map[string]string{}
	return &callerModel{call: func(text string) (string, string, bool) {
		i := strings.Index(text, "[choir headless run ")
		if i < 0 {
			return "", "", false
		}
		run, _, _ := strings.Cut(text[i+len("[choir headless run "):], ",")
		mu.Lock()
		answer, ok := runs[run]
		if !ok {
			answer = "42"
			if len(runs) == 0 {
				answer = "40"
			}
			runs[run] = answer
		}
		mu.Unlock()
		args, _ := json.Marshal(map[string]any{"path": "answer.txt", "op": "overwrite", "content": answer + "\n"})
		return openai.WireName("choir.fs.write"), string(args), true
	}}
}

func TestHeadlessRunsCommitOnlyVerifiedWorkOnce(t *testing.T) {
	dc := dockertest.Engine(t)
	home := filepath.Join(t.TempDir(), "h")
	ctlRun(t, home, "", "init")
	env := backends(t, home)

	// The workspace: a git repository whose test fails.
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
	for name, body := range map[string]string{
		"answer.txt": "41\n",
		"test.sh":    "#!/bin/sh\ngrep -qx 42 answer.txt || { echo 'FAIL: answer.txt is not 42'; exit 1; }\necho 'ok  answer'\n",
		".gitignore": "gate\n",
	} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn("add", ".")
	gitIn("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "a failing test")
	if err := filepath.Walk(ws, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, testkit.ToolUID, testkit.ToolGID)
	}); err != nil {
		t.Fatal(err)
	}

	l, err := net.Listen("tcp", net.JoinHostPort(dockertest.BridgeIP(t), "0"))
	if err != nil {
		t.Fatal(err)
	}
	model := &http.Server{Handler: fixModel()}
	go model.Serve(l)
	t.Cleanup(func() { model.Close() })
	editConfig(t, home, func(cfg map[string]any) {
		cfg["global_repo"] = map[string]any{"url": "/nonexistent/global.git"}
		cfg["workspaces"] = map[string]any{"main": map[string]any{"path": ws}}
		cfg["models"] = map[string]any{"m": map[string]any{"provider": "test", "model": "x", "endpoint": "http://" + l.Addr().String() + "/v1", "secret": "llm-key"}}
		cfg["git_identities"] = map[string]any{"dev": map[string]any{"name": "Dev", "email": "dev@choir.local", "secret": "git-token"}}
		cfg["gateways"] = map[string]any{"console": map[string]any{"type": "console"}}
		cfg["dms"] = map[string]any{"dm1": map[string]any{"gateway": "console", "admin": true}}
		cfg["agents"] = map[string]any{"hr-1": map[string]any{"defaults": map[string]any{"workspace": "main", "llm": "m", "git_identity": "dev", "dm": "dm1"}}}
		cfg["heartbeat_interval_ms"] = 200
		cfg["headless"] = map[string]any{"verifiers": map[string]any{"test": map[string]any{
			"command": []string{"sh", "-c", "while [ ! -e gate ]; do sleep 1; done; sh test.sh"}, "timeout_s": 600}}}
	})
	for name, value := range map[string]string{"llm-key": apiSecret, "git-token": "ghp-e2e-Token-5Yt"} {
		if _, stderr, code := ctlRun(t, home, "", "secret", "set", name, value); code != 0 {
			t.Fatalf("secret set %s = %d %s", name, code, stderr)
		}
	}
	dockertest.AgentImage(t, dc, "hr-1", "e2e1")
	d := startChoird(t, home, env)
	waitReady(t, home, d)
	report := func() string {
		var agentLogs strings.Builder
		filepath.Walk(filepath.Join(home, "logs"), func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() && strings.Contains(p, "hr-1") {
				b, _ := os.ReadFile(p)
				fmt.Fprintf(&agentLogs, "%s:\n%s\n", p, tail(string(b), 3000))
			}
			return nil
		})
		return "choird:\n" + tail(d.stderr.String(), 4000) + "\nagent logs:\n" + agentLogs.String()
	}

	var item struct{ Item ctl.WorkItem }
	out, stderr, code := ctlRun(t, home, "", "work", "add", "hr-1", "make the failing test in this repo pass",
		"--accept", "sh test.sh passes", "--verifier", "test", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &item.Item) != nil || item.Item.ID == "" {
		t.Fatalf("work add = %d %q %q", code, out, stderr)
	}
	startRun := func() string {
		t.Helper()
		var r ctl.Run
		out, stderr, code := ctlRun(t, home, "", "run", "start", item.Item.ID, "--json")
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
			t.Fatalf("run start = %d %q %q\n%s", code, out, stderr, report())
		}
		return r.ID
	}
	show := func(id string) ctl.RunDetail {
		t.Helper()
		var rd ctl.RunDetail
		out, stderr, code := ctlRun(t, home, "", "run", "show", id, "--json")
		if code != 0 || json.Unmarshal([]byte(out), &rd) != nil {
			t.Fatalf("run show %s = %d %q %q\n%s", id, code, out, stderr, report())
		}
		return rd
	}
	waitStatus := func(id, want string) ctl.RunDetail {
		t.Helper()
		var rd ctl.RunDetail
		waitUntil(t, "run "+id+" "+want, 5*time.Minute, func() bool {
			rd = show(id)
			if ended := map[string]bool{"committed": true, "failed": true, "discarded": true, "cancelled": true}; ended[rd.Run.Status] && rd.Run.Status != want {
				out, _, _ := ctlRun(t, home, "", "run", "receipts", id)
				t.Fatalf("run %s ended %s, not %s; its receipts:\n%s\n%s", id, rd.Run.Status, want, out, report())
			}
			return rd.Run.Status == want
		}, report)
		return rd
	}
	openGate := func(rd ctl.RunDetail) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(rd.Run.Worktree, "gate"), nil, 0o644); err != nil {
			t.Fatalf("open the verifier's gate in %s: %v", rd.Run.Worktree, err)
		}
	}
	commits := func() []string { return strings.Split(gitIn("log", "--format=%H %s", "main"), "\n") }

	// Run 1: a wrong answer; its verifier fails; nothing is committed.
	r1 := startRun()
	openGate(waitStatus(r1, "verifying"))
	waitStatus(r1, "failed")
	if c := commits(); len(c) != 1 {
		t.Fatalf("commits on main after the failed run = %q; want the first only", c)
	}
	if got := gitIn("show", "main:answer.txt"); got != "41" {
		t.Errorf("answer.txt on main after the failed run = %q; want 41 still", got)
	}
	if got := gitIn("branch", "--list", "choir/run/*"); got != "" {
		t.Errorf("run branches after the failed run: %q", got)
	}
	receipts := func(id string) string {
		out, _, _ := ctlRun(t, home, "", "run", "receipts", id)
		return out
	}
	if rs := receipts(r1); !strings.Contains(rs, "ContextFootprint") || !strings.Contains(rs, "PatchReceipt") ||
		!strings.Contains(rs, "VerifierResults") || !strings.Contains(rs, "RunEnded") || strings.Contains(rs, "answer.txt is not 42") {
		t.Errorf("run 1's receipts = %s; want footprint, patch, verifier results and its end, and never the verifier's raw output", rs)
	}

	// Run 2: the right answer; choird is killed during its verification.
	r2 := startRun()
	rd := waitStatus(r2, "verifying")
	d.cmd.Process.Signal(syscall.SIGKILL)
	err = <-d.done
	d.done <- err // for its cleanup
	d = startChoird(t, home, env)
	waitReady(t, home, d)
	openGate(rd) // the resumed verification runs in a new container
	waitStatus(r2, "committed")

	c := commits()
	if len(c) != 2 || !strings.HasSuffix(c[0], " make the failing test in this repo pass") {
		t.Fatalf("commits on main = %q; want exactly one by run 2 on top of the first", c)
	}
	if got := gitIn("show", "main:answer.txt"); got != "42" {
		t.Errorf("answer.txt on main = %q; want run 2's 42", got)
	}
	if msg := gitIn("log", "-1", "--format=%B", "main"); !strings.Contains(msg, "Choir-Run: "+r2) {
		t.Errorf("the commit lacks run 2's trailer:\n%s", msg)
	}
	if rs := receipts(r2); !strings.Contains(rs, "CommitDecision") || !strings.Contains(rs, "CommitReceipt") {
		t.Errorf("run 2's receipts = %s; want the decision and the commit", rs)
	}
	if out, _, _ := ctlRun(t, home, "", "work", "show", item.Item.ID); !strings.Contains(out, "done") {
		t.Errorf("work show after the commit = %q; want it done", out)
	}
	// No run container or verifier container is left (the one the kill
	// orphaned was removed by the restart).
	waitUntil(t, "no run or verifier container left", time.Minute, func() bool {
		cs, err := dc.ContainerList(context.Background(), docker.ContainerListOptions{All: true, Filters: docker.Filters{"label": {instanceLabel(home)}}})
		return err == nil && len(cs) == 0
	}, report)
}
