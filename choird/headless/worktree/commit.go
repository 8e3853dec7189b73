package worktree

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Trailers stamped on every run's commit.
const (
	TrailerRun     = "Choir-Run"
	TrailerPatch   = "Choir-Patch"
	TrailerReceipt = "Choir-Receipt"
)

// Decision is the director's answer to a run's commit request: by policy,
// or by a human through the approval flow for a high risk tier. Commit
// carries out only an approving Decision for the patch it names.
type Decision struct {
	RunID    string `json:"run_id"`
	Approved bool   `json:"approved"`
	By       string `json:"by"`      // "policy" or who approved
	Patch    string `json:"patch"`   // the Patch.Hash that was approved
	Receipt  string `json:"receipt"` // object hash of the CommitDecision receipt: the commit's Choir-Receipt trailer
	Reason   string `json:"reason,omitempty"`
}

// Identity is who a run's commit is authored and committed by (the agent's
// git identity).
type Identity struct {
	Name  string `json:"name"`
	Email string `json:"email"`
}

func (id Identity) check() error {
	if strings.TrimSpace(id.Name) == "" || strings.TrimSpace(id.Email) == "" {
		return errors.New("the commit identity needs a name and an email")
	}
	if strings.ContainsAny(id.Name+id.Email, "<>\n\r\x00") {
		return fmt.Errorf("the commit identity %q <%s> contains <, > or a control character", id.Name, id.Email)
	}
	return nil
}

// Result is a commit that reached the target branch.
type Result struct {
	Commit string `json:"commit"`
	Target string `json:"target"`
	// Resumed says the commit had been made by an earlier, interrupted
	// Commit (found by its Choir-Run trailer): no new commit was made.
	Resumed bool `json:"resumed"`
}

// ConflictError is a commit that could not fast-forward the target branch:
// someone moved it, or the working copy that has it checked out has local
// changes. The commit is kept on the run's branch. It wraps ErrConflict.
type ConflictError struct {
	RunID, Target, Base, Head, Commit, Branch string
	Reason                                    string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("run %s: cannot fast-forward %s to %s: %s; the commit is kept on branch %s: rebase or merge it by hand, or run the work item again",
		e.RunID, e.Target, short(e.Commit), e.Reason, e.Branch)
}

func (e *ConflictError) Unwrap() error { return ErrConflict }

func short(h string) string { return h[:min(12, len(h))] }

// Commit carries out an approving decision: it commits the worktree as the
// patch d approved (refusing if the worktree changed since: ErrPatchStale),
// authored and committed by who, with message msg followed by the
// Choir-Run, Choir-Patch and Choir-Receipt trailers, and fast-forwards the
// target branch to it if the target still points at the run's base. When
// the target branch is checked out in a working copy, that working copy
// must be clean and is fast-forwarded with it (git merge --ff-only).
//
// Commit is idempotent: if a commit of this run exists already (an earlier
// Commit was interrupted, choird was killed before writing the receipt), it
// is used instead of making another, and Result.Resumed is true; one
// already on the target (even below later commits) is left as it is.
func (w *Worktree) Commit(ctx context.Context, d Decision, msg string, who Identity) (Result, error) {
	if d.RunID != w.RunID {
		return Result{}, fmt.Errorf("commit run %s with the decision for run %s: refused", w.RunID, d.RunID)
	}
	if !d.Approved {
		return Result{}, fmt.Errorf("commit run %s: %w (decided by %s: %s)", w.RunID, ErrNotApproved, d.By, d.Reason)
	}
	if err := who.check(); err != nil {
		return Result{}, fmt.Errorf("commit run %s: %w", w.RunID, err)
	}
	if strings.ContainsAny(d.Patch+d.Receipt, "\n\r") {
		return Result{}, fmt.Errorf("commit run %s: the decision's patch or receipt hash holds a line break", w.RunID)
	}
	found, err := FindCommit(ctx, w.Repo, w.RunID, w.Base)
	if err != nil {
		return Result{}, err
	}
	commit, resumed := found.Commit, found.Commit != ""
	if resumed && found.Patch != d.Patch {
		return Result{}, fmt.Errorf("commit run %s: its commit %s carries patch %s, not the approved %s", w.RunID, short(commit), found.Patch, d.Patch)
	}
	if resumed && slices.Contains(found.Branches, w.Target) {
		// Already on the target (perhaps with the user's commits on top).
		return Result{Commit: commit, Target: w.Target, Resumed: true}, nil
	}
	if !resumed {
		if commit, err = w.record(ctx, d, msg, who); err != nil {
			return Result{}, err
		}
	}
	if err := w.fastForward(ctx, commit); err != nil {
		return Result{}, err
	}
	return Result{Commit: commit, Target: w.Target, Resumed: resumed}, nil
}

// record makes the run's commit of the approved patch and points the run's
// branch at it.
func (w *Worktree) record(ctx context.Context, d Decision, msg string, who Identity) (string, error) {
	p, err := w.Diff(ctx)
	if err != nil {
		return "", err
	}
	if p.Hash != d.Patch {
		return "", fmt.Errorf("commit run %s: %w (approved %s, now %s): verify and approve again", w.RunID, ErrPatchStale, d.Patch, p.Hash)
	}
	if p.Empty() {
		return "", fmt.Errorf("commit run %s: %w: the worktree is the same as %s", w.RunID, ErrNoChanges, short(w.Base))
	}
	body := strings.TrimSpace(msg)
	if body == "" {
		body = "choir run " + w.RunID
	}
	full := fmt.Sprintf("%s\n\n%s: %s\n%s: %s\n%s: %s\n", body, TrailerRun, w.RunID, TrailerPatch, d.Patch, TrailerReceipt, d.Receipt)
	c := bare(w.Repo)
	c.env = []string{"GIT_AUTHOR_NAME=" + who.Name, "GIT_AUTHOR_EMAIL=" + who.Email, "GIT_COMMITTER_NAME=" + who.Name, "GIT_COMMITTER_EMAIL=" + who.Email}
	out, err := c.run(ctx, "commit-tree", p.Tree, "-p", w.Base, "-m", full)
	if err != nil {
		return "", fmt.Errorf("commit run %s: %w", w.RunID, err)
	}
	commit := strings.TrimSpace(out)
	// The run's branch records the commit first: from here on FindCommit
	// finds it, whatever happens next.
	if _, err := bare(w.Repo).run(ctx, "update-ref", "-m", "choir run "+w.RunID, "refs/heads/"+w.Branch, commit, w.Base); err != nil {
		return "", fmt.Errorf("commit run %s: record %s on %s: %w", w.RunID, short(commit), w.Branch, err)
	}
	return commit, nil
}

// repos serialises, per repository within choird, what git cannot do
// twice at once there: fast-forwards (two merges into one working copy at
// once could leave its index holding the loser's files) and worktree adds
// (worktree.go).
var repos sync.Map // common git dir → *sync.Mutex

// lockRepo takes the repository's lock and returns its release.
func lockRepo(common string) (unlock func()) {
	mu, _ := repos.LoadOrStore(common, new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	return mu.(*sync.Mutex).Unlock
}

// fastForward moves the target branch from the base to commit.
func (w *Worktree) fastForward(ctx context.Context, commit string) error {
	defer lockRepo(w.Repo)()
	c := bare(w.Repo)
	ref := "refs/heads/" + w.Target
	conflict := func(head, reason string) error {
		return &ConflictError{RunID: w.RunID, Target: w.Target, Base: w.Base, Head: head, Commit: commit, Branch: w.Branch, Reason: reason}
	}
	head, err := c.run(ctx, "rev-parse", "--verify", "-q", ref)
	head = strings.TrimSpace(head)
	switch {
	case err != nil && exitCode(err) == 1:
		return conflict("", "the branch no longer exists")
	case err != nil:
		return fmt.Errorf("commit run %s: read %s: %w", w.RunID, w.Target, err)
	case head == commit:
		return nil
	case head != w.Base:
		return conflict(head, fmt.Sprintf("it moved from %s to %s since the run started", short(w.Base), short(head)))
	}
	checkout, err := checkedOut(ctx, w.Repo, ref)
	if err != nil {
		return fmt.Errorf("commit run %s: %w", w.RunID, err)
	}
	if checkout == "" {
		// Compare-and-swap: refused if the branch moved meanwhile.
		if _, err := c.run(ctx, "update-ref", "-m", "choir run "+w.RunID, ref, commit, w.Base); err != nil {
			now, _ := c.run(ctx, "rev-parse", "--verify", "-q", ref)
			return conflict(strings.TrimSpace(now), "it moved while committing")
		}
		return nil
	}
	// Only the working copy beside the git directory is fast-forwarded, and
	// git is told where it is rather than reading core.worktree from a
	// config an agent may have written.
	if !samePath(checkout, filepath.Dir(w.Repo)) {
		return conflict(head, fmt.Sprintf("it is checked out in %s, a working copy choird does not update", checkout))
	}
	wc := cmd{dir: checkout, gitDir: w.Repo, work: checkout}
	status, err := wc.run(ctx, "status", "--porcelain", "--untracked-files=no", "--ignore-submodules=dirty")
	if err != nil {
		return fmt.Errorf("commit run %s: check the working copy %s: %w", w.RunID, checkout, err)
	}
	if strings.TrimSpace(status) != "" {
		return conflict(head, fmt.Sprintf("it is checked out in %s, which has uncommitted changes", checkout))
	}
	if _, err := wc.run(ctx, "merge", "--ff-only", "--no-edit", "--no-stat", "-q", commit); err != nil {
		now, _ := c.run(ctx, "rev-parse", "--verify", "-q", ref)
		var ge *GitError
		reason := err.Error()
		if errors.As(err, &ge) && ge.Stderr != "" {
			reason = ge.Stderr
		}
		return conflict(strings.TrimSpace(now), "fast-forwarding the working copy "+checkout+" failed: "+reason)
	}
	return nil
}

// checkedOut returns the working copy that has ref checked out, or "".
func checkedOut(ctx context.Context, common, ref string) (string, error) {
	out, err := bare(common).run(ctx, "worktree", "list", "--porcelain")
	if err != nil {
		return "", fmt.Errorf("list worktrees: %w", err)
	}
	var path string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "worktree "); ok {
			path = p
		}
		if line == "branch "+ref && path != "" {
			return path, nil
		}
	}
	return "", nil
}

// Found is a run's commit found in the repository.
type Found struct {
	Commit   string   `json:"commit"`   // "" when the run has no commit
	Patch    string   `json:"patch"`    // its Choir-Patch trailer
	Receipt  string   `json:"receipt"`  // its Choir-Receipt trailer
	Branches []string `json:"branches"` // local branches holding it
}

// FindCommit looks for the commit of run runID among the commits of every
// local branch since base (the run's Base), by its Choir-Run trailer. It
// needs only the repository (its working copy or git directory), not the
// worktree, so it works after a restart and after Discard.
func FindCommit(ctx context.Context, repo, runID, base string) (Found, error) {
	if !ValidRunID(runID) {
		return Found{}, fmt.Errorf("find the commit of %q: %w", runID, ErrBadRunID)
	}
	if !isCommitID(base) {
		return Found{}, fmt.Errorf("find the commit of run %s: base %q is not a commit id", runID, base)
	}
	common, _, err := locate(ctx, repo)
	if err != nil {
		return Found{}, err
	}
	c := bare(common)
	c.max = 64 << 20
	out, err := c.run(ctx, "log", "--fixed-strings", "--grep="+TrailerRun+": "+runID, "--format=%H%x00%B%x1e", "--branches", "--not", base, "--")
	if err != nil {
		return Found{}, fmt.Errorf("find the commit of run %s: %w", runID, err)
	}
	for _, rec := range strings.Split(out, "\x1e") {
		h, body, ok := strings.Cut(strings.TrimLeft(rec, "\n"), "\x00")
		if !ok {
			continue
		}
		t := trailers(body)
		if t[TrailerRun] != runID {
			continue
		}
		f := Found{Commit: h, Patch: t[TrailerPatch], Receipt: t[TrailerReceipt]}
		refs, err := c.run(ctx, "for-each-ref", "--contains", h, "--format=%(refname:strip=2)", "refs/heads/")
		if err != nil {
			return Found{}, fmt.Errorf("find the branches holding %s: %w", short(h), err)
		}
		f.Branches = strings.Fields(refs)
		return f, nil
	}
	return Found{}, nil
}

// trailers reads the Key: value lines of a message's last paragraph.
func trailers(msg string) map[string]string {
	paras := strings.Split(strings.TrimSpace(msg), "\n\n")
	out := map[string]string{}
	for _, line := range strings.Split(paras[len(paras)-1], "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if ok && !strings.ContainsAny(k, " \t") {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// isCommitID reports whether s is a full commit id (SHA-1 or SHA-256).
func isCommitID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= s[i] && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// samePath reports whether a and b name the same directory.
func samePath(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}
