package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"choir/internal/ctl"
	"choir/testkit"
)

// headlessHome is an installation with one configured agent, run-1
// (never built or started: work items and runs that end before a session need neither),
// served by a real choird on a real Postgres.
func headlessHome(t *testing.T) (string, *daemon) {
	t.Helper()
	home := filepath.Join(t.TempDir(), "h")
	repos := t.TempDir()
	global, repo := filepath.Join(repos, "global.git"), filepath.Join(repos, "run-1.git")
	if _, stderr, code := ctlRun(t, home, "", "init", "--global-repo", global); code != 0 {
		t.Fatalf("init = %d %q", code, stderr)
	}
	if _, stderr, code := ctlRun(t, home, "", "agent", "init", "run-1", "--repo", repo); code != 0 {
		t.Fatalf("agent init = %d %q", code, stderr)
	}
	backends(t, home)
	editConfig(t, home, func(cfg map[string]any) {
		cfg["global_repo"] = map[string]any{"url": global, "ref": "main"}
		cfg["workspaces"] = map[string]any{"main": map[string]any{"path": testkit.Workspace(t)}}
		cfg["models"] = map[string]any{"m": map[string]any{"provider": "test", "model": "x", "endpoint": "http://127.0.0.1:9/v1", "secret": "llm-key"}}
		cfg["git_identities"] = map[string]any{"dev": map[string]any{"name": "Dev", "email": "dev@choir.local", "secret": "git-token"}}
		cfg["gateways"] = map[string]any{"console": map[string]any{"type": "console"}}
		cfg["dms"] = map[string]any{"dm1": map[string]any{"gateway": "console", "admin": true}}
		cfg["agents"] = map[string]any{"run-1": map[string]any{"repo": map[string]any{"url": repo, "ref": "main"},
			"defaults": map[string]any{"workspace": "main", "llm": "m", "git_identity": "dev", "dm": "dm1"}}}
	})
	for name, value := range map[string]string{"llm-key": apiSecret, "git-token": "ghp-e2e-Token-5Yt"} {
		if _, stderr, code := ctlRun(t, home, "", "secret", "set", name, value); code != 0 {
			t.Fatalf("secret set %s = %d %s", name, code, stderr)
		}
	}
	return home, restartChoird(t, home)
}

// ctlJSON runs a choirctl command with --json and decodes its output.
func ctlJSON(t *testing.T, home string, out any, args ...string) {
	t.Helper()
	stdout, stderr, code := ctlRun(t, home, "", append(args, "--json")...)
	if code != 0 {
		t.Fatalf("choirctl %s --json = %d %s", strings.Join(args, " "), code, stderr)
	}
	if err := json.Unmarshal([]byte(stdout), out); err != nil {
		t.Fatalf("choirctl %s --json printed %q: %v", strings.Join(args, " "), stdout, err)
	}
}

// The operator's path through the headless commands against a running
// choird: work items with a dependency, a split, a queued run, its
// cancellation as a receipt, and the state vector, all still there after
// choird restarts.
func TestWorkAndRunCommandsAgainstChoird(t *testing.T) {
	home, d := headlessHome(t)

	var first ctl.WorkItem
	ctlJSON(t, home, &first, "work", "add", "run-1", "make the failing test pass", "--accept", "go test passes", "--verifier", "go-test")
	if first.Status != "ready" || first.Agent != "run-1" || len(first.Verifiers) != 1 {
		t.Fatalf("work add = %+v; want a ready item of run-1 with its verifier", first)
	}
	out, stderr, code := ctlRun(t, home, "", "work", "add", "run-1", "document the fix", "--accept", "README says so", "--accept", "CHANGES lists it", "--depends", first.ID, "--risk", "high")
	if code != 0 || !strings.Contains(out, "added for run-1 (open)") {
		t.Fatalf("work add (text) = %d %q %q", code, out, stderr)
	}
	second := strings.Fields(out)[0]

	// work update changes an open item; what is not given stays, and the
	// director checks what is.
	var upd ctl.WorkItem
	ctlJSON(t, home, &upd, "work", "update", second, "--description", "document the fix well", "--risk", "medium", "--verifier", "go-test")
	if upd.Description != "document the fix well" || upd.Risk != "medium" || strings.Join(upd.Verifiers, ",") != "go-test" ||
		len(upd.Acceptance) != 2 || strings.Join(upd.DependsOn, ",") != first.ID {
		t.Errorf("work update = %+v; want the new description, risk and verifier, the rest as it was", upd)
	}
	ctlJSON(t, home, &upd, "work", "update", second, "--no-verifiers", "--risk", "high")
	if len(upd.Verifiers) != 0 || upd.Risk != "high" || upd.Description != "document the fix well" {
		t.Errorf("work update --no-verifiers = %+v; want no verifier, the rest as it was", upd)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"work", "update", second, "--depends", "w-0123456789ab"}, "w-0123456789ab"},
		{[]string{"work", "update", second, "--depends", second}, "cannot depend on itself"},
		{[]string{"work", "update", "w-0123456789ab", "--risk", "low"}, "w-0123456789ab"},
		{[]string{"work", "update", "not-an-id", "--risk", "low"}, "not-an-id"},
		{[]string{"work", "update", second, "--accept", " "}, "acceptance"},
	} {
		if _, stderr, code := ctlRun(t, home, "", tc.args...); code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("choirctl %s = %d %q; want refused (1) naming %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
	if out, _, _ := ctlRun(t, home, "", "work", "show", second); !strings.Contains(out, "document the fix well") || !strings.Contains(out, "risk        high") {
		t.Errorf("work show after the refused updates = %q; want the last accepted one", out)
	}
	if _, stderr, code := ctlRun(t, home, "", "work", "add", "ghost", "x", "--accept", "a"); code != 1 || !strings.Contains(stderr, `agent "ghost" is not configured`) {
		t.Errorf("work add for an unknown agent = %d %q; want 1 naming it", code, stderr)
	}
	if out, _, _ := ctlRun(t, home, "", "work", "list", "--status", "ready"); !strings.Contains(out, first.ID) || strings.Contains(out, second) {
		t.Errorf("work list --status ready = %q; want only %s", out, first.ID)
	}

	// Split the second into two children that carry both criteria.
	children := `[{"description":"README","acceptance":["README says so"]},{"description":"CHANGES","acceptance":["CHANGES lists it"]}]`
	out, stderr, code = ctlRun(t, home, children, "work", "split", second, "--file", "-")
	if code != 0 || !strings.Contains(out, "split into 2") {
		t.Fatalf("work split = %d %q %q", code, out, stderr)
	}
	if _, stderr, code := ctlRun(t, home, `[{"description":"x","acceptance":["a"],"colour":"red"}]`, "work", "split", first.ID, "--file", "-"); code != 1 || !strings.Contains(stderr, "colour") {
		t.Errorf("work split with an unknown field = %d %q; want refused naming it", code, stderr)
	}
	if _, stderr, code := ctlRun(t, home, "", "work", "update", second, "--risk", "low"); code != 1 || !strings.Contains(stderr, second) {
		t.Errorf("work update of a split item = %d %q; want refused naming it", code, stderr)
	}
	var shown ctl.WorkItemDetail
	ctlJSON(t, home, &shown, "work", "show", second)
	if shown.Item.Status != "split" || len(shown.Children) != 2 {
		t.Errorf("work show of the split item = %+v", shown)
	}

	// A run is recorded queued with its mood and budgets. The director
	// loop takes it at once (run start wakes it) and, since run-1's
	// workspace is no git repository, ends it discarded, saying why:
	// nothing was started. (One active run per item and the cancel of a
	// queued run are the director's and the store's tests: here the loop
	// races the commands that would show them.)
	var run ctl.Run
	ctlJSON(t, home, &run, "run", "start", first.ID, "--mood", "SKEPTICAL", "--tokens", "1000", "--wall", "20m")
	if run.Status != "queued" || run.Mood != "SKEPTICAL" || run.Budgets.WallSeconds != 1200 || run.WorkItem != first.ID {
		t.Fatalf("run start = %+v", run)
	}
	var rd ctl.RunDetail
	waitUntil(t, "run "+run.ID+" discarded", time.Minute, func() bool {
		ctlJSON(t, home, &rd, "run", "show", run.ID)
		return rd.Run.Status == "discarded"
	}, func() string { return fmt.Sprintf("run show: %+v", rd.Run) })
	var rs []ctl.Receipt
	ctlJSON(t, home, &rs, "run", "receipts", run.ID)
	if len(rs) != 1 || rs[0].Kind != "RunEnded" || !strings.Contains(string(rs[0].Body), "discarded") ||
		!strings.Contains(string(rs[0].Body), "not a git repository") {
		t.Fatalf("run receipts of the discarded run = %+v; want one RunEnded naming the workspace", rs)
	}
	if out, _, _ := ctlRun(t, home, "", "work", "show", first.ID); !strings.Contains(out, "ready") {
		t.Errorf("work show after the discarded run = %q; want the item ready again", out)
	}

	// Cancelling the work item ends it; its run stays as it ended.
	if out, stderr, code := ctlRun(t, home, "", "work", "cancel", first.ID); code != 0 || !strings.Contains(out, "cancelled") {
		t.Fatalf("work cancel = %d %q %q", code, out, stderr)
	}
	if _, stderr, code := ctlRun(t, home, "", "run", "start", first.ID); code != 1 || !strings.Contains(stderr, first.ID) {
		t.Errorf("run start of a cancelled item = %d %q; want refused naming it", code, stderr)
	}
	var st ctl.AHDBState
	ctlJSON(t, home, &st, "state")
	if st.Receipts != 1 || st.Runs[run.ID] != "discarded" {
		t.Errorf("state = %+v; want one receipt, the run discarded", st)
	}

	// Everything is in Postgres: a restarted choird shows the same.
	if err := d.stop(t); err != nil {
		t.Fatalf("choird stop: %v", err)
	}
	restartChoird(t, home)
	var runs []ctl.Run
	ctlJSON(t, home, &runs, "run", "list", "--agent", "run-1")
	if len(runs) != 1 || runs[0].ID != run.ID || runs[0].Status != "discarded" || runs[0].Ended.IsZero() {
		t.Errorf("run list after a restart = %+v", runs)
	}
	var again ctl.AHDBState
	ctlJSON(t, home, &again, "state", "--agent", "run-1")
	if again.Receipts != st.Receipts || again.Runs[run.ID] != "discarded" {
		t.Errorf("state after a restart = %+v; want as before", again)
	}
	if out, _, _ := ctlRun(t, home, "", "state"); !strings.Contains(out, "state vector from 1 receipts of 1 runs") || !strings.Contains(out, run.ID+"  discarded") {
		t.Errorf("state (text) = %q", out)
	}
}

// Mistakes on the command line exit 2 before anything reaches choird.
func TestWorkAndRunUsageErrors(t *testing.T) {
	home := t.TempDir()
	for _, args := range [][]string{
		{"work", "add", "run-1", "no criterion"},
		{"work", "add", "run-1"},
		{"work", "list", "extra"},
		{"work", "list", "--status", "sleeping"},
		{"work", "show"},
		{"work", "split", "w-000000000000"},
		{"work", "cancel"},
		{"work", "update"},
		{"work", "update", "w-000000000000"},
		{"work", "update", "w-000000000000", "--risk", "huge"},
		{"work", "update", "w-000000000000", "--description", " "},
		{"work", "update", "w-000000000000", "--no-verifiers", "--verifier", "go-test"},
		{"work", "update", "w-000000000000", "--no-depends", "--depends", "w-000000000001"},
		{"work", "update", "w-000000000000", "w-000000000001", "--risk", "low"},
		{"run", "start"},
		{"run", "start", "w-000000000000", "--tokens", "-5"},
		{"run", "receipts", "r-000000000000", "--after", "-1"},
		{"run", "list", "extra"},
		{"run", "reject", "r-000000000000"},
		{"run", "approve"},
		{"state", "extra"},
		{"state", "--bogus"},
	} {
		if _, stderr, code := ctlRun(t, home, "", args...); code != 2 || !strings.Contains(stderr, "usage: choirctl") {
			t.Errorf("choirctl %s = %d %q; want 2 with the usage", strings.Join(args, " "), code, stderr)
		}
	}
	// run start says, in its help, what performs the run.
	if out, _, code := ctlRun(t, home, "", "run", "start", "--help"); code != 0 || !strings.Contains(out, "director loop performs it") {
		t.Errorf("run start --help = %d %q; want it to say choird performs the run", code, out)
	}
}
