package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"choir/choird/headless"
	"choir/choird/headless/worktree"
)

// Recover settles, at choird's start, every run a killed choird left
// half done, from its receipts alone:
//
//   - queued: left for the loop;
//   - running without a patch (the agent was working; its container is
//     gone with the other orphans): discarded, its worktree removed;
//   - running or verifying with a recorded patch still in its worktree:
//     its verification is resumed (verifiers already attested on that
//     patch are not run again), then the commit as usual;
//   - awaiting approval: an approved decision is carried out (a commit
//     made before the crash is found by its Choir-Run trailer and only
//     recorded, never made twice); an undecided one is decided again.
//
// A run whose worktree is gone or changed since its PatchReceipt is
// discarded. Recover then removes worktrees and branches of runs that
// ended (worktree.Sweep). It returns the first error that kept it from
// recording a run's state; the other runs are still settled.
func (r *Runner) Recover(ctx context.Context) error {
	runs, err := r.Director.RunsIn(ctx, headless.RunRunning, headless.RunVerifying, headless.RunAwaitingApproval)
	if err != nil {
		return fmt.Errorf("recover headless runs: %w", err)
	}
	var first error
	repos := map[string]bool{}
	for _, hr := range runs {
		if r.Active(hr.ID) {
			continue
		}
		if err := r.resume(ctx, hr.ID, repos, true); err != nil {
			r.log().Warn("headless run not recovered", "run", hr.ID, "error", err)
			first = cmpErr(first, err)
		}
	}
	list := make([]string, 0, len(repos))
	for repo := range repos {
		list = append(list, repo)
	}
	if len(list) > 0 {
		// The runs still live after the settling above, in one query: a
		// worktree of any other run goes.
		still, err := r.Director.RunsIn(ctx, headless.RunQueued, headless.RunRunning, headless.RunVerifying, headless.RunAwaitingApproval)
		if err != nil {
			r.log().Warn("run worktrees not swept", "error", err)
			return cmpErr(first, fmt.Errorf("recover headless runs: %w", err))
		}
		keep := make(map[string]bool, len(still))
		for _, hr := range still {
			keep[hr.ID] = true
		}
		live := func(id string) bool { return keep[id] || r.Active(id) }
		if rep, err := r.Worktrees.Sweep(ctx, list, live); err != nil {
			r.log().Warn("run worktrees not swept", "error", err)
		} else if len(rep.Removed) > 0 || len(rep.Kept) > 0 {
			r.log().Info("run worktrees swept", "removed", len(rep.Removed), "kept", rep.Kept)
		}
	}
	return first
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// resume settles one run left half done: by a choird that died under it
// (crashed, from Recover), or waiting on a human's decision (from the
// loop). A crashed run's end moves the work item's next run to CONTRITE
// (mood.Facts.CrashRecovery, beforeEnd).
func (r *Runner) resume(ctx context.Context, runID string, repos map[string]bool, crashed bool) error {
	if !r.claim(runID) {
		return nil
	}
	defer r.release(runID)
	x, err := r.load(ctx, runID)
	gone := errors.Is(err, ErrNoAgent) && x != nil
	if err != nil && !gone {
		return err
	}
	x.crashed = crashed
	rs, err := r.Director.Receipts(ctx, runID, 0)
	if err != nil {
		return err
	}
	fp, patch, answer := where(rs)
	if gone {
		// Its agent was removed from the config while the run was live:
		// it can neither go on nor be retried.
		if fp != nil {
			repos[fp.Repo] = true
			x.wt = r.reopen(ctx, x, fp.Repo, fp.Target, fp.Base)
		}
		return r.fail(ctx, x, headless.RunDiscarded, "its agent was removed from config.json; nothing was committed")
	}
	r.log().Info("resuming a headless run left by a restart", "run", runID, "status", x.Status, "patch", short(patch))
	if fp == nil {
		// Started but not yet given to the agent: nothing to keep.
		x.wt = r.reopen(ctx, x, x.agent.Repo, x.agent.Target, x.Base)
		return r.fail(ctx, x, headless.RunDiscarded, "choird restarted before the agent began; nothing was committed")
	}
	repos[fp.Repo] = true
	x.wt = r.reopen(ctx, x, fp.Repo, fp.Target, fp.Base)
	if patch == "" {
		return r.fail(ctx, x, headless.RunDiscarded, "choird restarted while the agent worked; nothing was committed")
	}
	if x.wt == nil {
		return r.fail(ctx, x, headless.RunDiscarded, "choird restarted and the run's worktree is gone; nothing was committed")
	}
	p, err := x.wt.Diff(ctx)
	if err != nil || p.Hash != patch {
		return r.fail(ctx, x, headless.RunDiscarded, "choird restarted and the worktree no longer holds the recorded patch; nothing was committed")
	}
	x.patch, x.answer = p, answer
	if dec, ok := rejected(rs); ok && x.Status == headless.RunRunning {
		return r.fail(ctx, x, headless.RunFailed, "its commit was rejected by "+decidedBy(dec)+reasonOf(dec))
	}
	switch x.Status {
	case headless.RunRunning, headless.RunVerifying:
		return r.verifyAndCommit(ctx, x)
	case headless.RunAwaitingApproval:
		if dec, ok := approved(rs); ok {
			return r.carryOut(ctx, x, dec, decidedBy(dec))
		}
		return r.commit(ctx, x)
	}
	return nil
}

// reopen returns the run's worktree if it is still there.
func (r *Runner) reopen(ctx context.Context, x *run, repo, target, base string) *worktree.Worktree {
	if base == "" {
		return nil
	}
	wt, err := r.Worktrees.Open(ctx, repo, x.ID, target, base)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			r.log().Warn("run worktree not reopened", "run", x.ID, "error", err)
		}
		return nil
	}
	return wt
}

// where reads from a run's receipts its footprint (where it worked), the
// patch it recorded last and the agent's answer.
func where(rs []headless.Receipt) (fp *Footprint, patch, answer string) {
	for _, rec := range rs {
		switch rec.Kind {
		case headless.KindContextFootprint:
			var f Footprint
			if json.Unmarshal(rec.Body, &f) == nil {
				fp = &f
			}
		case headless.KindPatchReceipt:
			var b PatchBody
			if json.Unmarshal(rec.Body, &b) == nil {
				patch, answer = b.Hash, b.Answer
			}
		}
	}
	return fp, patch, answer
}

// approved returns the approving decision that follows the latest commit
// request, if any.
func approved(rs []headless.Receipt) (headless.Receipt, bool) {
	var dec headless.Receipt
	ok := false
	for _, rec := range rs {
		switch rec.Kind {
		case headless.KindCommitRequest:
			ok = false
		case headless.KindCommitDecision:
			var b headless.CommitDecisionBody
			ok = json.Unmarshal(rec.Body, &b) == nil && b.Approved
			dec = rec
		}
	}
	return dec, ok
}

// rejected returns the last receipt when it is a decision that rejected
// the commit.
func rejected(rs []headless.Receipt) (headless.Receipt, bool) {
	if len(rs) == 0 || rs[len(rs)-1].Kind != headless.KindCommitDecision {
		return headless.Receipt{}, false
	}
	var b headless.CommitDecisionBody
	last := rs[len(rs)-1]
	return last, json.Unmarshal(last.Body, &b) == nil && !b.Approved
}

func reasonOf(rec headless.Receipt) string {
	var b headless.CommitDecisionBody
	if json.Unmarshal(rec.Body, &b) == nil && b.Reason != "" {
		return ": " + b.Reason
	}
	return ""
}

func decidedBy(rec headless.Receipt) string {
	var b headless.CommitDecisionBody
	if json.Unmarshal(rec.Body, &b) == nil && b.By != "" {
		return b.By
	}
	return "policy"
}
