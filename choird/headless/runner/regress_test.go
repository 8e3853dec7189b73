package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"choir/choird/headless"
	"choir/choird/headless/mood"
	"choir/choird/headless/sched"
)

// regressionOf returns the verifier_regressed anomaly recorded on a run.
func (e *env) regressionOf(t *testing.T, runID string) (mood.Anomaly, bool) {
	t.Helper()
	rs, err := e.dir.Receipts(context.Background(), runID, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range rs {
		var a mood.Anomaly
		if rec.Kind == headless.KindAnomaly && json.Unmarshal(rec.Body, &a) == nil && a.Kind == mood.Regression {
			return a, true
		}
	}
	return mood.Anomaly{}, false
}

// lastTransition returns the last MoodTransition recorded on a run.
func (e *env) lastTransition(t *testing.T, runID string) (mood.Transition, bool) {
	t.Helper()
	rs, err := e.dir.Receipts(context.Background(), runID, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(rs) - 1; i >= 0; i-- {
		var tr mood.Transition
		if rs[i].Kind == headless.KindMoodTransition && json.Unmarshal(rs[i].Body, &tr) == nil {
			return tr, true
		}
	}
	return mood.Transition{}, false
}

// A verifier that passed on the commit a run started from (a run
// committed it) and fails on the run's patch regressed: the run records
// it, the work item's next run is SKEPTICAL, the DM is told, and a
// schedule on verifier_regressed starts a run.
func TestVerifierRegression(t *testing.T) {
	e := newEnv(t, "42\n", "40\n")
	ctx := context.Background()
	good, bad := e.workItem(t, headless.RiskLow), e.workItem(t, headless.RiskLow)
	r1 := e.queue(t, good.ID)
	if err := e.runner.Perform(ctx, r1); err != nil {
		t.Fatal(err)
	}
	if got := e.status(t, r1); got != headless.RunCommitted {
		t.Fatalf("run 1 is %s; want committed", got)
	}
	r2 := e.queue(t, bad.ID)
	if err := e.runner.Perform(ctx, r2); err != nil {
		t.Fatal(err)
	}
	a, ok := e.regressionOf(t, r2)
	if !ok || strings.Join(a.Verifiers, ",") != "test" || !strings.Contains(a.Detail, "run "+r1+" committed it") {
		t.Fatalf("regression of run 2 = %+v, %t (receipts %v); want verifier test, base committed by %s", a, ok, e.kinds(t, r2), r1)
	}
	if tr, ok := e.lastTransition(t, r2); !ok || tr.To != mood.Skeptical || tr.Guard != mood.GuardRegression {
		t.Errorf("run 2's transition = %+v, %t; want SKEPTICAL by %s", tr, ok, mood.GuardRegression)
	}
	if n := e.notices(); !strings.Contains(n[len(n)-1], "verifier test passed on the base") || !strings.Contains(n[len(n)-1], "Its next run will be SKEPTICAL") {
		t.Errorf("run 2's report = %q; want the regression and the next mood", n[len(n)-1])
	}

	s := sched.New(&fires{}, []sched.Schedule{{Agent: "a1", ID: "adjudicate", On: sched.VerifierRegressed, Mood: mood.Skeptical}}, sched.Options{})
	e.runner.reportEnded(ctx, s)
	run, ok := e.runOf(t, bad.ID, "event verifier_regressed regressed:"+r2+" (schedule adjudicate)")
	if !ok || run.Mood != string(mood.Skeptical) {
		t.Errorf("run queued by the verifier_regressed schedule = %+v, %t; want a SKEPTICAL run of %s", run, ok, bad.ID)
	}
}

// A failure on a base no run committed (a human's commit) is no known
// regression: nothing says the verifier passed there.
func TestNoRegressionOnAHumansBase(t *testing.T) {
	e := newEnv(t, "42\n", "40\n")
	ctx := context.Background()
	good, bad := e.workItem(t, headless.RiskLow), e.workItem(t, headless.RiskLow)
	r1 := e.queue(t, good.ID)
	if err := e.runner.Perform(ctx, r1); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.repo, "notes.txt"), []byte("by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, e.repo, "add", "notes.txt")
	git(t, e.repo, "-c", "user.name=h", "-c", "user.email=h@example.org", "commit", "-q", "-m", "by hand")
	r2 := e.queue(t, bad.ID)
	if err := e.runner.Perform(ctx, r2); err != nil {
		t.Fatal(err)
	}
	if a, ok := e.regressionOf(t, r2); ok {
		t.Errorf("run on a human's commit has a regression %+v; want none", a)
	}
	if tr, ok := e.lastTransition(t, r2); ok {
		t.Errorf("run on a human's commit moved the mood: %+v", tr)
	}
}
