package signoff_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/choird/approval"
	"choir/choird/approval/approvaltest"
	"choir/choird/approval/postgres"
	"choir/choird/control"
	"choir/choird/headless"
	"choir/choird/headless/mood"
	"choir/choird/headless/objects"
	"choir/choird/headless/runner"
	"choir/choird/headless/signoff"
	"choir/choird/headless/verify"
	"choir/choird/headless/worktree"
	"choir/choird/store"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/logs"
	"choir/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// agent plays the run's agent: it makes test.sh pass (answer.txt 42) and
// leaves a file of its own, so each run has a patch.
type agent struct{}

func (agent) Perform(ctx context.Context, t runner.Task) (runner.Outcome, error) {
	for name, body := range map[string]string{"answer.txt": "42\n", t.RunID + ".txt": "done\n"} {
		if err := os.WriteFile(filepath.Join(t.Worktree, name), []byte(body), 0o644); err != nil {
			return runner.Outcome{}, err
		}
	}
	return runner.Outcome{SessionID: "s-" + t.RunID, Status: runner.Answered, Answer: "set the answer to 42"}, nil
}

// localVerifier runs the verifier's command in the worktree on this host
// (verify.Runner's containers are tested in their own package).
type localVerifier struct{ objs *objects.Store }

func (v localVerifier) Run(ctx context.Context, req verify.Request) (verify.Result, error) {
	cmd := exec.CommandContext(ctx, req.Verifier.Command[0], req.Verifier.Command[1:]...)
	cmd.Dir = req.Worktree
	out, err := cmd.CombinedOutput()
	if err != nil && !errors.As(err, new(*exec.ExitError)) {
		return verify.Result{}, err
	}
	h, err := v.objs.Put(out)
	if err != nil {
		return verify.Result{}, err
	}
	rep := verify.Report{Verifier: req.Verifier.Name, Command: req.Verifier.Command, ExitCode: cmd.ProcessState.ExitCode(), Passed: err == nil, Output: h}
	rh, err := objects.PutJSON(v.objs, rep)
	return verify.Result{Report: rep, ReportHash: rh}, err
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// choird is what of choird the test needs, over one Postgres and one
// disk: start it again for a restart.
type choird struct {
	st     *store.Store
	repo   string
	home   string
	clock  *approvaltest.Clock
	dir    *headless.Director
	svc    *approval.Service
	runner *runner.Runner
	client *ctl.Client
	mu     sync.Mutex
	told   []string // the agent's DM: the runs' reports
	stop   func()
}

// start wires the director, the approval service (its run_commit
// decisions to the gate, as choird's startGateway does), the runner and
// the admin API, settles what a previous start left, and runs the loop.
func (c *choird) start(t *testing.T) {
	t.Helper()
	c.dir = headless.New(c.st.Headless())
	c.dir.KnownAgent = func(id string) bool { return id == "alpha" }
	objs, err := objects.Open(filepath.Join(c.home, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	wts, err := worktree.New(filepath.Join(c.home, "worktrees"))
	if err != nil {
		t.Fatal(err)
	}
	gate := &signoff.Gate{Director: c.dir, Patches: objs}
	c.svc = approval.New(approval.Config{Store: postgres.New(c.st), Timeout: time.Hour, Clock: c.clock,
		OnDecision: func(ctx context.Context, a approval.Approval) error {
			if a.RequestType == signoff.Type {
				return gate.Decided(ctx, a)
			}
			return nil
		}})
	gate.Approvals = c.svc
	c.runner = &runner.Runner{Director: c.dir, Worktrees: wts, Objects: objs, Verify: localVerifier{objs}, Sessions: agent{},
		Agent: func(context.Context, string) (runner.Agent, error) {
			return runner.Agent{Repo: c.repo, Image: "choir-agent-alpha:test", Identity: worktree.Identity{Name: "alpha", Email: "alpha@example.org"},
				Tools: []string{"choir.fs.read", "choir.fs.write", "choir.exec"}}, nil
		},
		Moods: func() (mood.Set, error) { return mood.Builtins(), nil },
		Verifiers: func(name string) (verify.Verifier, bool) {
			return verify.Verifier{Name: name, Command: []string{"sh", "test.sh"}, Timeout: time.Minute}, name == "test"
		},
		Notify:    func(_, text string) { c.mu.Lock(); c.told = append(c.told, text); c.mu.Unlock() },
		Approvals: gate,
	}
	c.dir.Changed = func(string, headless.Kind) { c.runner.Kick() }
	if _, err := c.svc.Start(t.Context()); err != nil {
		t.Fatal(err)
	}

	lm, err := logs.NewManager(filepath.Join(c.home, "logs"), 1000, slog.LevelInfo, logs.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	p := control.New(config.Home{Dir: c.home}, lm)
	p.SetDirector(c.dir)
	p.SetApprovals(c.svc)
	p.SetRunDecider(gate)
	sock := filepath.Join(t.TempDir(), "ctl.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p.AdminHandler()}
	go srv.Serve(l)
	c.client = ctl.NewClient(sock)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := c.runner.Recover(ctx); err != nil {
			t.Errorf("Recover() = %v", err)
		}
		c.runner.Loop(ctx, 2, nil)
	}()
	c.stop = func() {
		cancel()
		<-done
		c.client.Close()
		srv.Close()
		c.svc.Close()
		lm.Close()
	}
	t.Cleanup(func() {
		if c.stop != nil {
			c.stop()
		}
	})
}

func (c *choird) restart(t *testing.T) {
	t.Helper()
	c.stop()
	c.stop = nil
	c.start(t)
}

func (c *choird) reports() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.told, "\n")
}

// waitFor waits for cond with a deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *choird) run(t *testing.T, id string) ctl.RunDetail {
	t.Helper()
	rd, err := c.client.Run(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return *rd
}

// highRisk queues a run of a new high-risk work item and waits until its
// approval is pending; it returns the run and the approval.
func (c *choird) highRisk(t *testing.T, what string) (headless.Run, ctl.Approval) {
	t.Helper()
	ctx := t.Context()
	it, err := c.dir.AddWorkItem(ctx, headless.NewWorkItem{Agent: "alpha", Description: what,
		Acceptance: []string{"test.sh passes"}, Verifiers: []string{"test"}, Risk: headless.RiskHigh})
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.dir.StartRun(ctx, headless.NewRun{WorkItem: it.ID, Mood: "CALM", Trigger: "manual"})
	if err != nil {
		t.Fatal(err)
	}
	var ap ctl.Approval
	waitFor(t, "the approval of run "+r.ID, func() bool {
		list, err := c.client.Approvals(ctx, "alpha")
		for _, a := range list {
			if err == nil && a.RequestType == signoff.Type && strings.Contains(a.Summary, r.ID) {
				ap = a
				return true
			}
		}
		return false
	})
	return r, ap
}

func (c *choird) commits(t *testing.T) []string {
	return strings.Split(git(t, c.repo, "log", "--format=%H %s", "main"), "\n")
}

func newChoird(t *testing.T) *choird {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	db := pgtest.DB(t)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{DSN: db.DSN, Namespace: db.Namespace})
	if err != nil {
		t.Fatalf("store.Open() = %v", err)
	}
	t.Cleanup(func() { st.Drop(ctx); st.Close() })
	if err := st.Bootstrap(ctx, []string{"alpha"}, 3); err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	git(t, repo, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(repo, "answer.txt"), []byte("41\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "test.sh"), []byte("#!/bin/sh\ngrep -qx 42 answer.txt || { echo 'FAIL: answer.txt is not 42'; exit 1; }\n"), 0o755)
	git(t, repo, "add", ".")
	git(t, repo, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "start")
	c := &choird{st: st, repo: repo, home: t.TempDir(), clock: approvaltest.NewClock(time.Now())}
	c.start(t)
	return c
}

// A high-risk run waits for a human as an approval of the agent's, asked
// once across a restart; `choirctl approval approve` commits it once, and
// `choirctl run reject` afterwards is told it is decided.
func TestHighRiskRunApprovedThroughTheApprovalAPI(t *testing.T) {
	c := newChoird(t)
	ctx := t.Context()
	r, ap := c.highRisk(t, "make the failing test pass")
	if got := c.run(t, r.ID).Run.Status; got != "awaiting_approval" {
		t.Fatalf("run with its approval pending is %s; want awaiting_approval", got)
	}
	if !strings.Contains(ap.Summary, "answer.txt +1 -1") || !strings.Contains(ap.Summary, "test passed") || strings.Contains(ap.Summary, "FAIL") {
		t.Errorf("approval summary = %q; want the diff stat and the verdict, no verifier output", ap.Summary)
	}

	// choird restarts while the run waits: the same approval, asked once.
	c.restart(t)
	waitFor(t, "the restarted choird to settle the waiting run", func() bool { return !c.runner.Active(r.ID) })
	list, err := c.client.Approvals(ctx, "")
	if err != nil || len(list) != 1 || list[0].ID != ap.ID {
		t.Fatalf("approvals after the restart = %+v, %v; want %s alone", list, err, ap.ID)
	}

	got, err := c.client.Decide(ctx, ap.ID, true) // choirctl approval approve
	if err != nil || got.Status != "approved" {
		t.Fatalf("approval approve = %+v, %v", got, err)
	}
	waitFor(t, "run "+r.ID+" committed", func() bool { return c.run(t, r.ID).Run.Status == "committed" })
	if cs := c.commits(t); len(cs) != 2 || !strings.HasSuffix(cs[0], "make the failing test pass") {
		t.Fatalf("commits on main = %q; want the run's once on top of the first", cs)
	}
	if msg := git(t, c.repo, "log", "-1", "--format=%B", "main"); !strings.Contains(msg, "Choir-Run: "+r.ID) {
		t.Errorf("the commit lacks the run's trailer:\n%s", msg)
	}
	_, err = c.client.DecideRun(ctx, r.ID, ctl.RunDecision{Approve: false, By: "bob", Reason: "too late"})
	if err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("run reject after the approval = %v; want it already decided", err)
	}
	if _, err := c.client.Decide(ctx, ap.ID, false); err == nil {
		t.Error("approval reject after the approval succeeded")
	}
	if cs := c.commits(t); len(cs) != 2 {
		t.Errorf("commits after the late rejections = %q; want still one by the run", cs)
	}
}

// A high-risk run rejected by `choirctl run reject` (its approval decided)
// and one whose approval timed out both end with nothing committed, their
// worktrees removed and their work items open again; the DM is told.
func TestHighRiskRunRejectedOrExpiredIsDiscarded(t *testing.T) {
	c := newChoird(t)
	ctx := t.Context()
	r1, ap1 := c.highRisk(t, "first try")
	wt1 := c.run(t, r1.ID).Run.Worktree
	if _, err := c.client.DecideRun(ctx, r1.ID, ctl.RunDecision{Approve: false, By: "bob", Reason: "not like this"}); err != nil {
		t.Fatalf("run reject = %v", err)
	}
	if a, err := c.client.Approval(ctx, ap1.ID); err != nil || a.Status != "rejected" || a.ResolvedBy != "bob" {
		t.Errorf("approval after run reject = %+v, %v; want rejected by bob", a, err)
	}
	if _, err := c.client.Decide(ctx, ap1.ID, true); err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("approval approve after run reject = %v; want it already decided", err)
	}
	waitFor(t, "run "+r1.ID+" ended", func() bool { return c.run(t, r1.ID).Run.Status == "failed" })

	r2, ap2 := c.highRisk(t, "second try")
	wt2 := c.run(t, r2.ID).Run.Worktree
	c.clock.Advance(time.Hour) // nobody decides
	if a, err := c.client.Approval(ctx, ap2.ID); err != nil || a.Status != "rejected" || a.ResolvedBy != approval.ByTimeout {
		t.Errorf("approval after its timeout = %+v, %v; want rejected by the timeout", a, err)
	}
	waitFor(t, "run "+r2.ID+" ended", func() bool { return c.run(t, r2.ID).Run.Status == "failed" })

	if cs := c.commits(t); len(cs) != 1 {
		t.Errorf("commits on main = %q; want the first only", cs)
	}
	for _, r := range []struct {
		run headless.Run
		wt  string
	}{{r1, wt1}, {r2, wt2}} {
		if _, err := os.Stat(r.wt); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("worktree of run %s still there: %v", r.run.ID, err)
		}
		if it, err := c.dir.WorkItem(ctx, r.run.WorkItem); err != nil || it.Status != headless.WorkReady {
			t.Errorf("work item %s after its run was rejected = %+v, %v; want ready again", r.run.WorkItem, it.Status, err)
		}
	}
	if got := git(t, c.repo, "branch", "--list", "choir/run/*"); got != "" {
		t.Errorf("run branches left: %q", got)
	}
	reports := c.reports()
	for _, want := range []string{
		fmt.Sprintf("Run %s of %s failed: its commit was rejected by human:bob: not like this. Nothing was committed.", r1.ID, r1.WorkItem),
		fmt.Sprintf("Run %s of %s failed: its commit was rejected by %s", r2.ID, r2.WorkItem, approval.ByTimeout),
	} {
		if !strings.Contains(reports, want) {
			t.Errorf("DM reports lack %q:\n%s", want, reports)
		}
	}
}
