package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/internal/ctl"
	"choir/internal/docker"
	"choir/internal/openai"
	"choir/testkit"
	"choir/testkit/dockertest"
)

// TestSchedulesFireRunsInChoird (issue 16, the scheduler end to end): no
// run is started by hand. r16-1's cron schedule ("* * * * *", the oldest
// ready medium-risk work item) makes choird's director loop start a run of
// work item A at the next minute; the fake model writes a file, the
// verifier passes in its own container and the run commits. A's commit
// makes B (which depends on A) ready, and r16-1's event schedule
// (work_item_ready) starts B's run, which commits too. Each run's report,
// with its receipt ids, reaches the agent's DM (the console's outbox),
// each trigger started exactly one run, and the next minute's slot, with
// no ready medium-risk item left, starts none.
func TestSchedulesFireRunsInChoird(t *testing.T) {
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
	if err := os.WriteFile(filepath.Join(ws, "README"), []byte("r16\n"), 0o644); err != nil {
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

	// Every run writes done-<run id>.txt.
	model := &callerModel{call: func(text string) (string, string, bool) {
		i := strings.Index(text, "[choir headless run ")
		if i < 0 {
			return "", "", false
		}
		run, _, _ := strings.Cut(text[i+len("[choir headless run "):], ",")
		args, _ := json.Marshal(map[string]any{"path": "done-" + run + ".txt", "op": "create", "content": "done\n"})
		return openai.WireName("choir.fs.write"), string(args), true
	}}
	l, err := net.Listen("tcp", net.JoinHostPort(dockertest.BridgeIP(t), "0"))
	if err != nil {
		t.Fatal(err)
	}
	// What the model is offered in a run session's calls.
	var offeredMu sync.Mutex
	offered := map[string]bool{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 16<<20))
		if bytes.Contains(body, []byte("[choir headless run ")) {
			var req struct {
				Tools []struct {
					Function struct {
						Name string `json:"name"`
					} `json:"function"`
				} `json:"tools"`
			}
			json.Unmarshal(body, &req)
			offeredMu.Lock()
			for _, t := range req.Tools {
				offered[t.Function.Name] = true
			}
			offeredMu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		model.ServeHTTP(w, r)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	editConfig(t, home, func(cfg map[string]any) {
		cfg["global_repo"] = map[string]any{"url": "/nonexistent/global.git"}
		cfg["workspaces"] = map[string]any{"main": map[string]any{"path": ws}}
		cfg["models"] = map[string]any{"m": map[string]any{"provider": "test", "model": "x", "endpoint": "http://" + l.Addr().String() + "/v1", "secret": "llm-key"}}
		cfg["git_identities"] = map[string]any{"dev": map[string]any{"name": "Dev", "email": "dev@choir.local", "secret": "git-token"}}
		cfg["gateways"] = map[string]any{"console": map[string]any{"type": "console"}}
		cfg["dms"] = map[string]any{"dm1": map[string]any{"gateway": "console", "admin": true}}
		cfg["agents"] = map[string]any{"r16-1": map[string]any{
			"defaults": map[string]any{"workspace": "main", "llm": "m", "git_identity": "dev", "dm": "dm1"},
			"schedules": []any{
				map[string]any{"id": "every-minute", "cron": "* * * * *", "query": map[string]any{"risk": []string{"medium"}}},
				map[string]any{"id": "when-ready", "on": "work_item_ready"},
			}}}
		cfg["heartbeat_interval_ms"] = 200
		cfg["headless"] = map[string]any{"verifiers": map[string]any{"done": map[string]any{
			"command": []string{"sh", "-c", "ls done-*.txt"}, "timeout_s": 120}}}
	})
	for name, value := range map[string]string{"llm-key": apiSecret, "git-token": "ghp-e2e-Token-5Yt"} {
		if _, stderr, code := ctlRun(t, home, "", "secret", "set", name, value); code != 0 {
			t.Fatalf("secret set %s = %d %s", name, code, stderr)
		}
	}
	dockertest.AgentImage(t, dc, "r16-1", "e2e1")
	d := startChoird(t, home, env)
	waitReady(t, home, d)
	outbox := watchOutbox(t, home, "r16-1")
	report := func() string {
		var logs strings.Builder
		filepath.Walk(filepath.Join(home, "logs"), func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() && strings.Contains(p, "r16-1") {
				b, _ := os.ReadFile(p)
				fmt.Fprintf(&logs, "%s:\n%s\n", p, tail(string(b), 3000))
			}
			return nil
		})
		return "choird:\n" + tail(d.stderr.String(), 5000) + "\noutbox:\n" + outbox.String() + "\nagent logs:\n" + logs.String()
	}

	add := func(desc, risk string, deps ...string) string {
		t.Helper()
		args := []string{"work", "add", "r16-1", desc, "--accept", "a done file", "--verifier", "done", "--risk", risk, "--json"}
		for _, dep := range deps {
			args = append(args, "--depends", dep)
		}
		var it ctl.WorkItem
		out, stderr, code := ctlRun(t, home, "", args...)
		if code != 0 || json.Unmarshal([]byte(out), &it) != nil || it.ID == "" {
			t.Fatalf("work add %q = %d %q %q", desc, code, out, stderr)
		}
		return it.ID
	}
	a := add("write a done file", "medium")
	b := add("write another done file", "low", a)

	runsOf := func(item string) []ctl.Run {
		t.Helper()
		var runs []ctl.Run
		out, stderr, code := ctlRun(t, home, "", "run", "list", "--work", item, "--json")
		if code != 0 || json.Unmarshal([]byte(out), &runs) != nil {
			t.Fatalf("run list --work %s = %d %q %q", item, code, out, stderr)
		}
		return runs
	}
	committed := func(item string) ctl.Run {
		t.Helper()
		var run ctl.Run
		waitUntil(t, "a run of "+item+" committed", 5*time.Minute, func() bool {
			for _, r := range runsOf(item) {
				switch r.Status {
				case "committed":
					run = r
					return true
				case "failed", "discarded", "cancelled":
					out, _, _ := ctlRun(t, home, "", "run", "receipts", r.ID)
					t.Fatalf("run %s of %s ended %s; its receipts:\n%s\n%s", r.ID, item, r.Status, out, report())
				}
			}
			return false
		}, report)
		return run
	}

	ra := committed(a)
	if !strings.HasPrefix(ra.Trigger, "cron * * * * * at ") {
		t.Errorf("run %s's trigger = %q; want the cron schedule's slot", ra.ID, ra.Trigger)
	}
	rb := committed(b)
	if !strings.HasPrefix(rb.Trigger, "event work_item_ready ") {
		t.Errorf("run %s's trigger = %q; want the work_item_ready event", rb.ID, rb.Trigger)
	}

	// Each report reached the DM, with the run's receipt ids.
	for _, r := range []ctl.Run{ra, rb} {
		waitUntil(t, "the DM told run "+r.ID+"'s commit", time.Minute, func() bool {
			_, ok := outbox.find("Run "+r.ID+" of "+r.WorkItem+" committed", "Receipts: "+r.ID+"#1-")
			return ok
		}, report)
	}
	// A run session is offered its mood's tools, never a skill's.
	offeredMu.Lock()
	if !offered[openai.WireName("choir.fs.write")] {
		t.Errorf("run sessions were offered %v; want choir.fs.write among them", offered)
	}
	for name := range offered {
		if strings.HasPrefix(name, "choir_skill_") {
			t.Errorf("a run session was offered %s; want no choir.skill.* tool", name)
		}
	}
	offeredMu.Unlock()
	if c := strings.Split(gitIn("log", "--format=%H", "main"), "\n"); len(c) != 3 {
		t.Errorf("commits on main = %q; want the first and one per run", c)
	}

	// The next minute's slot finds no ready medium-risk item and starts
	// nothing (choird logs the fire it claimed and why it queued no run):
	// each item has exactly its one run.
	after := `"fire":"cron@` + time.Now().UTC().Truncate(time.Minute).Add(time.Minute).Format(time.RFC3339) + `"`
	waitUntil(t, "choird's log of the next cron slot ("+after+")", 3*time.Minute, func() bool {
		return strings.Contains(d.stderr.String(), after)
	}, report)
	for _, item := range []string{a, b} {
		if runs := runsOf(item); len(runs) != 1 {
			t.Errorf("runs of %s = %+v; want exactly one", item, runs)
		}
	}
	waitUntil(t, "no run or verifier container left", time.Minute, func() bool {
		cs, err := dc.ContainerList(context.Background(), docker.ContainerListOptions{All: true, Filters: docker.Filters{"label": {instanceLabel(home)}}})
		return err == nil && len(cs) == 0
	}, report)
}
