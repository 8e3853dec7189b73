package worktree

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

var agent = Identity{Name: "Choir Agent", Email: "agent@choir.test"}

// gitT runs git in dir for the test, as a user would (their identity).
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	c := exec.Command("git", args...)
	c.Dir = dir
	c.Env = append(gitEnv(nil), "GIT_AUTHOR_NAME=User", "GIT_AUTHOR_EMAIL=user@example.com", "GIT_COMMITTER_NAME=User", "GIT_COMMITTER_EMAIL=user@example.com")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newRepo makes a working copy with one commit on main, and a Manager
// whose root is outside it.
func newRepo(t *testing.T) (repo string, m *Manager) {
	t.Helper()
	base := t.TempDir()
	repo = filepath.Join(base, "workspace")
	os.MkdirAll(repo, 0o755)
	gitT(t, repo, "init", "-q", "-b", "main")
	write(t, filepath.Join(repo, "calc.go"), "package calc\n\nfunc Add(a, b int) int { return a - b }\n")
	write(t, filepath.Join(repo, ".gitignore"), "*.cache\n")
	gitT(t, repo, "add", "-A")
	gitT(t, repo, "commit", "-q", "-m", "initial")
	m, err := New(filepath.Join(base, "home", "worktrees"))
	if err != nil {
		t.Fatal(err)
	}
	return repo, m
}

func approve(w *Worktree, p Patch) Decision {
	return Decision{RunID: w.RunID, Approved: true, By: "policy", Patch: p.Hash, Receipt: strings.Repeat("ab", 32)}
}

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

// A failed run leaves nothing: no files, no worktree record, no branch.
func TestDiscardLeavesNoTrace(t *testing.T) {
	ctx := context.Background()
	repo, m := newRepo(t)
	before := gitT(t, repo, "rev-parse", "main")
	w, err := m.Create(ctx, repo, "r-000000000003", "")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.Dir, "broken.go"), "package calc\nthis does not compile\n")
	os.MkdirAll(filepath.Join(w.Dir, "ro"), 0o755)
	write(t, filepath.Join(w.Dir, "ro", "f"), "x")
	os.Chmod(filepath.Join(w.Dir, "ro"), 0o555)
	if _, err := w.Diff(ctx); err != nil {
		t.Fatal(err)
	}
	if kept, err := w.Discard(ctx); err != nil || kept != "" {
		t.Fatalf("Discard = %q, %v", kept, err)
	}
	if _, err := os.Stat(w.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("worktree directory still there: %v", err)
	}
	if list := gitT(t, repo, "worktree", "list", "--porcelain"); strings.Contains(list, w.RunID) {
		t.Errorf("git still lists the worktree:\n%s", list)
	}
	if out := gitT(t, repo, "branch", "--list", "choir/*"); out != "" {
		t.Errorf("run branch left: %q", out)
	}
	if head := gitT(t, repo, "rev-parse", "main"); head != before {
		t.Error("main moved")
	}
	if st := gitT(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("user's working copy changed: %q", st)
	}
	// Idempotent.
	if kept, err := w.Discard(ctx); err != nil || kept != "" {
		t.Fatalf("second Discard = %q, %v", kept, err)
	}
	// The run id can be used again after a discard.
	if _, err := m.Create(ctx, repo, "r-000000000003", ""); err != nil {
		t.Fatalf("Create after Discard: %v", err)
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

func TestCreateRefusals(t *testing.T) {
	ctx := context.Background()
	repo, m := newRepo(t)
	for _, id := range []string{"", "../r-000000000001", "r-00000000000G", "r-0000000000001", "r-00000000001", "R-000000000001", "r-000000000001/x", "-b"} {
		if _, err := m.Create(ctx, repo, id, ""); !errors.Is(err, ErrBadRunID) {
			t.Errorf("Create(%q) = %v; want ErrBadRunID", id, err)
		}
	}
	if _, err := m.Create(ctx, repo, "r-000000000009", "no-such-branch"); err == nil || !strings.Contains(err.Error(), "no-such-branch") {
		t.Errorf("Create on a missing branch = %v", err)
	}
	if _, err := m.Create(ctx, repo, "r-000000000009", "--upload-pack=x"); err == nil {
		t.Error("Create with an option as the target branch succeeded")
	}
	if _, err := m.Create(ctx, t.TempDir(), "r-000000000009", ""); err == nil || !strings.Contains(err.Error(), "not a git repository") {
		t.Errorf("Create in a non-repository = %v", err)
	}
	if _, err := m.Create(ctx, repo, "r-000000000009", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, repo, "r-000000000009", ""); !errors.Is(err, ErrExists) {
		t.Errorf("second Create of the same run = %v; want ErrExists", err)
	}
	inside, err := New(filepath.Join(repo, ".choir-worktrees"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inside.Create(ctx, repo, "r-00000000000a", ""); err == nil || !strings.Contains(err.Error(), "inside the working copy") {
		t.Errorf("Create with the root inside the working copy = %v", err)
	}
	gitT(t, repo, "checkout", "-q", "--detach")
	if _, err := m.Create(ctx, repo, "r-00000000000b", ""); err == nil || !strings.Contains(err.Error(), "detached") {
		t.Errorf("Create on a detached HEAD without a target = %v", err)
	}
}

// The agent controls every file of the worktree, .git included. Nothing it
// writes may make choird's git run a program: a rewritten .git pointing at
// a git directory with hooks and an fsmonitor of its own, a nested
// repository with the same, a symlink to a host file.
func TestAgentWrittenFilesCannotRunPrograms(t *testing.T) {
	ctx := context.Background()
	repo, m := newRepo(t)
	w, _ := m.Create(ctx, repo, "r-00000000000c", "")
	marker := filepath.Join(t.TempDir(), "pwned")
	evil := "#!/bin/sh\ntouch " + marker + "\n"

	// A fake git directory inside the worktree, and .git pointing at it.
	fake := filepath.Join(w.Dir, "fake")
	gitT(t, w.Dir, "init", "-q", "--bare", fake)
	write(t, filepath.Join(fake, "hooks", "pre-commit"), evil)
	os.Chmod(filepath.Join(fake, "hooks", "pre-commit"), 0o755)
	write(t, filepath.Join(w.Dir, "evil.sh"), evil)
	os.Chmod(filepath.Join(w.Dir, "evil.sh"), 0o755)
	gitT(t, fake, "config", "core.fsmonitor", filepath.Join(w.Dir, "evil.sh"))
	write(t, filepath.Join(w.Dir, ".git"), "gitdir: "+fake+"\n")
	// A nested repository whose config would run the same.
	nested := filepath.Join(w.Dir, "sub")
	gitT(t, w.Dir, "init", "-q", nested)
	write(t, filepath.Join(nested, "f"), "x")
	gitT(t, nested, "add", "f")
	gitT(t, nested, "commit", "-q", "-m", "n")
	gitT(t, nested, "config", "core.fsmonitor", filepath.Join(w.Dir, "evil.sh"))
	gitT(t, nested, "config", "core.hooksPath", filepath.Join(fake, "hooks"))
	// A symlink to a host file.
	os.Symlink("/etc/passwd", filepath.Join(w.Dir, "passwd"))

	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the test's own setup ran the program")
	}
	p, err := w.Diff(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(p.Bytes), "root:") {
		t.Error("the patch holds the content of /etc/passwd through a symlink")
	}
	if _, err := w.Commit(ctx, approve(w, p), "evil", agent); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a program written by the agent ran during Diff or Commit")
	}
	if head := gitT(t, repo, "rev-parse", "main"); head == w.Base {
		t.Error("the commit went to the fake git directory, not the repository")
	}
	if _, err := w.Discard(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a program written by the agent ran during Discard")
	}
}

func TestSweepRemovesRunsThatAreGone(t *testing.T) {
	ctx := context.Background()
	repo, m := newRepo(t)
	live, _ := m.Create(ctx, repo, "r-0000000000a1", "")
	dead, _ := m.Create(ctx, repo, "r-0000000000a2", "")
	conflicted, _ := m.Create(ctx, repo, "r-0000000000a3", "")
	write(t, filepath.Join(dead.Dir, "x"), "x")
	write(t, filepath.Join(conflicted.Dir, "c"), "c")
	p, _ := conflicted.Diff(ctx)
	if _, err := conflicted.record(ctx, approve(conflicted, p), "kept", agent); err != nil {
		t.Fatal(err)
	}
	rep, err := m.Sweep(ctx, []string{repo}, func(id string) bool { return id == live.RunID })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Removed, []string{dead.RunID, conflicted.RunID}) || !slices.Equal(rep.Kept, []string{conflicted.Branch}) {
		t.Errorf("Sweep = %+v; want %s and %s removed, %s kept", rep, dead.RunID, conflicted.RunID, conflicted.Branch)
	}
	if _, err := os.Stat(live.Dir); err != nil {
		t.Errorf("the live run's worktree was removed: %v", err)
	}
	for _, d := range []string{dead.Dir, conflicted.Dir} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there", d)
		}
	}
	list := gitT(t, repo, "worktree", "list")
	if !strings.Contains(list, live.RunID) || strings.Contains(list, dead.RunID) {
		t.Errorf("worktree list after Sweep:\n%s", list)
	}
	branches := gitT(t, repo, "branch", "--list", "choir/*")
	if strings.Contains(branches, dead.RunID) || !strings.Contains(branches, conflicted.RunID) || !strings.Contains(branches, live.RunID) {
		t.Errorf("branches after Sweep:\n%s", branches)
	}
}

// BenchmarkRunWorktree is a run's git cost outside the model: a worktree
// created, one file changed, diffed, committed and fast-forwarded, and
// the worktree discarded.
func BenchmarkRunWorktree(b *testing.B) {
	ctx := context.Background()
	base := b.TempDir()
	repo := filepath.Join(base, "ws")
	os.MkdirAll(repo, 0o755)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "init"}} {
		c := exec.Command("git", args...)
		c.Dir = repo
		c.Env = append(gitEnv(nil), "GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@x", "GIT_COMMITTER_NAME=u", "GIT_COMMITTER_EMAIL=u@x")
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	m, err := New(filepath.Join(base, "worktrees"))
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		w, err := m.Create(ctx, repo, fmt.Sprintf("r-%012x", i), "")
		if err != nil {
			b.Fatal(err)
		}
		os.WriteFile(filepath.Join(w.Dir, "f.txt"), []byte(strconv.Itoa(i)), 0o644)
		p, err := w.Diff(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := w.Commit(ctx, approve(w, p), "bench", agent); err != nil {
			b.Fatal(err)
		}
		if _, err := w.Discard(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func TestChownGivesTheWorktreeToTheWorkspaceOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root can give files away")
	}
	ctx := context.Background()
	repo, m := newRepo(t)
	w, err := m.Create(ctx, repo, "r-0000000000c1", "")
	if err != nil {
		t.Fatal(err)
	}
	os.Symlink("/etc/passwd", filepath.Join(w.Dir, "link"))
	if err := w.Chown(65534, 65534); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{".", "calc.go", "link"} {
		fi, err := os.Lstat(filepath.Join(w.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != 65534 {
			t.Errorf("%s owned by %d; want 65534", name, uid)
		}
	}
	if fi, _ := os.Stat("/etc/passwd"); fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Fatal("Chown followed a symlink to /etc/passwd")
	}
	// choird's git still works on a worktree it no longer owns.
	write(t, filepath.Join(w.Dir, "x"), "x")
	if _, err := w.Diff(ctx); err != nil {
		t.Fatalf("Diff of a chowned worktree: %v", err)
	}
}

// An agent of an interactive session can write the workspace's own
// .git/config. The drivers it could define there (filters run by checkout
// and add, diff and merge drivers) and a core.worktree pointing elsewhere
// must not make choird's git run a program or write outside the working
// copy.
func TestWorkspaceConfigCannotRunPrograms(t *testing.T) {
	ctx := context.Background()
	repo, m := newRepo(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "pwned")
	evil := filepath.Join(dir, "evil.sh")
	os.WriteFile(evil, []byte("#!/bin/sh\ntouch "+marker+"\ncat\n"), 0o755)
	write(t, filepath.Join(repo, ".gitattributes"), "* filter=evil diff=evil merge=evil\n")
	gitT(t, repo, "add", ".gitattributes")
	gitT(t, repo, "commit", "-q", "-m", "attributes")
	elsewhere := filepath.Join(dir, "elsewhere")
	os.MkdirAll(elsewhere, 0o755)
	for _, kv := range [][2]string{
		{"filter.evil.clean", evil}, {"filter.evil.smudge", evil}, {"filter.evil.process", evil}, {"filter.evil.required", "true"},
		{"diff.evil.command", evil}, {"diff.evil.textconv", evil}, {"merge.evil.driver", evil},
		{"core.worktree", elsewhere},
	} {
		gitT(t, repo, "config", kv[0], kv[1])
	}
	w, err := m.Create(ctx, repo, "r-0000000000d1", "main")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.Dir, "calc.go"), "package calc // fixed\n")
	p, err := w.Diff(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := w.Commit(ctx, approve(w, p), "fix", agent)
	var ce *ConflictError
	if err != nil && !errors.As(err, &ce) {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a driver from the workspace's config ran")
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) > 0 {
		t.Fatalf("core.worktree made choird write %d files outside the working copy", len(entries))
	}
	_ = res

	// A driver name that cannot be overridden on the command line is refused.
	gitT(t, repo, "config", "filter.a=b.clean", evil)
	w2, err := m.Create(ctx, repo, "r-0000000000d2", "main")
	if err == nil {
		_, err = w2.Diff(ctx)
	}
	if err == nil || !strings.Contains(err.Error(), "cannot neutralise") {
		t.Errorf("a run in a repository with filter \"a=b\" = %v; want a refusal", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a driver from the workspace's config ran")
	}
}

// The workspace belongs to its user, not to choird's user.
func TestWorkspaceOwnedByAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root can give files away")
	}
	ctx := context.Background()
	repo, m := newRepo(t)
	filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error { return os.Lchown(p, 65534, 65534) })
	w, err := m.Create(ctx, repo, "r-0000000000e1", "")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.Dir, "calc.go"), "package calc // fixed\n")
	p, err := w.Diff(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx, approve(w, p), "fix", agent); err != nil {
		t.Fatal(err)
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

func TestOpenFindsTheWorktreeAfterARestart(t *testing.T) {
	ctx := context.Background()
	repo, m := newRepo(t)
	w, err := m.Create(ctx, repo, "r-0000000000f7", "")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.Dir, ".git"), "gitdir: /somewhere/else\n") // the agent's doing
	m2, _ := New(m.Root())
	got, err := m2.Open(ctx, repo, w.RunID, w.Target, w.Base)
	if err != nil {
		t.Fatal(err)
	}
	if *got != *w {
		t.Errorf("Open = %+v; want %+v", got, w)
	}
	if _, err := w.Discard(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := m2.Open(ctx, repo, w.RunID, w.Target, w.Base); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open after Discard = %v; want os.ErrNotExist", err)
	}
}
