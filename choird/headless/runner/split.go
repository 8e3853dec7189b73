package runner

import (
	"context"
	"fmt"
	"strings"

	"choir/choird/headless"
)

// actOnSplit ends a run whose agent filed a SPLIT_REQUEST (choir.run.split)
// without verifying or committing anything, whatever the session's end (a
// run that asked to split often runs out of budget after asking): the
// director splits a low-risk work item into the proposed children, leaves
// a medium or high one to a human, and escalates one split
// headless.max_splits times already; the DM is told which. done is false
// when the run made no split request.
func (r *Runner) actOnSplit(ctx context.Context, x *run) (done bool, err error) {
	rs, err := r.Director.Receipts(ctx, x.ID, 0)
	if err != nil {
		return false, fmt.Errorf("run %s: %w", x.ID, err)
	}
	if _, _, ok := headless.PendingSplit(rs); !ok {
		return false, nil
	}
	max := headless.DefaultMaxSplits
	if r.MaxSplits != nil {
		max = r.MaxSplits()
	}
	// No anomaly detection nor mood guard here: a split is progress (the
	// work graph changed), not a failure of the run.
	r.discard(ctx, x) // nothing of this run's worktree will be committed
	dec, _, err := r.Director.ActOnSplit(ctx, x.ID, max)
	r.markEnded(x.ID) // ActOnSplit ends the run (reportEnded reads whether it did)
	if err != nil {
		return true, fmt.Errorf("run %s: act on its split request: %w", x.ID, err)
	}
	r.log().Info("run asked to split its work item", "run", x.ID, "agent_id", x.Agent, "work_item", x.WorkItem,
		"decision", dec.Decision, "children", strings.Join(dec.Children, ","))
	switch dec.Decision {
	case headless.SplitDone:
		r.report(x, fmt.Sprintf("Run %s split %s into %s (its request %s; low risk). Nothing was committed. See choirctl work list.",
			x.ID, x.WorkItem, strings.Join(dec.Children, ", "), dec.Request))
	case headless.SplitAwaitingHuman:
		r.report(x, fmt.Sprintf("Run %s asks to split %s (%s risk); nothing was committed. See its proposal with choirctl run receipts %s; split it with: choirctl work split %s --request %s",
			x.ID, x.WorkItem, x.item.Risk, x.ID, x.WorkItem, dec.Request))
	case headless.SplitEscalated:
		r.report(x, fmt.Sprintf("Run %s asks to split %s again, but it was split %d times along its ancestry already (headless.max_splits %d): please decide. Its proposal: choirctl run receipts %s; split it anyway with: choirctl work split %s --request %s, or change or cancel the work item.",
			x.ID, x.WorkItem, dec.Depth, max, x.ID, x.WorkItem, dec.Request))
	default:
		r.report(x, fmt.Sprintf("Run %s asked to split %s, but its proposal was refused: %s. Nothing was committed.", x.ID, x.WorkItem, dec.Reason))
	}
	return true, nil
}
