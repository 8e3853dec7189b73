package runner

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"choir/choird/headless"
	"choir/choird/headless/mood"
	"choir/choird/headless/sched"
)

// Every run that ends reports its end to the scheduler once, whichever
// path ended it: Perform, a human's decision carried out by the loop
// (settleDecided), Recover after a restart, or a split. The path that
// records the run's last receipt (RunEnded or CommitReceipt, freshly
// appended) marks the run ended; the loop's next pass reports it
// (reportEnded): the backoff's Report to the run's schedule, named in
// its trigger, and the events (run_failed, verifier_regressed,
// work_item_ready). A run cancelled with its work item is the
// operator's doing and reports nothing.

// markEnded queues a run whose last receipt was just recorded for its
// report, and wakes the loop.
func (r *Runner) markEnded(runID string) {
	r.mu.Lock()
	if r.ended == nil {
		r.ended = map[string]bool{}
	}
	r.ended[runID] = true
	r.mu.Unlock()
	r.Kick()
}

// takeEnded returns the runs marked ended and forgets them.
func (r *Runner) takeEnded() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]string, 0, len(r.ended))
	for id := range r.ended {
		ids = append(ids, id)
	}
	clear(r.ended)
	return ids
}

// reportEnded reports the runs that ended since the last pass to s, in
// the order they ended; with no scheduler (s nil) it only forgets them.
func (r *Runner) reportEnded(ctx context.Context, s *sched.Scheduler) {
	ids := r.takeEnded()
	if s == nil || len(ids) == 0 {
		return
	}
	var runs []headless.Run
	for _, id := range ids {
		hr, err := r.Director.Run(ctx, id)
		if err != nil {
			r.log().Warn("ended run not reported to the schedules", "run", id, "error", err)
			continue
		}
		if hr.Status.Ended() {
			runs = append(runs, hr)
		}
	}
	slices.SortFunc(runs, func(a, b headless.Run) int { return cmp.Or(a.Ended.Compare(b.Ended), cmp.Compare(a.ID, b.ID)) })
	for _, hr := range runs {
		r.reportTo(ctx, s, hr)
	}
}

// ending is how an ended run counts for the scheduler, from its
// receipts.
type ending struct {
	failed    bool     // for backoff and run_failed
	signature string   // its failure signature
	regressed []string // verifiers it regressed (verifier_regressed)
}

func endingOf(hr headless.Run, rs []headless.Receipt) ending {
	e := ending{failed: hr.Status != headless.RunCommitted}
	for _, rec := range rs {
		switch rec.Kind {
		case headless.KindSplitDecision:
			// A split is progress, not a failure of the run (split.go);
			// a refused proposal is.
			var d headless.SplitDecisionBody
			if json.Unmarshal(rec.Body, &d) == nil && d.Decision != headless.SplitRefused {
				e.failed = false
			}
		case headless.KindAnomaly:
			var a mood.Anomaly
			if json.Unmarshal(rec.Body, &a) == nil && a.Kind == mood.Regression {
				e.regressed = append(e.regressed, a.Verifiers...)
			}
		}
	}
	if e.failed {
		e.signature = recordOf(hr, nil, rs).Failure
	}
	return e
}

// reportTo tells the run's schedule (if a schedule started it) how the
// run ended, for its backoff, and fires the events of its end:
// run_failed for a failure, verifier_regressed for a regression, and
// work_item_ready for the work items a commit made ready.
func (r *Runner) reportTo(ctx context.Context, s *sched.Scheduler, hr headless.Run) {
	if hr.Status == headless.RunCancelled {
		return
	}
	rs, err := r.Director.Receipts(ctx, hr.ID, 0)
	if err != nil {
		r.log().Warn("ended run not reported to the schedules", "run", hr.ID, "error", err)
		return
	}
	e := endingOf(hr, rs)
	if id, ok := sched.ScheduleOf(hr.Trigger); ok {
		s.Report(sched.Request{Agent: hr.Agent, Schedule: id}, sched.Result{Failed: e.failed, Signature: e.signature, At: hr.Ended, Run: hr.ID})
	}
	it, _ := r.Director.WorkItem(ctx, hr.WorkItem)
	ev := sched.Event{Agent: hr.Agent, WorkItem: hr.WorkItem, Risk: string(it.Risk), Parent: it.Parent, Run: hr.ID, At: hr.Ended}
	if len(e.regressed) > 0 {
		ev.ID, ev.Kind = "regressed:"+hr.ID, sched.VerifierRegressed
		r.Event(ctx, s, ev)
	}
	if e.failed {
		ev.ID, ev.Kind = "run-failed:"+hr.ID, sched.RunFailed
		r.Event(ctx, s, ev)
		return
	}
	if hr.Status != headless.RunCommitted {
		return
	}
	// Work items waiting on this one may be ready now.
	items, err := r.Director.WorkItems(ctx, headless.WorkFilter{Agent: hr.Agent, Status: headless.WorkReady})
	if err != nil {
		r.log().Warn("work items made ready not read", "run", hr.ID, "error", err)
		return
	}
	for _, it := range items {
		if slices.Contains(it.DependsOn, hr.WorkItem) {
			r.Event(ctx, s, sched.Event{ID: fmt.Sprintf("ready:%s:%s", it.ID, hr.ID), Kind: sched.WorkItemReady, Agent: it.Agent,
				WorkItem: it.ID, Risk: string(it.Risk), Parent: it.Parent, At: hr.Ended})
		}
	}
}

// maxReplay bounds how many failures in a row restoreBackoff reads back
// per schedule: the backoff's wait stops growing long before.
const maxReplay = 32

// restoreBackoff replays, at the loop's start, the ends of each
// schedule's latest runs (found by the schedule named in their trigger,
// read from their receipts) into s, so the backoff of repeated identical
// failures survives a restart: the newest run of the schedule and the
// failures with its signature before it, oldest first. Report counts
// each run once, so a run also reported by reportEnded is not counted
// twice.
func (r *Runner) restoreBackoff(ctx context.Context, s *sched.Scheduler) {
	byAgent := map[string][]string{}
	for _, sc := range s.Schedules() {
		byAgent[sc.Agent] = append(byAgent[sc.Agent], sc.ID)
	}
	for agent, ids := range byAgent {
		runs, err := r.Director.Runs(ctx, agent, "") // newest first
		if err != nil {
			r.log().Warn("schedule backoff not restored", "agent_id", agent, "error", err)
			continue
		}
		slices.SortStableFunc(runs, func(a, b headless.Run) int { return b.Ended.Compare(a.Ended) })
		for _, id := range ids {
			var streak []sched.Result
			for _, hr := range runs {
				if sid, ok := sched.ScheduleOf(hr.Trigger); !ok || sid != id || !hr.Status.Ended() || hr.Status == headless.RunCancelled {
					continue
				}
				rs, err := r.Director.Receipts(ctx, hr.ID, 0)
				if err != nil {
					r.log().Warn("schedule backoff not restored", "agent_id", agent, "schedule", id, "run", hr.ID, "error", err)
					break
				}
				e := endingOf(hr, rs)
				if len(streak) > 0 && (!e.failed || e.signature != streak[0].Signature) {
					break // the streak starts after this run
				}
				streak = append(streak, sched.Result{Failed: e.failed, Signature: e.signature, At: hr.Ended, Run: hr.ID})
				if !e.failed || len(streak) == maxReplay {
					break
				}
			}
			slices.Reverse(streak)
			for _, res := range streak {
				s.Report(sched.Request{Agent: agent, Schedule: id}, res)
			}
			if until, n := s.BackedOff(agent, id); n > 0 {
				r.log().Info("schedule backoff restored", "agent_id", agent, "schedule", id, "failures", n, "until", until)
			}
		}
	}
}
