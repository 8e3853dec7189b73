package verify

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"choir/choird/headless/objects"
	"choir/choird/headless/worktree"
)

// The transaction of a run, wired by hand as the director does: a worktree,
// the agent's edit, the patch, the verifier on that patch in its container,
// and a commit only for a passing attestation of the same patch. Run 1
// fails verification and leaves nothing; run 2 passes and commits.
func TestVerifiedRunCommitsAndFailedRunLeavesNothing(t *testing.T) {
	f := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	base := t.TempDir()
	repo := filepath.Join(base, "ws")
	os.MkdirAll(repo, 0o755)
	git := func(args ...string) string {
		c := exec.Command("git", args...)
		c.Dir = repo
		c.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@x", "GIT_COMMITTER_NAME=u", "GIT_COMMITTER_EMAIL=u@x")
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(repo, "answer"), []byte("41\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "test.sh"), []byte("grep -qx 42 answer && echo '1 passed, 0 failed' || { echo '--- FAIL: TestAnswer'; exit 1; }\n"), 0o644)
	git("add", "-A")
	git("commit", "-q", "-m", "a failing test")
	start := git("rev-parse", "main")
	wts, err := worktree.New(filepath.Join(base, "worktrees"))
	if err != nil {
		t.Fatal(err)
	}
	check := Verifier{Name: "test", Command: []string{"sh", "test.sh"}, Timeout: time.Minute}

	attempt := func(runID, answer string) (Result, *worktree.Worktree, worktree.Patch) {
		wt, err := wts.Create(ctx, repo, runID, "")
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(wt.Dir, "answer"), []byte(answer), 0o644) // the agent's edit
		p, err := wt.Diff(ctx)
		if err != nil {
			t.Fatal(err)
		}
		res, err := f.r.Run(ctx, Request{RunID: runID, Verifier: check, Image: testImage, Worktree: wt.Dir, DiffHash: p.Hash})
		if err != nil {
			t.Fatal(err)
		}
		return res, wt, p
	}

	res, wt, _ := attempt("r-00000000a001", "43\n")
	if res.Report.Passed || res.Attestation.Result != "fail" || res.Report.Signature == "" {
		t.Fatalf("run 1: %+v; want a failed attestation", res.Report)
	}
	if _, err := wt.Discard(ctx); err != nil {
		t.Fatal(err)
	}
	if head := git("rev-parse", "main"); head != start {
		t.Fatal("run 1's failed work reached main")
	}

	res, wt, p := attempt("r-00000000a002", "42\n")
	if !res.Report.Passed || res.Attestation.DiffHash != p.Hash {
		t.Fatalf("run 2: %+v, attestation %+v; want a pass for patch %s", res.Report, res.Attestation, p.Hash)
	}
	// The director re-reads the attestation from the store and checks that
	// the worktree still holds the patch it attests.
	att, err := objects.GetJSON[Attestation](f.store, res.AttestationHash)
	if err != nil {
		t.Fatal(err)
	}
	now, err := wt.Diff(ctx)
	if err != nil || att.Result != "pass" || att.DiffHash != now.Hash {
		t.Fatalf("attestation %+v does not cover the worktree's patch %s (%v)", att, now.Hash, err)
	}
	out, err := wt.Commit(ctx, worktree.Decision{RunID: wt.RunID, Approved: true, By: "policy", Patch: att.DiffHash, Receipt: res.AttestationHash},
		"answer: 42", worktree.Identity{Name: "agent", Email: "agent@choir.test"})
	if err != nil {
		t.Fatal(err)
	}
	if got := git("show", "main:answer"); got != "42" || git("rev-parse", "main") != out.Commit {
		t.Errorf("main holds answer %q at %s; want 42 at the run's commit %s", got, git("rev-parse", "main"), out.Commit)
	}
	if n := git("rev-list", "--count", start+"..main"); n != "1" {
		t.Errorf("%s commits on main since the start; want exactly 1", n)
	}
	if _, err := wt.Discard(ctx); err != nil {
		t.Fatal(err)
	}
	f.noContainers(t)
}
