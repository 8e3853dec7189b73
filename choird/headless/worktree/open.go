package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Open returns the worktree that Create made for run runID of repo, to
// resume the run after a restart: target and base are what Create
// returned then (the run's receipts keep them). Nothing is read from the
// worktree's own files (the agent could have changed its .git): the
// administrative directory is git's <common>/worktrees/<run id>, and it
// must name this worktree. An error wrapping os.ErrNotExist means the
// worktree is gone.
func (m *Manager) Open(ctx context.Context, repo, runID, target, base string) (*Worktree, error) {
	if !ValidRunID(runID) {
		return nil, fmt.Errorf("open the worktree of %q: %w", runID, ErrBadRunID)
	}
	if !isCommitID(base) {
		return nil, fmt.Errorf("open the worktree of run %s: base %q is not a commit id", runID, base)
	}
	common, _, err := locate(ctx, repo)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(m.root, runID)
	if fi, err := os.Lstat(dir); err != nil {
		return nil, fmt.Errorf("open the worktree of run %s: %w", runID, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("open the worktree of run %s: %s is not a directory", runID, dir)
	}
	gitDir := filepath.Join(common, "worktrees", runID)
	b, err := os.ReadFile(filepath.Join(gitDir, "gitdir"))
	if err != nil {
		return nil, fmt.Errorf("open the worktree of run %s: git's record of it: %w", runID, err)
	}
	// Compared up to the directory: .git itself is the agent's to change.
	if got := strings.TrimSpace(string(b)); filepath.Base(got) != ".git" || !samePath(filepath.Dir(got), dir) {
		return nil, fmt.Errorf("open the worktree of run %s: git's record %s names %s, not %s", runID, gitDir, got, dir)
	}
	return &Worktree{RunID: runID, Repo: common, GitDir: gitDir, Dir: dir, Branch: BranchPrefix + runID, Target: target, Base: base}, nil
}
