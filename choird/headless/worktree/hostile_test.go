package worktree

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

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
