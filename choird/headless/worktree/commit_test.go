package worktree

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func commitsWithTrailer(t *testing.T, repo, runID string) int {
	t.Helper()
	out := gitT(t, repo, "log", "--all", "--format=%H %(trailers:key=Choir-Run,valueonly,separator=)")
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.HasSuffix(strings.TrimSpace(l), runID) {
			n++
		}
	}
	return n
}

func TestRunCommitsOnlyTheApprovedPatch(t *testing.T) {
	ctx := context.Background()
	repo, m := newRepo(t)
	base := gitT(t, repo, "rev-parse", "HEAD")
	w, err := m.Create(ctx, repo, "r-000000000001", "")
	if err != nil {
		t.Fatal(err)
	}
	if w.Target != "main" || w.Base != base || w.Dir != filepath.Join(m.Root(), "r-000000000001") {
		t.Fatalf("Create = %+v; want target main at %s in the manager's root", w, base)
	}
	if within(w.Dir, repo) {
		t.Fatalf("worktree %s is inside the working copy %s", w.Dir, repo)
	}
	write(t, filepath.Join(w.Dir, "calc.go"), "package calc\n\nfunc Add(a, b int) int { return a + b }\n")
	write(t, filepath.Join(w.Dir, "calc_test.go"), "package calc\n")
	write(t, filepath.Join(w.Dir, "build.cache"), "ignored\n")

	p, err := w.Diff(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Files, []string{"calc.go", "calc_test.go"}) {
		t.Errorf("Diff files = %v; want calc.go, calc_test.go (not the ignored build.cache)", p.Files)
	}
	p2, _ := w.Diff(ctx)
	if p2.Hash != p.Hash || p.Hash == "" {
		t.Errorf("Diff twice gave hashes %s and %s; want the same", p.Hash, p2.Hash)
	}
	// The main working copy is untouched until the commit.
	if b, _ := os.ReadFile(filepath.Join(repo, "calc.go")); strings.Contains(string(b), "a + b") {
		t.Fatal("the run's edit reached the user's working copy before any commit")
	}

	res, err := w.Commit(ctx, approve(w, p), "calc: fix Add", agent)
	if err != nil {
		t.Fatal(err)
	}
	if res.Resumed || res.Target != "main" {
		t.Errorf("Commit = %+v", res)
	}
	if head := gitT(t, repo, "rev-parse", "main"); head != res.Commit {
		t.Fatalf("main = %s; want the run's commit %s", head, res.Commit)
	}
	if parent := gitT(t, repo, "rev-parse", res.Commit+"^"); parent != base {
		t.Errorf("commit's parent = %s; want the base %s", parent, base)
	}
	if who := gitT(t, repo, "log", "-1", "--format=%an <%ae> / %cn <%ce>", res.Commit); who != "Choir Agent <agent@choir.test> / Choir Agent <agent@choir.test>" {
		t.Errorf("commit identity = %q", who)
	}
	msg := gitT(t, repo, "log", "-1", "--format=%B", res.Commit)
	for _, want := range []string{"calc: fix Add", "Choir-Run: r-000000000001", "Choir-Patch: " + p.Hash, "Choir-Receipt: " + strings.Repeat("ab", 32)} {
		if !strings.Contains(msg, want) {
			t.Errorf("commit message %q lacks %q", msg, want)
		}
	}
	// The user's working copy, which had main checked out and clean, moved with it.
	if b, _ := os.ReadFile(filepath.Join(repo, "calc.go")); !strings.Contains(string(b), "a + b") {
		t.Error("the working copy with main checked out was not fast-forwarded")
	}
	if st := gitT(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("working copy not clean after the commit: %q", st)
	}
	if kept, err := w.Discard(ctx); err != nil || kept != "" {
		t.Fatalf("Discard after commit = %q, %v; want the branch deleted", kept, err)
	}
	if out := gitT(t, repo, "branch", "--list", "choir/*"); out != "" {
		t.Errorf("run branch left after commit and discard: %q", out)
	}
}

func TestCommitRefusals(t *testing.T) {
	ctx := context.Background()
	repo, m := newRepo(t)
	base := gitT(t, repo, "rev-parse", "main")
	w, err := m.Create(ctx, repo, "r-000000000002", "main")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.Dir, "new.txt"), "one\n")
	p, _ := w.Diff(ctx)

	d := approve(w, p)
	d.Approved, d.Reason = false, "verifier go-test failed"
	if _, err := w.Commit(ctx, d, "x", agent); !errors.Is(err, ErrNotApproved) {
		t.Errorf("Commit(rejected) = %v; want ErrNotApproved", err)
	}
	d = approve(w, p)
	d.RunID = "r-00000000000f"
	if _, err := w.Commit(ctx, d, "x", agent); err == nil {
		t.Error("Commit with another run's decision succeeded")
	}
	if _, err := w.Commit(ctx, approve(w, p), "x", Identity{Name: "x>", Email: "a@b"}); err == nil {
		t.Error("Commit with an identity holding '>' succeeded")
	}
	// The agent edits after approval: the approved patch is no longer there.
	write(t, filepath.Join(w.Dir, "new.txt"), "two\n")
	if _, err := w.Commit(ctx, approve(w, p), "x", agent); !errors.Is(err, ErrPatchStale) {
		t.Errorf("Commit after an edit = %v; want ErrPatchStale", err)
	}
	// Nothing at all changed.
	os.Remove(filepath.Join(w.Dir, "new.txt"))
	empty, _ := w.Diff(ctx)
	if !empty.Empty() {
		t.Fatalf("Diff of an unchanged worktree = %q", empty.Bytes)
	}
	if _, err := w.Commit(ctx, approve(w, empty), "x", agent); !errors.Is(err, ErrNoChanges) {
		t.Errorf("Commit of nothing = %v; want ErrNoChanges", err)
	}
	if head := gitT(t, repo, "rev-parse", "main"); head != base {
		t.Errorf("a refused commit moved main to %s", head)
	}
	if n := commitsWithTrailer(t, repo, w.RunID); n != 0 {
		t.Errorf("%d commits of the run after refusals; want 0", n)
	}
}

// choird is killed -9 after the commit but before its receipt: on restart
// the director has only the Worktree it recorded at the run's start. Commit
// again must find the first commit and make no second one.
func TestCommitIsIdempotentAcrossAKill(t *testing.T) {
	ctx := context.Background()
	repo, m := newRepo(t)
	w, err := m.Create(ctx, repo, "r-000000000004", "")
	if err != nil {
		t.Fatal(err)
	}
	saved, _ := json.Marshal(w) // the RunStarted receipt
	write(t, filepath.Join(w.Dir, "calc.go"), "package calc\n\nfunc Add(a, b int) int { return a + b }\n")
	p, _ := w.Diff(ctx)
	d := approve(w, p)

	t.Run("killed after the commit reached main", func(t *testing.T) {
		first, err := w.Commit(ctx, d, "fix", agent)
		if err != nil {
			t.Fatal(err)
		}
		// Restart: a new Manager and the Worktree read back from the receipt.
		if _, err := New(m.Root()); err != nil {
			t.Fatal(err)
		}
		var again Worktree
		json.Unmarshal(saved, &again)
		f, err := FindCommit(ctx, repo, again.RunID, again.Base)
		if err != nil || f.Commit != first.Commit || f.Patch != p.Hash || !slices.Contains(f.Branches, "main") {
			t.Fatalf("FindCommit = %+v, %v; want %s on main with patch %s", f, err, first.Commit, p.Hash)
		}
		res, err := again.Commit(ctx, d, "fix", agent)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Resumed || res.Commit != first.Commit {
			t.Errorf("Commit after restart = %+v; want Resumed with %s", res, first.Commit)
		}
		if n := commitsWithTrailer(t, repo, w.RunID); n != 1 {
			t.Errorf("%d commits of the run; want exactly 1", n)
		}
	})
	t.Run("the user committed on top before the restart", func(t *testing.T) {
		write(t, filepath.Join(repo, "user.txt"), "mine\n")
		gitT(t, repo, "add", "user.txt")
		gitT(t, repo, "commit", "-q", "-m", "user's work on top")
		top := gitT(t, repo, "rev-parse", "main")
		var again Worktree
		json.Unmarshal(saved, &again)
		res, err := again.Commit(ctx, d, "fix", agent)
		if err != nil || !res.Resumed {
			t.Fatalf("Commit after the user committed on top = %+v, %v; want Resumed", res, err)
		}
		if gitT(t, repo, "rev-parse", "main") != top || commitsWithTrailer(t, repo, w.RunID) != 1 {
			t.Error("the repeated Commit changed main or made another commit")
		}
	})
}

// Killed after the commit was recorded on the run's branch but before the
// target was fast-forwarded.
func TestCommitResumesAfterAKillBeforeFastForward(t *testing.T) {
	ctx := context.Background()
	repo, m := newRepo(t)
	base := gitT(t, repo, "rev-parse", "main")
	w, _ := m.Create(ctx, repo, "r-000000000005", "")
	write(t, filepath.Join(w.Dir, "a.txt"), "a\n")
	p, _ := w.Diff(ctx)
	d := approve(w, p)
	commit, err := w.record(ctx, d, "half done", agent)
	if err != nil {
		t.Fatal(err)
	}
	if head := gitT(t, repo, "rev-parse", "main"); head != base {
		t.Fatal("record moved main")
	}
	f, err := FindCommit(ctx, repo, w.RunID, w.Base)
	if err != nil || f.Commit != commit || slices.Contains(f.Branches, "main") {
		t.Fatalf("FindCommit = %+v, %v; want %s on the run branch only", f, err, commit)
	}
	res, err := w.Commit(ctx, d, "half done", agent)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed || res.Commit != commit || gitT(t, repo, "rev-parse", "main") != commit {
		t.Errorf("Commit = %+v; want %s resumed and on main", res, commit)
	}
	if n := commitsWithTrailer(t, repo, w.RunID); n != 1 {
		t.Errorf("%d commits of the run; want 1", n)
	}
	// A decision for another patch does not adopt the commit.
	d.Patch = strings.Repeat("0", 64)
	if _, err := w.Commit(ctx, d, "x", agent); err == nil {
		t.Error("Commit with a decision for another patch adopted the existing commit")
	}
}

func TestMovedTargetIsAConflictAndLosesNothing(t *testing.T) {
	ctx := context.Background()
	repo, m := newRepo(t)
	w, _ := m.Create(ctx, repo, "r-000000000006", "")
	write(t, filepath.Join(w.Dir, "run.txt"), "from the run\n")
	p, _ := w.Diff(ctx)
	// The user commits to main meanwhile.
	write(t, filepath.Join(repo, "user.txt"), "from the user\n")
	gitT(t, repo, "add", "user.txt")
	gitT(t, repo, "commit", "-q", "-m", "user work")
	userHead := gitT(t, repo, "rev-parse", "main")

	_, err := w.Commit(ctx, approve(w, p), "run work", agent)
	var ce *ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, ErrConflict) {
		t.Fatalf("Commit on a moved main = %v; want a *ConflictError", err)
	}
	if ce.Head != userHead || ce.Branch != w.Branch || ce.Commit == "" {
		t.Errorf("ConflictError = %+v", ce)
	}
	if !strings.Contains(err.Error(), w.Branch) || !strings.Contains(err.Error(), "moved") {
		t.Errorf("error %q does not say the branch moved and where the commit is kept", err)
	}
	if head := gitT(t, repo, "rev-parse", "main"); head != userHead {
		t.Errorf("main = %s; want the user's %s untouched", head, userHead)
	}
	if tip := gitT(t, repo, "rev-parse", w.Branch); tip != ce.Commit {
		t.Errorf("run branch = %s; want the run's commit %s kept", tip, ce.Commit)
	}
	kept, err := w.Discard(ctx)
	if err != nil || kept != w.Branch {
		t.Fatalf("Discard after a conflict = %q, %v; want the branch %s kept", kept, err, w.Branch)
	}
	if got := gitT(t, repo, "show", w.Branch+":run.txt"); got != "from the run" {
		t.Errorf("the kept commit holds %q", got)
	}
}

func TestDirtyCheckoutIsAConflict(t *testing.T) {
	ctx := context.Background()
	repo, m := newRepo(t)
	w, _ := m.Create(ctx, repo, "r-000000000007", "")
	write(t, filepath.Join(w.Dir, "calc.go"), "package calc // run\n")
	p, _ := w.Diff(ctx)
	write(t, filepath.Join(repo, "calc.go"), "package calc // the user's unsaved work\n")
	_, err := w.Commit(ctx, approve(w, p), "run", agent)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "uncommitted changes") {
		t.Fatalf("Commit onto a dirty checkout = %v; want a conflict naming the uncommitted changes", err)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "calc.go")); string(b) != "package calc // the user's unsaved work\n" {
		t.Errorf("the user's uncommitted work was changed: %q", b)
	}
}

func TestTargetNotCheckedOutMovesByCompareAndSwap(t *testing.T) {
	ctx := context.Background()
	repo, m := newRepo(t)
	gitT(t, repo, "branch", "release")
	w, err := m.Create(ctx, repo, "r-000000000008", "release")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.Dir, "r.txt"), "r\n")
	p, _ := w.Diff(ctx)
	res, err := w.Commit(ctx, approve(w, p), "release fix", agent)
	if err != nil {
		t.Fatal(err)
	}
	if gitT(t, repo, "rev-parse", "release") != res.Commit {
		t.Error("release not fast-forwarded")
	}
	if gitT(t, repo, "rev-parse", "main") != w.Base {
		t.Error("main moved")
	}
}

// Runs of one repository at once: each gets its worktree; of those that
// commit from the same base exactly one reaches main, the others get a
// conflict with their commit kept on their branch.
func TestConcurrentRunsOfOneRepository(t *testing.T) {
	ctx := context.Background()
	repo, m := newRepo(t)
	base := gitT(t, repo, "rev-parse", "main")
	const n = 6
	var wg sync.WaitGroup
	results := make([]Result, n)
	errs := make([]error, n)
	runs := make([]*Worktree, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := m.Create(ctx, repo, fmt.Sprintf("r-%012x", 0xc00+i), "")
			if err != nil {
				errs[i] = err
				return
			}
			runs[i] = w
			if err := os.WriteFile(filepath.Join(w.Dir, fmt.Sprintf("run%d.txt", i)), []byte("x"), 0o644); err != nil {
				errs[i] = err
				return
			}
			p, err := w.Diff(ctx)
			if err != nil {
				errs[i] = err
				return
			}
			results[i], errs[i] = w.Commit(ctx, approve(w, p), "run", agent)
		}()
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		var ce *ConflictError
		switch {
		case err == nil:
			won++
			if gitT(t, repo, "rev-parse", results[i].Commit+"^") != base {
				t.Errorf("run %d's commit is not on the base", i)
			}
		case errors.As(err, &ce):
			if tip := gitT(t, repo, "rev-parse", ce.Branch); tip != ce.Commit {
				t.Errorf("run %d: conflict commit %s not kept on %s (%s)", i, ce.Commit, ce.Branch, tip)
			}
		default:
			t.Errorf("run %d: %v", i, err)
		}
	}
	if won != 1 {
		t.Errorf("%d runs reached main; want exactly 1", won)
	}
	if log := gitT(t, repo, "rev-list", "--count", "main"); log != "2" {
		t.Errorf("main has %s commits; want 2 (the initial one and one run's)", log)
	}
	if st := gitT(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("working copy not clean: %q", st)
	}
}
