package runner

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"choir/choird/headless"
	"choir/choird/headless/mood"
	"choir/choird/headless/sched"
)

// Poll is how often the loop looks for queued runs and due schedules
// when nothing woke it.
const Poll = 30 * time.Second

// Loop is the director loop: it performs queued runs, at most max at once
// (oldest first), and turns due schedules and events into runs, until ctx
// ends; then it waits for the runs it started, which stop where they are
// (Recover settles them at the next start). Call Recover before it. s may
// be nil (no schedules).
func (r *Runner) Loop(ctx context.Context, max int, s *sched.Scheduler) {
	if max < 1 {
		max = 1
	}
	if s != nil {
		if err := s.Start(ctx); err != nil {
			r.log().Warn("schedules not started", "error", err)
		}
		r.restoreBackoff(ctx, s) // report.go
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ended := make(chan string, max)
	running := 0
	for {
		if s != nil {
			r.schedule(ctx, s)
		}
		r.reportEnded(ctx, s) // report.go: the runs that ended since the last pass
		r.settleDecided(ctx, &wg)
		queued, err := r.queued(ctx)
		if err != nil && ctx.Err() == nil {
			r.log().Warn("queued runs not read", "error", err)
		}
		for _, id := range queued {
			if running == max {
				break
			}
			if r.Active(id) {
				continue
			}
			running++
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := r.Perform(ctx, id); err != nil && !errors.Is(err, ErrBusy) && ctx.Err() == nil {
					r.log().Warn("headless run not performed", "run", id, "error", err)
				}
				ended <- id
			}()
		}
		wait := Poll
		if s != nil {
			if at := s.NextWake(); !at.IsZero() {
				wait = min(wait, max0(time.Until(at)))
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-r.kicked():
		case <-ended:
			running--
		case <-t.C:
		}
		t.Stop()
		// Drain the ends that came meanwhile.
		for drained := false; !drained; {
			select {
			case <-ended:
				running--
			default:
				drained = true
			}
		}
	}
}

func max0(d time.Duration) time.Duration { return max(d, 0) }

// Kick wakes the loop: a run was queued.
func (r *Runner) Kick() {
	select {
	case r.kickc() <- struct{}{}:
	default:
	}
}

func (r *Runner) kickc() chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.kick == nil {
		r.kick = make(chan struct{}, 1)
	}
	return r.kick
}

func (r *Runner) kicked() <-chan struct{} { return r.kickc() }

// settleDecided carries out the decisions a human made on runs that
// waited for one (choirctl run approve|reject): an approval is committed,
// a rejection ends the run.
func (r *Runner) settleDecided(ctx context.Context, wg *sync.WaitGroup) {
	runs, err := r.Director.RunsIn(ctx, headless.RunAwaitingApproval, headless.RunRunning)
	if err != nil {
		return
	}
	for _, hr := range runs {
		if r.Active(hr.ID) {
			continue
		}
		rs, err := r.Director.Receipts(ctx, hr.ID, 0)
		if err != nil || len(rs) == 0 || rs[len(rs)-1].Kind != headless.KindCommitDecision {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.resume(ctx, hr.ID, map[string]bool{}, false); err != nil && ctx.Err() == nil {
				r.log().Warn("decided run not settled", "run", hr.ID, "error", err)
			}
		}()
	}
}

// queued lists the queued runs, oldest first.
func (r *Runner) queued(ctx context.Context) ([]string, error) {
	runs, err := r.Director.RunsIn(ctx, headless.RunQueued)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(runs))
	for _, hr := range runs {
		ids = append(ids, hr.ID)
	}
	return ids, nil
}

// schedule queues a run for each due schedule.
func (r *Runner) schedule(ctx context.Context, s *sched.Scheduler) {
	reqs, err := s.Tick(ctx)
	if err != nil && ctx.Err() == nil {
		r.log().Warn("schedules not read", "error", err)
	}
	r.enqueue(ctx, reqs)
}

// Event feeds an event (a work item became ready, a verifier regressed, a
// run failed) to the schedules that wait for it.
func (r *Runner) Event(ctx context.Context, s *sched.Scheduler, ev sched.Event) {
	reqs, err := s.Event(ctx, ev)
	if err != nil {
		r.log().Warn("schedule event not handled", "event", ev.ID, "error", err)
	}
	r.enqueue(ctx, reqs)
}

func (r *Runner) enqueue(ctx context.Context, reqs []sched.Request) {
	for _, req := range reqs {
		id, err := r.enqueueOne(ctx, req)
		if err != nil {
			r.log().Info("scheduled run not queued", "agent_id", req.Agent, "schedule", req.Schedule, "fire", req.Key, "reason", err)
			continue
		}
		r.log().Info("scheduled run queued", "agent_id", req.Agent, "schedule", req.Schedule, "run", id, "trigger", req.Trigger)
		r.Kick()
	}
}

func (r *Runner) enqueueOne(ctx context.Context, req sched.Request) (string, error) {
	item := req.WorkItem
	if item == "" {
		items, err := r.Director.WorkItems(ctx, headless.WorkFilter{Agent: req.Agent, Status: headless.WorkReady})
		if err != nil {
			return "", err
		}
		for _, it := range items { // oldest first
			if req.Query == nil || queryMatches(req.Query, it) {
				item = it.ID
				break
			}
		}
		if item == "" {
			return "", errors.New("no ready work item matches")
		}
	}
	m, err := r.NextMood(ctx, item, req.Mood)
	if err != nil {
		return "", err
	}
	run, err := r.Director.StartRun(ctx, headless.NewRun{WorkItem: item, Mood: string(m), Trigger: clip(req.Trigger, sched.MaxTrigger)})
	if err != nil {
		return "", err
	}
	return run.ID, nil
}

func queryMatches(q *sched.Query, it headless.WorkItem) bool {
	if len(q.Risk) > 0 && !slices.Contains(q.Risk, string(it.Risk)) {
		return false
	}
	return q.Parent == "" || q.Parent == it.Parent
}

// DefaultMood is the mood of a run nothing else chose a mood for.
const DefaultMood = mood.Calm
