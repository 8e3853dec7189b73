// Package worktree gives each headless run its own throwaway git worktree
// of a workspace repository (seed 002 §7): created at the run's start on a
// branch of its own at the target branch's head, diffed into a patch whose
// hash the PatchReceipt carries, committed only with an approval, and
// discarded without trace when the run fails.
//
// A Manager owns one directory (choird's <home>/worktrees): a run's
// worktree is <root>/<run id>, outside the user's working copy; git keeps
// its administrative files in the repository's .git/worktrees/. The run's
// branch is choir/run/<run id>.
//
// Everything goes through the git binary, with the global and system
// config ignored, no hooks, no fsmonitor, no external diff or textconv,
// no signing, and every GIT_* variable of choird's environment dropped. The
// worktree's files were written by an agent, so choird never lets git
// discover the repository from them: every command in a worktree names the
// worktree's git directory (recorded when it was created) explicitly, and
// a .git file the agent rewrote is ignored.
//
// Commit takes the approval decision, refuses a patch other than the one
// approved, writes the commit with plumbing (commit-tree, no hook can run)
// and stamps it with trailers, Choir-Run, Choir-Patch and Choir-Receipt, so
// that FindCommit can find it again after a crash: a Commit repeated after
// choird was killed between the commit and its receipt finds the first
// commit and makes no second one. The target branch is fast-forwarded only
// if it still points at the run's base; otherwise Commit returns a
// *ConflictError and the commit stays on the run's branch.
package worktree

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Errors for errors.Is.
var (
	ErrExists      = errors.New("worktree already exists")
	ErrBadRunID    = errors.New("not a run id (want r- and 12 lowercase hex digits)")
	ErrNotApproved = errors.New("commit not approved")
	ErrPatchStale  = errors.New("the worktree no longer holds the approved patch")
	ErrNoChanges   = errors.New("nothing to commit")
	ErrConflict    = errors.New("target branch moved")
)

// BranchPrefix starts the name of every run's branch.
const BranchPrefix = "choir/run/"

var runIDPattern = regexp.MustCompile(`^r-[0-9a-f]{12}$`)

// ValidRunID reports whether id is a run id (r-<12 hex>).
func ValidRunID(id string) bool { return runIDPattern.MatchString(id) }

// Manager creates and removes the worktrees under one directory.
type Manager struct {
	root string
}

// New returns a Manager of the worktrees under root, creating it (mode
// 0700) when missing.
func New(root string) (*Manager, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("worktree root %s: %w", root, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("create the worktree root: %w", err)
	}
	// Resolve symbolic links once, so that paths compare with git's.
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, fmt.Errorf("worktree root %s: %w", root, err)
	}
	return &Manager{root: abs}, nil
}

// Root is the directory holding the worktrees.
func (m *Manager) Root() string { return m.root }

// Worktree is one run's worktree. It is plain data: the director keeps it
// (in the RunStarted receipt) and hands it back after a restart.
type Worktree struct {
	RunID  string `json:"run_id"`
	Repo   string `json:"repo"`    // the repository's git directory shared by all its worktrees (absolute)
	GitDir string `json:"git_dir"` // this worktree's administrative directory, <Repo>/worktrees/<name>
	Dir    string `json:"dir"`     // the worktree's files: <root>/<run id>
	Branch string `json:"branch"`  // choir/run/<run id>
	Target string `json:"target"`  // the branch a commit fast-forwards
	Base   string `json:"base"`    // the commit the run started from (the target's head then)
}

// in runs git inside the worktree, never trusting its .git file.
func (w *Worktree) in() cmd { return cmd{dir: w.Dir, gitDir: w.GitDir, work: w.Dir} }

// bare runs git against a git directory with no work tree.
func bare(gitDir string) cmd { return cmd{dir: gitDir, gitDir: gitDir} }

// Create makes the worktree of run runID for the repository whose working
// copy (or git directory) is repo: a new branch choir/run/<run id> at the
// head of target ("" means the branch the repository has checked out),
// checked out in <root>/<run id>.
func (m *Manager) Create(ctx context.Context, repo, runID, target string) (*Worktree, error) {
	if !ValidRunID(runID) {
		return nil, fmt.Errorf("create a worktree for %q: %w", runID, ErrBadRunID)
	}
	common, top, err := locate(ctx, repo)
	if err != nil {
		return nil, err
	}
	if top != "" && within(m.root, top) {
		return nil, fmt.Errorf("worktree root %s is inside the working copy %s: choose a directory outside it", m.root, top)
	}
	dir := filepath.Join(m.root, runID)
	if _, err := os.Lstat(dir); err == nil {
		return nil, fmt.Errorf("run %s: %s: %w (discard it first, or resume it)", runID, dir, ErrExists)
	}
	c := bare(common)
	if target == "" {
		out, err := c.run(ctx, "symbolic-ref", "-q", "--short", "HEAD")
		target = strings.TrimSpace(out)
		if err != nil || target == "" {
			return nil, fmt.Errorf("repository %s has a detached HEAD: name the target branch of run %s", repo, runID)
		}
	}
	if _, err := c.run(ctx, "check-ref-format", "--branch", target); err != nil || strings.HasPrefix(target, "-") {
		return nil, fmt.Errorf("target branch %q of run %s is not a valid branch name", target, runID)
	}
	out, err := c.run(ctx, "rev-parse", "--verify", "-q", "refs/heads/"+target+"^{commit}")
	if err != nil {
		return nil, fmt.Errorf("repository %s has no branch %q with a commit: commit something to it first, or name another target", repo, target)
	}
	base := strings.TrimSpace(out)
	branch := BranchPrefix + runID
	// git reads every worktree's record while it adds one, and a record
	// another add is still writing, or a discard removing, fails it
	// ("failed to read .../commondir"): adds and removals of records of
	// one repository go one at a time.
	unlock := lockRepo(common)
	_, err = c.run(ctx, "worktree", "add", "-b", branch, dir, base)
	unlock()
	if err != nil {
		return nil, fmt.Errorf("create the worktree of run %s: %w", runID, err)
	}
	// The .git file was written by git a moment ago and nobody else has
	// touched the directory yet: this is the one time it is read.
	gitDir, err := readGitFile(dir)
	if err != nil {
		return nil, fmt.Errorf("create the worktree of run %s: %w", runID, err)
	}
	return &Worktree{RunID: runID, Repo: common, GitDir: gitDir, Dir: dir, Branch: branch, Target: target, Base: base}, nil
}

// locate returns the repository's common git directory and its working
// copy's top ("" for a bare repository), both absolute.
func locate(ctx context.Context, repo string) (common, top string, err error) {
	abs, err := filepath.Abs(repo)
	if err != nil {
		return "", "", fmt.Errorf("repository %s: %w", repo, err)
	}
	c := cmd{dir: abs}
	out, err := c.run(ctx, "rev-parse", "--path-format=absolute", "--git-common-dir", "--is-bare-repository", "--is-inside-git-dir")
	if err != nil {
		return "", "", fmt.Errorf("%s is not a git repository: %w", repo, err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		return "", "", fmt.Errorf("repository %s: unexpected answer from git rev-parse: %q", repo, out)
	}
	common = lines[0]
	if lines[1] == "false" && lines[2] == "false" {
		out, err := c.run(ctx, "rev-parse", "--show-toplevel")
		if err != nil {
			return "", "", fmt.Errorf("repository %s: %w", repo, err)
		}
		top = strings.TrimSpace(out)
	}
	return common, top, nil
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

func readGitFile(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, ".git"))
	if err != nil {
		return "", err
	}
	s, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok || !filepath.IsAbs(s) {
		return "", fmt.Errorf("unexpected %s/.git: %q", dir, b)
	}
	return s, nil
}

// Chown gives the worktree's files to uid:gid (the workspace's owner), so
// that the agent's tools and the verifiers, which run as that user, can
// write and read them. Symbolic links are changed themselves, never
// followed. choird's own git commands do not depend on the owner.
func (w *Worktree) Chown(uid, gid int) error {
	err := filepath.WalkDir(w.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		return fmt.Errorf("give the worktree of run %s to %d:%d: %w", w.RunID, uid, gid, err)
	}
	return nil
}

// Patch is what a run changed: the worktree (tracked and untracked files,
// less what .gitignore ignores) against the run's base.
type Patch struct {
	Base  string   `json:"base"`
	Tree  string   `json:"tree"`  // the git tree of the worktree as it would be committed
	Hash  string   `json:"hash"`  // sha256 of Bytes: the PatchReceipt's diff hash
	Files []string `json:"files"` // paths changed, in git's order
	Bytes []byte   `json:"-"`     // `git diff --binary` against Base, with fixed options
}

// Empty reports whether the run changed nothing.
func (p Patch) Empty() bool { return len(p.Bytes) == 0 }

// MaxPatch caps a patch's size (64 MiB); Diff refuses a larger one.
const MaxPatch = 64 << 20

// Diff stages everything in the worktree (in the worktree's own index) and
// returns the patch against the run's base. The bytes come from `git diff
// --binary` with every option that could vary with configuration pinned
// (full index lines, no renames, no textconv or external diff, a/ b/
// prefixes), so the same tree always gives the same Hash; storing Bytes in
// the object store keys it by that same hash.
func (w *Worktree) Diff(ctx context.Context) (Patch, error) {
	c := w.in()
	if _, err := c.run(ctx, "add", "-A", "--", "."); err != nil {
		return Patch{}, fmt.Errorf("diff run %s: stage its changes: %w", w.RunID, err)
	}
	tree, err := c.run(ctx, "write-tree")
	if err != nil {
		return Patch{}, fmt.Errorf("diff run %s: %w", w.RunID, err)
	}
	c.max = MaxPatch
	b, err := c.bytes(ctx, "diff", "--cached", "--binary", "--full-index", "--no-renames", "--no-ext-diff",
		"--no-textconv", "--no-color", "--ignore-submodules=dirty", "--no-relative", "--src-prefix=a/", "--dst-prefix=b/", w.Base, "--")
	if errors.Is(err, errOutputTooLarge) {
		return Patch{}, fmt.Errorf("diff run %s: the patch is larger than %d MiB: the run changed too much to commit", w.RunID, MaxPatch>>20)
	}
	if err != nil {
		return Patch{}, fmt.Errorf("diff run %s: %w", w.RunID, err)
	}
	c.max = 0
	names, err := c.run(ctx, "diff", "--cached", "--name-only", "-z", "--no-renames", "--ignore-submodules=dirty", "--no-relative", w.Base, "--")
	if err != nil {
		return Patch{}, fmt.Errorf("diff run %s: %w", w.RunID, err)
	}
	var files []string
	for _, f := range strings.Split(names, "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	sum := sha256.Sum256(b)
	return Patch{Base: w.Base, Tree: strings.TrimSpace(tree), Hash: hex.EncodeToString(sum[:]), Files: files, Bytes: b}, nil
}

// Discard removes the worktree's files and git's record of it, and deletes
// the run's branch unless it holds a commit no other branch has (a commit
// left there by a conflict): that branch is kept and named in the result,
// so nothing committed is lost. It is idempotent: discarding a worktree
// already gone is not an error.
func (w *Worktree) Discard(ctx context.Context) (kept string, err error) {
	if err := removeAll(w.Dir); err != nil {
		return "", fmt.Errorf("discard run %s: remove %s: %w", w.RunID, w.Dir, err)
	}
	if err := removeAdmin(w.Repo, w.GitDir, w.Dir); err != nil {
		return "", fmt.Errorf("discard run %s: %w", w.RunID, err)
	}
	return dropBranch(ctx, w.Repo, w.Branch, w.Base)
}

// removeAdmin removes git's administrative directory of the worktree at
// dir, after checking that it is one of the repository's worktree records
// and that it belongs to dir.
func removeAdmin(common, gitDir, dir string) error {
	if gitDir == "" || filepath.Dir(gitDir) != filepath.Join(common, "worktrees") {
		return fmt.Errorf("worktree record %q is not under %s/worktrees: refusing to remove it", gitDir, common)
	}
	b, err := os.ReadFile(filepath.Join(gitDir, "gitdir"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // already gone
	}
	if err != nil {
		return err
	}
	if filepath.Clean(strings.TrimSpace(string(b))) != filepath.Join(dir, ".git") {
		return nil // the record was reused for another worktree: not ours
	}
	defer lockRepo(common)() // an add reading the records meanwhile would fail on a half-removed one
	return os.RemoveAll(gitDir)
}

// dropBranch deletes refs/heads/<branch> unless it holds a commit beyond
// base that no other branch holds, in which case it returns its name.
func dropBranch(ctx context.Context, common, branch, base string) (string, error) {
	c := bare(common)
	ref := "refs/heads/" + branch
	out, err := c.run(ctx, "rev-parse", "--verify", "-q", ref)
	if err != nil {
		if exitCode(err) == 1 {
			return "", nil // no such branch
		}
		return "", fmt.Errorf("read branch %s: %w", branch, err)
	}
	tip := strings.TrimSpace(out)
	if tip != base {
		others, err := c.run(ctx, "for-each-ref", "--contains", tip, "--format=%(refname)", "refs/heads/")
		if err != nil {
			return "", fmt.Errorf("read branches holding %s: %w", tip, err)
		}
		held := false
		for _, r := range strings.Fields(others) {
			if r != ref {
				held = true
			}
		}
		if !held {
			return branch, nil
		}
	}
	if _, err := c.run(ctx, "update-ref", "-d", ref, tip); err != nil {
		return "", fmt.Errorf("delete branch %s: %w", branch, err)
	}
	return "", nil
}

// removeAll removes dir, first making every directory below it writable
// (an agent may have left read-only ones). Symbolic links are removed, never
// followed.
func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// SweepReport is what Sweep did.
type SweepReport struct {
	Removed []string // run ids whose worktree or branch was removed
	Kept    []string // branches kept because they hold a commit found nowhere else
}

// Sweep removes, at choird's start, what runs that no longer exist left
// behind: their worktrees under the root, git's records of them in each of
// repos, and their branches (kept when they hold a commit no other branch
// has). live says whether a run id still belongs to a run to resume.
func (m *Manager) Sweep(ctx context.Context, repos []string, live func(runID string) bool) (SweepReport, error) {
	var rep SweepReport
	removed := map[string]bool{}
	entries, err := os.ReadDir(m.root)
	if err != nil {
		return rep, fmt.Errorf("sweep worktrees: %w", err)
	}
	for _, e := range entries {
		if !ValidRunID(e.Name()) || live(e.Name()) {
			continue
		}
		if err := removeAll(filepath.Join(m.root, e.Name())); err != nil {
			return rep, fmt.Errorf("sweep worktrees: remove %s: %w", e.Name(), err)
		}
		removed[e.Name()] = true
	}
	for _, repo := range repos {
		common, _, err := locate(ctx, repo)
		if err != nil {
			return rep, fmt.Errorf("sweep worktrees: %w", err)
		}
		admins, _ := os.ReadDir(filepath.Join(common, "worktrees"))
		for _, a := range admins {
			gitDir := filepath.Join(common, "worktrees", a.Name())
			b, err := os.ReadFile(filepath.Join(gitDir, "gitdir"))
			if err != nil {
				continue
			}
			dir := filepath.Dir(filepath.Clean(strings.TrimSpace(string(b))))
			id := filepath.Base(dir)
			if filepath.Dir(dir) != m.root || !ValidRunID(id) || live(id) {
				continue
			}
			unlock := lockRepo(common)
			err = os.RemoveAll(gitDir)
			unlock()
			if err != nil {
				return rep, fmt.Errorf("sweep worktrees: remove %s: %w", gitDir, err)
			}
			removed[id] = true
		}
		out, err := bare(common).run(ctx, "for-each-ref", "--format=%(refname:strip=2)", "refs/heads/"+BranchPrefix)
		if err != nil {
			return rep, fmt.Errorf("sweep worktrees: list run branches of %s: %w", repo, err)
		}
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			branch := sc.Text()
			id := strings.TrimPrefix(branch, BranchPrefix)
			if !ValidRunID(id) || live(id) {
				continue
			}
			// The base is unknown here: a branch holding any commit no
			// other branch has is kept.
			kept, err := dropBranch(ctx, common, branch, "")
			if err != nil {
				return rep, fmt.Errorf("sweep worktrees: %w", err)
			}
			if kept != "" {
				rep.Kept = append(rep.Kept, kept)
			} else {
				removed[id] = true
			}
		}
	}
	for id := range removed {
		rep.Removed = append(rep.Removed, id)
	}
	slices.Sort(rep.Removed)
	return rep, nil
}
