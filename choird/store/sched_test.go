package store

import (
	"context"
	"testing"
	"time"

	"choir/choird/headless/mood"
	"choir/choird/headless/sched"
	"choir/internal/cron"
	"choir/testkit/pgtest"
)

// A fire is claimed once: the second claim of the same key fails, from the
// same store and from a store opened after a restart; the scheduler over
// a reopened store neither fires a slot again nor once per missed slot.
func TestFireClaimedOnceAcrossRestart(t *testing.T) {
	db := pgtest.DB(t)
	ctx := ctxT(t)
	cfg := Config{DSN: db.DSN, Namespace: db.Namespace}
	// The test servers take one connection at a time: a restart closes
	// the first store before the second opens, as choird's would.
	s1, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open(%s) = %v", db.Backend, err)
	}
	if err := s1.Bootstrap(ctx, []string{"run-1"}, dims); err != nil {
		s1.Close()
		t.Fatal(err)
	}
	slot := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	fire := sched.Fire{Agent: "run-1", Schedule: "nightly", Key: sched.FireKey(slot, nil), Cron: true, At: slot}
	claim := func(s *Store, f sched.Fire, want bool) {
		t.Helper()
		ok, err := s.Fires().ClaimFire(ctx, f)
		if err != nil || ok != want {
			t.Fatalf("ClaimFire(%s) = %t, %v; want %t", f.Key, ok, err, want)
		}
	}
	claim(s1, fire, true)
	claim(s1, fire, false)
	other := fire
	other.Schedule = "hourly"
	claim(s1, other, true) // the same key of another schedule is another fire
	ev := sched.Fire{Agent: "run-1", Schedule: "on-fail", Key: "event:rc-1", At: slot.Add(time.Hour)}
	claim(s1, ev, true)

	// The scheduler on this store fires the next slot.
	clk := slot.Add(12 * time.Hour)
	now := func() time.Time { return clk }
	nightly := sched.Schedule{Agent: "run-1", ID: "nightly", Cron: cron.MustParse("0 3 * * *"), Query: &sched.Query{}, Mood: mood.Calm}
	sc := sched.New(s1.Fires(), []sched.Schedule{nightly}, sched.Options{Now: now})
	if err := sc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	clk = slot.Add(24 * time.Hour)
	reqs, err := sc.Tick(ctx)
	if err != nil || len(reqs) != 1 || !reqs[0].At.Equal(clk) {
		t.Fatalf("Tick at the next slot = %+v, %v; want one request", reqs, err)
	}
	s1.Close()

	// Restart.
	s2, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open again = %v", err)
	}
	t.Cleanup(func() {
		if err := s2.Drop(context.Background()); err != nil {
			t.Errorf("Drop() = %v", err)
		}
		s2.Close()
	})
	if err := s2.Bootstrap(ctx, []string{"run-1"}, dims); err != nil {
		t.Fatal(err)
	}
	claim(s2, fire, false)
	claim(s2, ev, false)
	if last, err := s2.Fires().LastFire(ctx, "run-1", "nightly"); err != nil || !last.Equal(slot.Add(24*time.Hour)) {
		t.Errorf("LastFire after restart = %s, %v; want the slot fired before", last, err)
	}
	if last, err := s2.Fires().LastFire(ctx, "run-1", "on-fail"); err != nil || !last.IsZero() {
		t.Errorf("LastFire of an event schedule = %s, %v; want none (events are not slots)", last, err)
	}

	sc2 := sched.New(s2.Fires(), []sched.Schedule{nightly}, sched.Options{Now: now})
	if err := sc2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if reqs, err := sc2.Tick(ctx); err != nil || len(reqs) != 0 {
		t.Fatalf("Tick after restart at the same time = %+v, %v; want nothing", reqs, err)
	}
	clk = slot.Add(4*24*time.Hour + 6*time.Hour) // three nights later
	reqs, err = sc2.Tick(ctx)
	if err != nil || len(reqs) != 1 || reqs[0].Missed != 2 || !reqs[0].At.Equal(slot.Add(4*24*time.Hour)) {
		t.Fatalf("Tick after three nights = %+v, %v; want one request for the newest slot, 2 missed", reqs, err)
	}
}
