package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/choird/headless"
	"choir/choird/headless/mood"
	"choir/choird/headless/objects"
	"choir/choird/headless/verify"
	"choir/choird/headless/worktree"
)

// The repository every test works on: a Go-free "project" whose test is a
// shell script: test.sh passes when answer.txt holds 42.
func newRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	write(t, dir, "answer.txt", "41\n")
	write(t, dir, "test.sh", "#!/bin/sh\ngrep -qx 42 answer.txt || { echo 'FAIL: answer.txt is not 42'; exit 1; }\necho ok\n")
	git(t, dir, "add", ".")
	git(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "start")
	return dir
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

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// agentSession plays the agent: it writes what the script says into the
// worktree and answers.
type agentSession struct {
	mu         sync.Mutex
	writes     []string // answer.txt's content, one per session
	tasks      []Task
	status     string // "" = Answered
	errorReply bool
}

func (a *agentSession) Perform(ctx context.Context, t Task) (Outcome, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tasks = append(a.tasks, t)
	if a.status != "" {
		return Outcome{Status: a.status, Reason: "scripted"}, nil
	}
	if a.errorReply {
		return Outcome{Status: Answered, Answer: "the model failed: 500", ErrorReply: true}, nil
	}
	if t.Worktree == "" {
		// A mood without the workspace (CONTRITE, ...): nothing to write.
		return Outcome{SessionID: "s-" + t.RunID, Status: Answered, Answer: "nothing to change from here"}, nil
	}
	body := a.writes[0]
	a.writes = a.writes[1:]
	if err := os.WriteFile(filepath.Join(t.Worktree, "answer.txt"), []byte(body), 0o644); err != nil {
		return Outcome{}, err
	}
	return Outcome{SessionID: "s-" + t.RunID, Status: Answered, Answer: "set the answer to " + strings.TrimSpace(body)}, nil
}

// localVerifier runs a verifier's command in the worktree on this host,
// in place of verify.Runner's container (tested in its own package).
type localVerifier struct {
	objs  *objects.Store
	calls int
	// before runs before each verification (a crash injected there).
	before func(ctx context.Context) error
}

func (v *localVerifier) Run(ctx context.Context, req verify.Request) (verify.Result, error) {
	v.calls++
	if v.before != nil {
		if err := v.before(ctx); err != nil {
			return verify.Result{}, err
		}
	}
	cmd := exec.CommandContext(ctx, req.Verifier.Command[0], req.Verifier.Command[1:]...)
	cmd.Dir = req.Worktree
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return verify.Result{}, err
		}
		code = ee.ExitCode()
	}
	h, err := v.objs.Put(out)
	if err != nil {
		return verify.Result{}, err
	}
	rep := verify.Report{Verifier: req.Verifier.Name, Command: req.Verifier.Command, ExitCode: code, Passed: code == 0, Output: h}
	if code != 0 {
		rep.Signature = mood.Signature(req.Verifier.Name, []string{strings.TrimSpace(string(out))})
	}
	rh, err := objects.PutJSON(v.objs, rep)
	if err != nil {
		return verify.Result{}, err
	}
	return verify.Result{Report: rep, ReportHash: rh}, nil
}

type env struct {
	dir      *headless.Director
	store    *headless.MemStore
	repo     string
	runner   *Runner
	agent    *agentSession
	verifier *localVerifier
	notices  func() []string
	moods    mood.Set
}

func newEnv(t *testing.T, writes ...string) *env {
	t.Helper()
	e := &env{store: headless.NewMemStore(), repo: newRepo(t), agent: &agentSession{writes: writes}, moods: mood.Builtins()}
	e.dir = headless.New(e.store)
	e.runner = e.newRunner(t)
	return e
}

// newRunner is a runner over e's store and disk: a second one stands for
// choird started again.
func (e *env) newRunner(t *testing.T) *Runner {
	t.Helper()
	home := filepath.Join(filepath.Dir(e.repo), "home")
	wts, err := worktree.New(filepath.Join(home, "worktrees"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := objects.Open(filepath.Join(home, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	if e.verifier == nil {
		e.verifier = &localVerifier{objs: objs}
	}
	var mu sync.Mutex
	var notices []string
	e.notices = func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), notices...) }
	return &Runner{
		Director: e.dir, Worktrees: wts, Objects: objs, Verify: e.verifier, Sessions: e.agent,
		Agent: func(context.Context, string) (Agent, error) {
			return Agent{Repo: e.repo, Image: "choir-agent-a1:test", Identity: worktree.Identity{Name: "a1", Email: "a1@example.org"},
				Tools: []string{"choir.fs.read", "choir.fs.write", "choir.exec", "choir.web.fetch", "choir.dm.send"}}, nil
		},
		Moods: func() (mood.Set, error) { return e.moods, nil },
		Verifiers: func(name string) (verify.Verifier, bool) {
			if name != "test" {
				return verify.Verifier{}, false
			}
			return verify.Verifier{Name: "test", Command: []string{"sh", "test.sh"}, Timeout: time.Minute}, true
		},
		Notify: func(agent, text string) { mu.Lock(); notices = append(notices, agent+": "+text); mu.Unlock() },
	}
}

func (e *env) workItem(t *testing.T, risk headless.Risk) headless.WorkItem {
	t.Helper()
	it, err := e.dir.AddWorkItem(context.Background(), headless.NewWorkItem{Agent: "a1", Description: "make the failing test pass",
		Acceptance: []string{"test.sh passes"}, Verifiers: []string{"test"}, Risk: risk})
	if err != nil {
		t.Fatal(err)
	}
	return it
}

func (e *env) queue(t *testing.T, item string) string {
	t.Helper()
	r, err := e.dir.StartRun(context.Background(), headless.NewRun{WorkItem: item, Mood: "CALM", Trigger: "manual"})
	if err != nil {
		t.Fatal(err)
	}
	return r.ID
}

func (e *env) kinds(t *testing.T, runID string) []string {
	t.Helper()
	rs, err := e.dir.Receipts(context.Background(), runID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rs {
		out = append(out, string(r.Kind))
	}
	return out
}

func (e *env) commits(t *testing.T) []string {
	t.Helper()
	return strings.Split(git(t, e.repo, "log", "--format=%s", "main"), "\n")
}

func (e *env) status(t *testing.T, runID string) headless.RunStatus {
	t.Helper()
	r, err := e.dir.Run(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	return r.Status
}

// A run whose verifier fails leaves nothing on the branch and no
// worktree; the next run of the work item is told why, passes, and
// commits once, with its receipts.
func TestFailedRunLeavesNoCommitAndTheNextOneCommits(t *testing.T) {
	e := newEnv(t, "40\n", "42\n")
	ctx := context.Background()
	it := e.workItem(t, headless.RiskLow)

	r1 := e.queue(t, it.ID)
	if err := e.runner.Perform(ctx, r1); err != nil {
		t.Fatal(err)
	}
	if got := e.status(t, r1); got != headless.RunFailed {
		t.Fatalf("run 1 is %s; want failed", got)
	}
	if got := e.commits(t); len(got) != 1 {
		t.Fatalf("commits on main after a failed run = %q; want only the first", got)
	}
	if got := git(t, e.repo, "branch", "--list", "choir/run/*"); got != "" {
		t.Errorf("run branches left after a failed run: %q", got)
	}
	if _, err := os.Stat(filepath.Join(e.runner.Worktrees.Root(), r1)); !os.IsNotExist(err) {
		t.Errorf("worktree of the failed run still there: %v", err)
	}
	want := []string{"RunStarted", "ContextFootprint", "PatchReceipt", "Note", "VerifierResults", "RunEnded"}
	if got := e.kinds(t, r1); strings.Join(got[:len(want)], " ") != strings.Join(want, " ") {
		t.Errorf("receipts of the failed run = %v; want %v first", got, want)
	}
	if n := e.notices(); len(n) != 1 || !strings.Contains(n[0], "Nothing was committed") || !strings.Contains(n[0], r1+"#") {
		t.Errorf("DM reports = %q; want one saying nothing was committed, with the receipts", n)
	}

	r2 := e.queue(t, it.ID)
	if err := e.runner.Perform(ctx, r2); err != nil {
		t.Fatal(err)
	}
	if got := e.status(t, r2); got != headless.RunCommitted {
		t.Fatalf("run 2 is %s; want committed (receipts %v)", got, e.kinds(t, r2))
	}
	if obj := e.agent.tasks[1].Objective; !strings.Contains(obj, "run "+r1+" (failed): verifier test failed") {
		t.Errorf("run 2's objective does not recall run 1's verdict:\n%s", obj)
	}
	commits := e.commits(t)
	if len(commits) != 2 || commits[0] != "make the failing test pass" {
		t.Fatalf("commits on main = %q; want the run's commit on top of the first", commits)
	}
	msg := git(t, e.repo, "log", "-1", "--format=%B", "main")
	if !strings.Contains(msg, "Choir-Run: "+r2) || !strings.Contains(msg, "Choir-Patch: ") {
		t.Errorf("commit message lacks the run's trailers:\n%s", msg)
	}
	if got := strings.TrimSpace(git(t, e.repo, "show", "main:answer.txt")); got != "42" {
		t.Errorf("answer.txt on main = %q; want the run's 42", got)
	}
	if it2, _ := e.dir.WorkItem(ctx, it.ID); it2.Status != headless.WorkDone {
		t.Errorf("work item is %s after the commit; want done", it2.Status)
	}
	if k := e.kinds(t, r2); k[len(k)-1] != "CommitReceipt" && !strings.Contains(strings.Join(k, " "), "CommitReceipt") {
		t.Errorf("receipts of run 2 = %v; want a CommitReceipt", k)
	}
	if n := e.notices(); len(n) != 2 || !strings.Contains(n[1], "committed") {
		t.Errorf("DM reports = %q; want the commit reported", n)
	}
}

// The run session gets the mood's profile: CALM offers the workspace
// tools and no network tool, with the network off and no credentials.
func TestRunSessionGetsTheMoodsProfile(t *testing.T) {
	e := newEnv(t, "42\n")
	it := e.workItem(t, headless.RiskLow)
	r := e.queue(t, it.ID)
	if err := e.runner.Perform(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	task := e.agent.tasks[0]
	// The run's own notes and requests (split.go) come in every mood.
	if strings.Join(task.Tools, " ") != "choir.exec choir.fs.read choir.fs.write choir.run.note choir.run.split choir.run.spec_change choir.kb.search" || task.Network || task.Credentials || task.WorkspaceRO {
		t.Errorf("CALM task = tools %v network %v credentials %v read-only %v; want the fs tools and exec, no network, no credentials, writable",
			task.Tools, task.Network, task.Credentials, task.WorkspaceRO)
	}
	if task.Tokens != 400_000 || task.WallTime != 30*time.Minute {
		t.Errorf("CALM budgets = %d tokens, %s; want the mood's", task.Tokens, task.WallTime)
	}
}

// An agent that does not finish, or changes nothing, fails its run.
func TestUnfinishedOrEmptyRunFails(t *testing.T) {
	for _, tc := range []struct {
		name, status, write, want string
		errorReply                bool
	}{
		{"timeout", "timeout", "", "did not finish (timeout: scripted)", false},
		{"no change", "", "41\n", "changed nothing", false},
		{"error reply", "", "", "answered with an error: the model failed: 500", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.write)
			e.agent.status, e.agent.errorReply = tc.status, tc.errorReply
			it := e.workItem(t, headless.RiskLow)
			r := e.queue(t, it.ID)
			if err := e.runner.Perform(context.Background(), r); err != nil {
				t.Fatal(err)
			}
			if got := e.status(t, r); got != headless.RunFailed {
				t.Fatalf("run is %s; want failed", got)
			}
			if n := e.notices(); len(n) != 1 || !strings.Contains(n[0], tc.want) {
				t.Errorf("DM report = %q; want it to say %q", n, tc.want)
			}
			if e.verifier.calls != 0 {
				t.Errorf("%d verifications of a run without a patch; want none", e.verifier.calls)
			}
		})
	}
}

// A workspace that is not a git repository fails the run with what to
// do; nothing else happens (the session never starts).
func TestWorkspaceWithoutGitFailsTheRun(t *testing.T) {
	e := newEnv(t, "42\n")
	e.repo = t.TempDir() // not a repository
	it := e.workItem(t, headless.RiskLow)
	r := e.queue(t, it.ID)
	if err := e.runner.Perform(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if got := e.status(t, r); got != headless.RunDiscarded {
		t.Fatalf("run on a workspace without git is %s; want discarded (it never started)", got)
	}
	if len(e.agent.tasks) != 0 {
		t.Errorf("the agent was given %d tasks; want none", len(e.agent.tasks))
	}
	if n := e.notices(); len(n) != 1 || !strings.Contains(n[0], "not a git repository") {
		t.Errorf("DM report = %q; want it to say the workspace is not a git repository", n)
	}
}

// A worktree left by a choird killed before it recorded the run's start
// does not keep the run from starting.
func TestLeftoverWorktreeOfAQueuedRun(t *testing.T) {
	e := newEnv(t, "42\n")
	it := e.workItem(t, headless.RiskLow)
	r := e.queue(t, it.ID)
	if _, err := e.runner.Worktrees.Create(context.Background(), e.repo, r, ""); err != nil {
		t.Fatal(err)
	}
	if err := e.runner.Perform(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if got := e.status(t, r); got != headless.RunCommitted {
		t.Fatalf("run whose worktree was left by a crash is %s; want committed (receipts %v)", got, e.kinds(t, r))
	}
}

// A high-risk work item passes its verifiers and then waits for a human:
// nothing is committed by policy.
func TestHighRiskWaitsForAHuman(t *testing.T) {
	e := newEnv(t, "42\n")
	it := e.workItem(t, headless.RiskHigh)
	r := e.queue(t, it.ID)
	if err := e.runner.Perform(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if got := e.status(t, r); got != headless.RunAwaitingApproval {
		t.Fatalf("high-risk run is %s; want awaiting_approval", got)
	}
	if got := e.commits(t); len(got) != 1 {
		t.Errorf("commits = %q; want none by policy", got)
	}
	if n := e.notices(); len(n) != 1 || !strings.Contains(n[0], "waits for your decision") {
		t.Errorf("DM report = %q; want the approval asked for", n)
	}
	if _, _, err := e.dir.DecideCommit(context.Background(), r, true, "policy", "", "policy-try"); err == nil {
		t.Fatal("the policy approved a high-risk run's commit")
	}

	// The human approves; the loop commits.
	if _, _, err := e.dir.DecideCommit(context.Background(), r, true, "human:ann", "looks right", "human"); err != nil {
		t.Fatal(err)
	}
	e.loopUntil(t, r, headless.RunCommitted)
	if got := e.commits(t); len(got) != 2 {
		t.Errorf("commits after the human's approval = %q; want the run's", got)
	}
}

// A human's rejection ends the run with nothing committed.
func TestHumanRejectionEndsTheRun(t *testing.T) {
	e := newEnv(t, "42\n")
	it := e.workItem(t, headless.RiskHigh)
	r := e.queue(t, it.ID)
	if err := e.runner.Perform(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.dir.DecideCommit(context.Background(), r, false, "human:ann", "not like this", "human"); err != nil {
		t.Fatal(err)
	}
	e.loopUntil(t, r, headless.RunFailed)
	if got := e.commits(t); len(got) != 1 {
		t.Errorf("commits after a rejection = %q; want none by the run", got)
	}
	if n := e.notices(); !strings.Contains(n[len(n)-1], "rejected by human:ann: not like this") {
		t.Errorf("DM reports = %q; want the rejection reported", n)
	}
}

// loopUntil runs the loop until run r has status want (or a deadline).
func (e *env) loopUntil(t *testing.T, r string, want headless.RunStatus) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.runner.Loop(ctx, 2, nil); close(done) }()
	e.runner.Kick()
	deadline := time.Now().Add(30 * time.Second)
	for e.status(t, r) != want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if got := e.status(t, r); got != want {
		t.Fatalf("run %s is %s; want %s (receipts %v)", r, got, want, e.kinds(t, r))
	}
}

// choird killed during verification: the next start resumes the
// verification and commits exactly once.
func TestKilledDuringVerificationCommitsOnceAfterRestart(t *testing.T) {
	e := newEnv(t, "42\n")
	it := e.workItem(t, headless.RiskLow)
	r := e.queue(t, it.ID)
	ctx, kill := context.WithCancel(context.Background())
	e.verifier.before = func(context.Context) error { kill(); return context.Canceled }
	if err := e.runner.Perform(ctx, r); err == nil {
		t.Fatal("Perform returned nil although choird was killed during verification")
	}
	if got := e.status(t, r); got != headless.RunVerifying {
		t.Fatalf("run after the kill is %s; want verifying (left for the restart)", got)
	}

	e.verifier.before = nil
	restarted := e.newRunner(t)
	if err := restarted.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := e.status(t, r); got != headless.RunCommitted {
		t.Fatalf("run after the restart is %s; want committed (receipts %v)", got, e.kinds(t, r))
	}
	if got := e.commits(t); len(got) != 2 {
		t.Fatalf("commits = %q; want exactly one by the run", got)
	}
	// A second restart finds nothing to do.
	if err := e.newRunner(t).Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := e.commits(t); len(got) != 2 {
		t.Fatalf("commits after a second restart = %q; want still one by the run", got)
	}
}

// choird killed after the commit reached the branch and before its
// receipt: the restart finds the commit by its trailer and records it,
// never making a second one.
func TestKilledBetweenCommitAndReceipt(t *testing.T) {
	e := newEnv(t, "42\n")
	ctx := context.Background()
	it := e.workItem(t, headless.RiskLow)
	r := e.queue(t, it.ID)
	// Let the run reach its decision, then commit by hand as the killed
	// choird had.
	x, err := e.runner.load(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if done, err := e.runner.start(ctx, x); err != nil || done {
		t.Fatalf("start = %v, %v", done, err)
	}
	if done, err := e.runner.work(ctx, x); err != nil || done {
		t.Fatalf("work = %v, %v", done, err)
	}
	e.runner.Verify = &localVerifier{objs: e.runner.Objects}
	if _, _, err := e.dir.AddNote(ctx, r, headless.Note{Type: headless.NoteRequestVerify, Text: "v"}, "request-verify:"+x.patch.Hash); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.dir.Attest(ctx, r, headless.Attestation{Verifier: "test", Passed: true, Patch: x.patch.Hash}, "verify:test:"+x.patch.Hash); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.dir.RequestCommit(ctx, r, headless.CommitRequest{Summary: "s", Patch: x.patch.Hash}, "commit-request:"+x.patch.Hash); err != nil {
		t.Fatal(err)
	}
	dec, _, err := e.dir.DecideCommit(ctx, r, true, "policy", "ok", "decide:"+x.patch.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.wt.Commit(ctx, worktree.Decision{RunID: r, Approved: true, By: "policy", Patch: x.patch.Hash, Receipt: strings.Repeat("0", 64)}, "by hand", x.agent.Identity); err != nil {
		t.Fatal(err)
	}
	_ = dec

	if err := e.newRunner(t).Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.status(t, r); got != headless.RunCommitted {
		t.Fatalf("run after the restart is %s; want committed", got)
	}
	if got := e.commits(t); len(got) != 2 || got[0] != "by hand" {
		t.Fatalf("commits = %q; want the one made before the kill, and no other", got)
	}
}

// choird killed while the agent worked: the restart discards the run and
// its worktree; the work item is open for another run.
func TestKilledWhileTheAgentWorkedIsDiscarded(t *testing.T) {
	e := newEnv(t, "42\n")
	ctx := context.Background()
	it := e.workItem(t, headless.RiskLow)
	r := e.queue(t, it.ID)
	x, err := e.runner.load(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if done, err := e.runner.start(ctx, x); err != nil || done {
		t.Fatalf("start = %v, %v", done, err)
	}
	if err := e.runner.record(ctx, x, headless.KindContextFootprint, Footprint{Repo: x.wt.Repo, Target: x.wt.Target, Base: x.wt.Base}, nil, "footprint"); err != nil {
		t.Fatal(err)
	}
	write(t, x.wt.Dir, "answer.txt", "42\n") // half-done work

	if err := e.newRunner(t).Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.status(t, r); got != headless.RunDiscarded {
		t.Fatalf("run after the restart is %s; want discarded", got)
	}
	if _, err := os.Stat(x.wt.Dir); !os.IsNotExist(err) {
		t.Errorf("worktree of the discarded run still there: %v", err)
	}
	if got := e.commits(t); len(got) != 1 {
		t.Errorf("commits = %q; want none", got)
	}
	if it2, _ := e.dir.WorkItem(ctx, it.ID); it2.Status != headless.WorkReady {
		t.Errorf("work item is %s; want ready for another run", it2.Status)
	}
}

// Repeated identical failures are an anomaly, and the guards move the
// work item's next run to another mood.
func TestRepeatedFailuresChangeTheMood(t *testing.T) {
	e := newEnv(t, "40\n", "40\n", "40\n")
	ctx := context.Background()
	it := e.workItem(t, headless.RiskLow)
	var last string
	for range 3 {
		last = e.queue(t, it.ID)
		if err := e.runner.Perform(ctx, last); err != nil {
			t.Fatal(err)
		}
	}
	k := strings.Join(e.kinds(t, last), " ")
	if !strings.Contains(k, "Anomaly") || !strings.Contains(k, "MoodTransition") {
		t.Fatalf("receipts of the third identical failure = %s; want an Anomaly and a MoodTransition", k)
	}
	next, err := e.runner.NextMood(ctx, it.ID, mood.Calm)
	if err != nil || next == mood.Calm {
		t.Errorf("NextMood after three identical failures = %s, %v; want another mood than CALM", next, err)
	}
}

// The loop performs a run queued while it waits, woken by Kick.
func TestLoopPerformsQueuedRuns(t *testing.T) {
	e := newEnv(t, "42\n")
	it := e.workItem(t, headless.RiskLow)
	e.dir.Changed = func(string, headless.Kind) { e.runner.Kick() }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.runner.Loop(ctx, 2, nil); close(done) }()
	r := e.queue(t, it.ID) // Changed kicks the loop
	deadline := time.Now().Add(30 * time.Second)
	for e.status(t, r) != headless.RunCommitted && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if got := e.status(t, r); got != headless.RunCommitted {
		t.Fatalf("run queued while the loop waited is %s; want committed", got)
	}
}

// A queued run of an agent removed from config.json is discarded, with a
// RunEnded receipt saying why, and not tried again at every pass.
func TestQueuedRunOfARemovedAgentIsDiscarded(t *testing.T) {
	e := newEnv(t)
	it := e.workItem(t, headless.RiskLow)
	r := e.queue(t, it.ID)
	var mu sync.Mutex
	asked := 0
	e.runner.Agent = func(context.Context, string) (Agent, error) {
		mu.Lock()
		asked++
		mu.Unlock()
		return Agent{}, fmt.Errorf("agent a1: %w", ErrNoAgent)
	}
	e.loopUntil(t, r, headless.RunDiscarded)
	rs, err := e.dir.Receipts(context.Background(), r, 0)
	if err != nil {
		t.Fatal(err)
	}
	last := rs[len(rs)-1]
	if last.Kind != headless.KindRunEnded || !strings.Contains(string(last.Body), "removed from config.json") {
		t.Errorf("last receipt of the removed agent's run = %s %s; want RunEnded saying the agent was removed", last.Kind, last.Body)
	}
	if got, err := e.dir.WorkItem(context.Background(), it.ID); err != nil || got.Status == headless.WorkRunning {
		t.Errorf("work item after the discarded run = %s, %v; want it open again", got.Status, err)
	}
	// A second loop finds nothing queued: the run is not retried.
	before := asked
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.runner.Loop(ctx, 2, nil); close(done) }()
	e.runner.Kick()
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if asked != before {
		t.Errorf("the agent was looked up %d more times after its run was discarded; want none", asked-before)
	}
}

// Runs that change nothing (no patch, no note: the state vector before
// and after them is the same) are the no_state_change anomaly after
// three in a row; a run that used up its budget without progress is the
// budget anomaly at once.
func TestRunsWithoutProgressAreAnomalies(t *testing.T) {
	e := newEnv(t, "41\n", "41\n", "41\n")
	ctx := context.Background()
	it := e.workItem(t, headless.RiskLow)
	var last string
	for i := range 3 {
		last = e.queue(t, it.ID)
		if err := e.runner.Perform(ctx, last); err != nil {
			t.Fatal(err)
		}
		if k := strings.Join(e.kinds(t, last), " "); (i < 2) == strings.Contains(k, "Anomaly") {
			t.Fatalf("receipts of run %d without progress = %s; want an Anomaly at the third only", i+1, k)
		}
	}
	rs, _ := e.dir.Receipts(ctx, last, 0)
	found := false
	for _, rec := range rs {
		found = found || rec.Kind == headless.KindAnomaly && strings.Contains(string(rec.Body), string(mood.NoStateChange))
	}
	if !found {
		t.Errorf("third run without progress: receipts %v; want a %s anomaly", e.kinds(t, last), mood.NoStateChange)
	}

	e.agent.status = "budget"
	it2 := e.workItem(t, headless.RiskLow)
	r := e.queue(t, it2.ID)
	if err := e.runner.Perform(ctx, r); err != nil {
		t.Fatal(err)
	}
	rs, _ = e.dir.Receipts(ctx, r, 0)
	found = false
	for _, rec := range rs {
		found = found || rec.Kind == headless.KindAnomaly && strings.Contains(string(rec.Body), string(mood.BudgetExhausted))
	}
	if !found {
		t.Errorf("a run that spent its budget without progress: receipts %v; want a %s anomaly", e.kinds(t, r), mood.BudgetExhausted)
	}
	if n := e.notices(); !strings.Contains(n[len(n)-1], "Run "+r) || !strings.Contains(n[len(n)-1], "Anomaly: used up its") {
		t.Errorf("DM notices = %q; want the run's report to tell the anomaly", n)
	}
}
