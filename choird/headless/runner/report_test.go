package runner

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/choird/headless"
	"choir/choird/headless/mood"
	"choir/choird/headless/sched"
)

// fires is the scheduler's Store in memory (choird/store's sched_fires):
// it counts every claim of a fire, so a test sees an event fired twice.
type fires struct {
	mu      sync.Mutex
	claimed map[string]bool
	tries   map[string]int
}

var _ sched.Store = (*fires)(nil)

func (f *fires) ClaimFire(_ context.Context, fi sched.Fire) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.claimed == nil {
		f.claimed, f.tries = map[string]bool{}, map[string]int{}
	}
	k := fi.Agent + "/" + fi.Schedule + "/" + fi.Key
	f.tries[k]++
	if f.claimed[k] {
		return false, nil
	}
	f.claimed[k] = true
	return true, nil
}

func (f *fires) LastFire(context.Context, string, string) (time.Time, error) { return time.Time{}, nil }

func (f *fires) triesOf(agent, schedule, key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tries[agent+"/"+schedule+"/"+key]
}

// loopWith runs r's loop with scheduler s until cond holds (or a
// deadline), then stops it.
func (e *env) loopWith(t *testing.T, r *Runner, s *sched.Scheduler, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Loop(ctx, 2, s); close(done) }()
	r.Kick()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if !cond() {
		t.Fatalf("the loop did not get to %s", what)
	}
}

// runOf returns the run of a work item whose trigger contains part.
func (e *env) runOf(t *testing.T, item, part string) (headless.Run, bool) {
	t.Helper()
	runs, err := e.dir.Runs(context.Background(), "", item)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if strings.Contains(r.Trigger, part) {
			return r, true
		}
	}
	return headless.Run{}, false
}

// A run that waited for a human reports its end when the human decided:
// a rejection fires run_failed once (a schedule on it starts the next
// run), an approval's commit fires work_item_ready for the item it
// unblocked.
func TestDecidedRunsReportTheirEnd(t *testing.T) {
	e := newEnv(t, "42\n", "42\n", "42\n")
	ctx := context.Background()
	f := &fires{}
	s := sched.New(f, []sched.Schedule{
		{Agent: "a1", ID: "retry", On: sched.RunFailed, Mood: mood.Calm},
		{Agent: "a1", ID: "next", On: sched.WorkItemReady, Mood: mood.Calm},
	}, sched.Options{})

	rejected := e.workItem(t, headless.RiskHigh)
	r := e.queue(t, rejected.ID)
	if err := e.runner.Perform(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.dir.DecideCommit(ctx, r, false, "human:ann", "not like this", "human"); err != nil {
		t.Fatal(err)
	}
	e.loopWith(t, e.runner, s, "the run_failed schedule's run", func() bool {
		_, ok := e.runOf(t, rejected.ID, "run-failed:"+r)
		return ok
	})
	if got := e.status(t, r); got != headless.RunFailed {
		t.Errorf("rejected run is %s; want failed", got)
	}
	retry, _ := e.runOf(t, rejected.ID, "run-failed:"+r)
	if want := "event run_failed run-failed:" + r + " (schedule retry)"; retry.Trigger != want {
		t.Errorf("the retry's trigger = %q; want %q", retry.Trigger, want)
	}
	if n := f.triesOf("a1", "retry", "event:run-failed:"+r); n != 1 {
		t.Errorf("run_failed of %s fired %d times; want once", r, n)
	}

	// An approval: the commit unblocks a dependent item.
	approved := e.workItem(t, headless.RiskHigh)
	dep, err := e.dir.AddWorkItem(ctx, headless.NewWorkItem{Agent: "a1", Description: "after it", Acceptance: []string{"test.sh passes"}, Verifiers: []string{"test"},
		Risk: headless.RiskLow, DependsOn: []string{approved.ID}})
	if err != nil {
		t.Fatal(err)
	}
	r2 := e.queue(t, approved.ID)
	if err := e.runner.Perform(ctx, r2); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.dir.DecideCommit(ctx, r2, true, "human:ann", "fine", "human"); err != nil {
		t.Fatal(err)
	}
	e.loopWith(t, e.runner, s, "the work_item_ready schedule's run", func() bool {
		_, ok := e.runOf(t, dep.ID, "(schedule next)")
		return ok
	})
	if got := e.status(t, r2); got != headless.RunCommitted {
		t.Errorf("approved run is %s; want committed", got)
	}
	if n := f.triesOf("a1", "retry", "event:run-failed:"+r2); n != 0 {
		t.Errorf("a committed run fired run_failed %d times", n)
	}
}

// A run choird died under is settled by Recover at the next start, and
// reports its end like any other: its run_failed schedule starts the
// work item's next run, which is CONTRITE (crash_recovery); that run
// answers, the guards clear it, and the run after it, CALM, commits.
func TestRecoveredRunReportsItsEndAndStartsContrite(t *testing.T) {
	e := newEnv(t, "42\n")
	ctx := context.Background()
	it := e.workItem(t, headless.RiskLow)
	r := e.queue(t, it.ID)
	x, err := e.runner.load(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if done, err := e.runner.start(ctx, x); err != nil || done {
		t.Fatalf("start = %v, %v", done, err)
	}
	if err := e.runner.record(ctx, x, headless.KindContextFootprint, Footprint{Repo: x.wt.Repo, Target: x.wt.Target, Base: x.wt.Base}, nil, "footprint"); err != nil {
		t.Fatal(err)
	}
	// choird is killed here, while the agent works; it starts again.
	restarted := e.newRunner(t)
	if err := restarted.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.status(t, r); got != headless.RunDiscarded {
		t.Fatalf("run after the restart is %s; want discarded", got)
	}
	if next, err := restarted.NextMood(ctx, it.ID, mood.Calm); err != nil || next != mood.Contrite {
		t.Errorf("NextMood after a run lost to a crash = %s, %v; want CONTRITE", next, err)
	}
	if n := e.notices(); len(n) == 0 || !strings.Contains(n[len(n)-1], "Its next run will be CONTRITE (crash_recovery)") {
		t.Errorf("DM reports = %q; want the recovered run's report to name its next mood", n)
	}

	s := sched.New(&fires{}, []sched.Schedule{{Agent: "a1", ID: "retry", On: sched.RunFailed, Mood: mood.Calm}}, sched.Options{})
	e.loopWith(t, restarted, s, "the work item's commit", func() bool {
		got, err := e.dir.WorkItem(ctx, it.ID)
		return err == nil && got.Status == headless.WorkDone
	})
	runs, err := e.dir.Runs(ctx, "", it.ID)
	if err != nil {
		t.Fatal(err)
	}
	var moods []string
	for i := len(runs) - 1; i >= 0; i-- {
		moods = append(moods, runs[i].Mood+" "+string(runs[i].Status))
	}
	if got, want := strings.Join(moods, ", "), "CALM discarded, CONTRITE failed, CALM committed"; got != want {
		t.Errorf("the work item's runs = %s; want %s", got, want)
	}
	if !strings.Contains(runs[1].Trigger, "run-failed:"+r) {
		t.Errorf("the CONTRITE run's trigger = %q; want the recovered run's run_failed", runs[1].Trigger)
	}
}

// A schedule's backoff of repeated identical failures survives a
// restart: the new scheduler learns it from the runs' receipts, and a
// run reported again is not counted twice.
func TestBackoffSurvivesARestart(t *testing.T) {
	e := newEnv(t, "40\n", "40\n")
	ctx := context.Background()
	it := e.workItem(t, headless.RiskLow)
	schedules := []sched.Schedule{{Agent: "a1", ID: "on-ready", On: sched.WorkItemReady, Mood: mood.Calm}}
	f := &fires{}
	before := sched.New(f, schedules, sched.Options{})
	for _, id := range []string{"e1", "e2"} {
		reqs, err := before.Event(ctx, sched.Event{ID: id, Kind: sched.WorkItemReady, Agent: "a1", WorkItem: it.ID})
		if err != nil || len(reqs) != 1 {
			t.Fatalf("Event(%s) = %v, %v; want one request", id, reqs, err)
		}
		e.runner.enqueue(ctx, reqs)
		run, ok := e.runOf(t, it.ID, "event work_item_ready "+id+" (schedule on-ready)")
		if !ok {
			t.Fatalf("no run queued for event %s", id)
		}
		if err := e.runner.Perform(ctx, run.ID); err != nil {
			t.Fatal(err)
		}
	}

	after := sched.New(f, schedules, sched.Options{})
	restarted := e.newRunner(t)
	restarted.restoreBackoff(ctx, after)
	until, n := after.BackedOff("a1", "on-ready")
	if n != 2 || !until.After(time.Now()) {
		t.Fatalf("after a restart, BackedOff = %v, %d; want a wait after 2 identical failures", until, n)
	}
	// The runs' ends reported again (they ended in the runner before the
	// restart) are not counted a second time.
	e.runner.reportEnded(ctx, after)
	if _, n := after.BackedOff("a1", "on-ready"); n != 2 {
		t.Errorf("after reporting the same runs again, %d failures; want still 2", n)
	}
	// The schedule holds its events until the wait ends.
	if reqs, err := after.Event(ctx, sched.Event{ID: "e3", Kind: sched.WorkItemReady, Agent: "a1", WorkItem: it.ID}); err != nil || len(reqs) != 0 {
		t.Errorf("Event during the restored backoff = %v, %v; want it held", reqs, err)
	}
}

// A run started without a mood (choirctl run start without --mood, POST
// /run without one) starts in the mood the guards chose for the work
// item; one that names a mood gets it.
func TestRunWithoutAMoodStartsInTheGuardsMood(t *testing.T) {
	e := newEnv(t, "40\n", "40\n", "40\n")
	ctx := context.Background()
	it := e.workItem(t, headless.RiskLow)
	for range 3 { // three identical failures: repeated_failure_signature
		r := e.queue(t, it.ID)
		if err := e.runner.Perform(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	want, err := e.runner.NextMood(ctx, it.ID, mood.Calm)
	if err != nil || want == mood.Calm {
		t.Fatalf("NextMood after three identical failures = %s, %v; want the guards to have moved it", want, err)
	}
	r, err := e.dir.StartRun(ctx, headless.NewRun{WorkItem: it.ID})
	if err != nil {
		t.Fatal(err)
	}
	if r.Mood != string(want) {
		t.Errorf("a run started without a mood is %s; want the guards' %s", r.Mood, want)
	}
	if _, _, err := e.dir.EndRun(ctx, r.ID, headless.RunCancelled, "test", "end"); err != nil {
		t.Fatal(err)
	}
	if r, err := e.dir.StartRun(ctx, headless.NewRun{WorkItem: it.ID, Mood: "CALM"}); err != nil || r.Mood != "CALM" {
		t.Errorf("a run started with --mood CALM = %s, %v; want CALM", r.Mood, err)
	}
	fresh := e.workItem(t, headless.RiskLow)
	if r, err := e.dir.StartRun(ctx, headless.NewRun{WorkItem: fresh.ID}); err != nil || r.Mood != "CALM" {
		t.Errorf("the first run of a work item, without a mood = %s, %v; want CALM", r.Mood, err)
	}
}
