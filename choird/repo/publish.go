package repo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"choir/internal/config"
)

// Author is who a commit choird makes for an agent is by: the agent's git
// identity (§20).
type Author struct{ Name, Email string }

// ErrConflict is a merge that does not apply cleanly: nothing was pushed.
var ErrConflict = errors.New("the branch does not merge cleanly")

// Publish commits files (a repo path → its content; nil removes the file)
// on top of r's configured branch, as author, and pushes the commit to
// branch, or to the configured branch when branch is "". The work happens
// in a temporary clone, so a failure leaves the remote and choird's build
// clones as they were. It returns the new commit.
func Publish(ctx context.Context, r config.Repo, branch string, files map[string][]byte, author Author, message string) (string, error) {
	work, base, cleanup, err := workClone(ctx, r)
	if err != nil {
		return "", err
	}
	defer cleanup()
	if branch == "" {
		branch = base
	}
	if err := checkBranch(branch); err != nil {
		return "", err
	}
	for name, body := range files {
		p, err := repoPath(name)
		if err != nil {
			return "", err
		}
		full := filepath.Join(work, filepath.FromSlash(p))
		if body == nil {
			if err := os.Remove(full); err != nil && !errors.Is(err, os.ErrNotExist) {
				return "", err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(full, body, 0o644); err != nil {
			return "", err
		}
	}
	if _, err := git(ctx, work, "add", "--all", "--", "."); err != nil {
		return "", err
	}
	if out, _ := git(ctx, work, "status", "--porcelain"); strings.TrimSpace(out) == "" {
		return "", errors.New("the change is already in the repo: nothing to commit")
	}
	commit, err := commitAs(ctx, work, author, message, "commit", "--quiet", "--no-verify")
	if err != nil {
		return "", err
	}
	if _, err := git(ctx, work, "push", "--quiet", "origin", "HEAD:refs/heads/"+branch); err != nil {
		return "", fmt.Errorf("push to %s of %s: %w", branch, Redact(r.URL), err)
	}
	return commit, nil
}

// Merge merges branch into r's configured branch as author and pushes the
// result. A conflict pushes nothing and returns ErrConflict naming the
// files.
func Merge(ctx context.Context, r config.Repo, branch string, author Author, message string) (string, error) {
	if err := checkBranch(branch); err != nil {
		return "", err
	}
	work, base, cleanup, err := workClone(ctx, r)
	if err != nil {
		return "", err
	}
	defer cleanup()
	if _, err := git(ctx, work, "rev-parse", "--verify", "--quiet", "refs/remotes/origin/"+branch); err != nil {
		return "", fmt.Errorf("branch %s is not in %s: push it first", branch, Redact(r.URL))
	}
	commit, err := commitAs(ctx, work, author, message, "merge", "--quiet", "--no-ff", "--no-edit", "-m", message, "refs/remotes/origin/"+branch)
	if err != nil {
		conflicted, _ := git(ctx, work, "diff", "--name-only", "--diff-filter=U")
		if files := strings.Fields(conflicted); len(files) > 0 {
			return "", fmt.Errorf("%w into %s: %s conflict", ErrConflict, base, strings.Join(files, ", "))
		}
		return "", err
	}
	if _, err := git(ctx, work, "push", "--quiet", "origin", "HEAD:refs/heads/"+base); err != nil {
		return "", fmt.Errorf("push to %s of %s: %w", base, Redact(r.URL), err)
	}
	return commit, nil
}

// workClone clones r into a temporary directory with its configured
// branch checked out, and returns the branch's name.
func workClone(ctx context.Context, r config.Repo) (dir, branch string, cleanup func(), err error) {
	remote, err := remoteURL(r.URL)
	if err != nil {
		return "", "", nil, err
	}
	if err := checkRef(r.Ref); err != nil {
		return "", "", nil, err
	}
	tmp, err := os.MkdirTemp("", "choir-publish-")
	if err != nil {
		return "", "", nil, err
	}
	cleanup = func() { os.RemoveAll(tmp) }
	work := filepath.Join(tmp, "w")
	if _, err := git(ctx, "", "clone", "--quiet", "--", remote, work); err != nil {
		cleanup()
		return "", "", nil, err
	}
	branch = r.Ref
	if branch == "" {
		head, err := git(ctx, work, "symbolic-ref", "--short", "refs/remotes/origin/HEAD")
		if err != nil {
			cleanup()
			return "", "", nil, fmt.Errorf("%s has no default branch: set the repo's ref in config.json", Redact(r.URL))
		}
		branch = strings.TrimPrefix(strings.TrimSpace(head), "origin/")
	}
	if _, err := git(ctx, work, "rev-parse", "--verify", "--quiet", "refs/remotes/origin/"+branch); err != nil {
		cleanup()
		return "", "", nil, fmt.Errorf("%s is not a branch of %s (choird commits only onto a branch)", branch, Redact(r.URL))
	}
	if _, err := git(ctx, work, "checkout", "--quiet", "-B", branch, "refs/remotes/origin/"+branch); err != nil {
		cleanup()
		return "", "", nil, err
	}
	return work, branch, cleanup, nil
}

// commitAs runs a committing git command as author and returns HEAD.
func commitAs(ctx context.Context, dir string, a Author, message string, args ...string) (string, error) {
	if a.Name == "" || a.Email == "" {
		return "", errors.New("no author: the agent's git identity needs a name and an email")
	}
	full := append([]string{"-c", "user.name=" + a.Name, "-c", "user.email=" + a.Email, "-c", "commit.gpgSign=false"}, args...)
	if args[0] == "commit" {
		full = append(full, "-m", message)
	}
	if _, err := git(ctx, dir, full...); err != nil {
		return "", err
	}
	out, err := git(ctx, dir, "rev-parse", "HEAD")
	return strings.TrimSpace(out), err
}

// checkBranch refuses a branch name git would take as an option or refuse.
func checkBranch(b string) error {
	if b == "" || strings.HasPrefix(b, "-") || strings.ContainsAny(b, " \t\n\x00~^:?*[\\") || strings.Contains(b, "..") || strings.HasSuffix(b, "/") || strings.HasSuffix(b, ".lock") {
		return fmt.Errorf("%q is not a branch name", b)
	}
	return nil
}

// repoPath cleans a path inside the repo, refusing one that leaves it or
// touches .git.
func repoPath(p string) (string, error) {
	c := path.Clean(p)
	if p == "" || path.IsAbs(c) || c == "." || c == ".." || strings.HasPrefix(c, "../") || c == ".git" || strings.HasPrefix(c, ".git/") {
		return "", fmt.Errorf("%q is not a path inside the repo", p)
	}
	return c, nil
}
