package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"choir/choird/headless"
)

// maxEarlier bounds how many earlier runs of a work item the objective
// recalls.
const maxEarlier = 3

// objective is the run session's one user message (the context pack of
// seed 002 §2.1, minimal): the work item, its acceptance criteria, the
// verifiers that will judge the patch, and what earlier runs of the same
// work item were told by theirs (structured summaries, never raw logs),
// with the receipts it cites.
func (r *Runner) objective(ctx context.Context, x *run) (string, []string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "[choir headless run %s, mood %s]\n", x.ID, x.profile.Mood)
	fmt.Fprintf(&b, "Work item %s: %s\n", x.item.ID, strings.TrimSpace(x.item.Description))
	if len(x.item.Acceptance) > 0 {
		b.WriteString("\nAcceptance criteria:\n")
		for _, a := range x.item.Acceptance {
			fmt.Fprintf(&b, "- %s\n", a)
		}
	}
	if vs, err := r.verifiers(x); err == nil {
		names := make([]string, len(vs))
		for i, v := range vs {
			names[i] = v.Name + " (" + strings.Join(v.Command, " ") + ")"
		}
		fmt.Fprintf(&b, "\nWhen you answer, choir runs these verifiers on your changes, apart from you: %s.\n", strings.Join(names, "; "))
	}
	var cites []string
	earlier, err := r.Director.Runs(ctx, "", x.WorkItem) // newest first
	if err != nil {
		return "", nil, fmt.Errorf("run %s: earlier runs: %w", x.ID, err)
	}
	n := 0
	for _, e := range earlier {
		if e.ID == x.ID || !e.Status.Ended() || n == maxEarlier {
			continue
		}
		rs, err := r.Director.Receipts(ctx, e.ID, 0)
		if err != nil {
			return "", nil, fmt.Errorf("run %s: receipts of %s: %w", x.ID, e.ID, err)
		}
		lines, refs := recall(rs)
		if len(lines) == 0 {
			continue
		}
		if n == 0 {
			b.WriteString("\nEarlier runs of this work item:\n")
		}
		n++
		fmt.Fprintf(&b, "- run %s (%s): %s\n", e.ID, e.Status, strings.Join(lines, "; "))
		cites = append(cites, refs...)
	}
	b.WriteString("\nYou work in /workspace, a fresh git worktree of the repository. Make the change there with your tools, " +
		"keep it to what the work item asks, and do not commit: choir commits your work only if every verifier passes. " +
		"When you are done, answer with a short summary of what you changed.")
	slices.Sort(cites)
	return b.String(), slices.Compact(cites), nil
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
