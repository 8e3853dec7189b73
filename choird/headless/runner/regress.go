package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"choir/choird/headless"
	"choir/choird/headless/mood"
)

// maxBaseLookup bounds how many committed runs of the agent regression
// reads back to find the one that committed a run's base.
const maxBaseLookup = 50

// regression finds the verifiers a run regressed (seed 002 §2.5, §4),
// from receipts alone and without running a verifier again: a verifier
// regressed when it passed on the run's base commit and fails on the
// run's latest patch. The base is known to pass a verifier when a run of
// the agent committed exactly that base (its CommitReceipt names it; a
// run commits only by fast-forwarding, so the branch then holds what its
// verifiers checked) and that verifier attested a pass on the patch it
// committed. A base committed by a human, or by a run beyond the newest
// maxBaseLookup committed ones, is not known to pass anything: no
// regression is claimed. ok is false when nothing regressed.
func (r *Runner) regression(ctx context.Context, agent string, rs []headless.Receipt) (mood.Anomaly, bool, error) {
	var base, patch string
	for _, rec := range rs {
		if rec.Kind == headless.KindPatchReceipt {
			var b PatchBody
			if json.Unmarshal(rec.Body, &b) == nil {
				base, patch = b.Base, b.Hash
			}
		}
	}
	if patch == "" || base == "" {
		return mood.Anomaly{}, false, nil
	}
	var failing []string
	for name, a := range attested(rs, patch) {
		if !a.Passed {
			failing = append(failing, name)
		}
	}
	if len(failing) == 0 {
		return mood.Anomaly{}, false, nil
	}
	slices.Sort(failing)
	runs, err := r.Director.Runs(ctx, agent, "") // newest first
	if err != nil {
		return mood.Anomaly{}, false, err
	}
	looked := 0
	for _, hr := range runs {
		if hr.Status != headless.RunCommitted {
			continue
		}
		if looked++; looked > maxBaseLookup {
			break
		}
		prs, err := r.Director.Receipts(ctx, hr.ID, 0)
		if err != nil {
			return mood.Anomaly{}, false, err
		}
		if committedCommit(prs) != base {
			continue
		}
		_, committedPatch, _ := where(prs)
		passed := attested(prs, committedPatch)
		var regressed []string
		for _, v := range failing {
			if a, ok := passed[v]; ok && a.Passed {
				regressed = append(regressed, v)
			}
		}
		if len(regressed) == 0 {
			return mood.Anomaly{}, false, nil
		}
		cur := rs[0].RunID
		return mood.Anomaly{Kind: mood.Regression, Run: cur, Runs: []string{hr.ID, cur}, Count: len(regressed), Verifiers: regressed,
			Detail: fmt.Sprintf("verifier %s passed on the base %s (run %s committed it) and fails on this run's patch",
				strings.Join(regressed, ", "), short(base), hr.ID)}, true, nil
	}
	return mood.Anomaly{}, false, nil
}

// committedCommit is the commit a run's CommitReceipt records, "" when
// it has none.
func committedCommit(rs []headless.Receipt) string {
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].Kind != headless.KindCommitReceipt {
			continue
		}
		var b headless.CommitReceiptBody
		if json.Unmarshal(rs[i].Body, &b) == nil {
			return b.Commit
		}
	}
	return ""
}
