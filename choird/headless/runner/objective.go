package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"choir/choird/headless"
)

// maxEarlier bounds how many earlier runs of a work item the objective
// recalls.
const maxEarlier = 3

// instructions close every context pack.
const instructions = "You work in /workspace, a fresh git worktree of the repository. Make the change there with your tools, " +
	"keep it to what the work item asks, and do not commit: choir commits your work only if every verifier passes. " +
	"When you are done, answer with a short summary of what you changed."

// earlier is what up to maxEarlier earlier ended runs of the same work
// item were told by their verifiers (structured summaries, never raw
// logs) and why they ended, newest first, with the receipts cited.
func (r *Runner) earlier(ctx context.Context, x *run) ([]recalled, error) {
	runs, err := r.Director.Runs(ctx, "", x.WorkItem) // newest first
	if err != nil {
		return nil, fmt.Errorf("run %s: earlier runs: %w", x.ID, err)
	}
	var out []recalled
	for _, e := range runs {
		if e.ID == x.ID || !e.Status.Ended() || len(out) == maxEarlier {
			continue
		}
		rs, err := r.Director.Receipts(ctx, e.ID, 0)
		if err != nil {
			return nil, fmt.Errorf("run %s: receipts of %s: %w", x.ID, e.ID, err)
		}
		lines, refs := recall(rs)
		if len(lines) == 0 {
			continue
		}
		out = append(out, recalled{Line: fmt.Sprintf("- run %s (%s): %s\n", e.ID, e.Status, strings.Join(lines, "; ")), Refs: refs})
	}
	return out, nil
}

// recall is what an ended run's receipts say about why it ended: its
// verifiers' summaries and its end reason, with the receipts cited.
func recall(rs []headless.Receipt) (lines, refs []string) {
	for _, rec := range rs {
		switch rec.Kind {
		case headless.KindVerifierResults:
			var a headless.Attestation
			if json.Unmarshal(rec.Body, &a) != nil {
				continue
			}
			res := "passed"
			if !a.Passed {
				res = "failed"
			}
			line := fmt.Sprintf("verifier %s %s", a.Verifier, res)
			if a.Summary != "" {
				line += ": " + clip(a.Summary, 300)
			}
			lines, refs = append(lines, line), append(refs, rec.Ref())
		case headless.KindRunEnded:
			var e headless.RunEndedBody
			if json.Unmarshal(rec.Body, &e) == nil && e.Reason != "" && !strings.HasPrefix(e.Reason, "verification failed") {
				lines, refs = append(lines, "ended: "+clip(e.Reason, 300)), append(refs, rec.Ref())
			}
		}
	}
	return lines, refs
}
