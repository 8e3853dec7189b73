package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"choir/choird/headless"
)

// hookSessions runs hook (the agent's calls of its run tools) before the
// scripted session, which may end in status.
type hookSessions struct {
	next   Sessions
	hook   func(t Task) error
	status string
}

func (h hookSessions) Perform(ctx context.Context, t Task) (Outcome, error) {
	if err := h.hook(t); err != nil {
		return Outcome{}, err
	}
	if h.status != "" {
		return Outcome{SessionID: "s-" + t.RunID, Status: h.status, Reason: "scripted"}, nil
	}
	return h.next.Perform(ctx, t)
}

// A run whose agent asked to split its low-risk work item ends without a
// commit, even when its budget ran out after asking, and the item is
// split into the proposed children; the DM is told.
func TestSplitRequestEndsTheRunAndSplits(t *testing.T) {
	e := newEnv(t, "42\n")
	it := e.workItem(t, headless.RiskLow)
	e.runner.Sessions = hookSessions{next: e.agent, status: "budget", hook: func(task Task) error {
		_, _, err := e.dir.RequestSplit(context.Background(), task.RunID, headless.SplitProposal{Reason: "too big for one run",
			Children: []headless.ProposedItem{{Description: "first half", Acceptance: []string{"the first half works"}},
				{Description: "second half", Acceptance: []string{"the second half works"}, After: []int{0}}}}, "")
		return err
	}}
	r := e.queue(t, it.ID)
	if err := e.runner.Perform(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if got := e.status(t, r); got != headless.RunDiscarded {
		t.Errorf("run is %s; want discarded", got)
	}
	if c := e.commits(t); len(c) != 1 {
		t.Errorf("commits = %q; want none made", c)
	}
	parent, _ := e.dir.WorkItem(context.Background(), it.ID)
	kids, _ := e.dir.Children(context.Background(), it.ID)
	if parent.Status != headless.WorkSplit || len(kids) != 2 {
		t.Fatalf("work item %s with children %v; want split into 2", parent.Status, kids)
	}
	if k := strings.Join(e.kinds(t, r), " "); !strings.Contains(k, "SplitRequest SplitDecision RunEnded") {
		t.Errorf("receipts = %s; want the request, the decision and the end", k)
	}
	if n := e.notices(); len(n) != 1 || !strings.Contains(n[0], "split "+it.ID+" into "+kids[0]+", "+kids[1]) {
		t.Errorf("DM reports = %q; want the split told", n)
	}
	if got := git(t, e.repo, "branch", "--list", "choir/run/*"); got != "" {
		t.Errorf("run branches left: %q", got)
	}
}

// A repository whose tier file makes answer.txt SPECS: a run that changes
// it without a merged spec change is refused its commit, naming the path,
// the tier and the gate; with one citing a passing attestation it
// commits. The agent cannot loosen the tiers by rewriting the tier file
// in its worktree (they are read before it works).
func TestSpecsChangeNeedsAMergedRequest(t *testing.T) {
	e := newEnv(t, "42\n", "42\n")
	if err := os.MkdirAll(filepath.Join(e.repo, ".choir"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, e.repo, ".choir/docs.json", `{"specs": ["answer.txt"], "notes": ["notes/"]}`)
	git(t, e.repo, "add", ".")
	git(t, e.repo, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "tiers")
	it := e.workItem(t, headless.RiskLow)
	var evidence string
	e.runner.Sessions = hookSessions{next: e.agent, hook: func(task Task) error {
		if evidence == "" {
			// The agent rewrites the tier file: too late, it was read
			// before, and the rewrite is itself a DOCTRINE change.
			write(t, task.Worktree, ".choir/docs.json", `{"notes": ["answer.txt"]}`)
			return nil
		}
		_, _, err := e.dir.RequestSpecChange(context.Background(), task.RunID, headless.SpecChange{Paths: []string{"answer.txt"},
			Change: "the answer is 42", Evidence: []string{evidence}}, nil, "")
		return err
	}}
	r1 := e.queue(t, it.ID)
	if err := e.runner.Perform(context.Background(), r1); err != nil {
		t.Fatal(err)
	}
	if got := e.status(t, r1); got != headless.RunFailed {
		t.Fatalf("run 1 is %s; want failed", got)
	}
	n := e.notices()
	if len(n) != 1 || !strings.Contains(n[0], "answer.txt, which is SPECS") || !strings.Contains(n[0], "SPEC_CHANGE_REQUEST") {
		t.Errorf("DM reports = %q; want the refusal naming answer.txt, SPECS and the gate", n)
	}
	if c := e.commits(t); len(c) != 2 {
		t.Errorf("commits after run 1 = %q; want none added", c)
	}
	// Run 1's verifier passed: its attestation is the evidence.
	rs, _ := e.dir.Receipts(context.Background(), r1, 0)
	for _, rec := range rs {
		if rec.Kind == headless.KindVerifierResults {
			evidence = rec.Ref()
		}
	}
	r2 := e.queue(t, it.ID)
	if err := e.runner.Perform(context.Background(), r2); err != nil {
		t.Fatal(err)
	}
	if got := e.status(t, r2); got != headless.RunCommitted {
		out := strings.Join(e.notices(), "\n")
		t.Fatalf("run 2 is %s; want committed (reports: %s)", got, out)
	}
	if got := git(t, e.repo, "show", "main:answer.txt"); got != "42" {
		t.Errorf("answer.txt on main = %q; want 42", got)
	}
}
