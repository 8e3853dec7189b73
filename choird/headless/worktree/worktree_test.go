package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
