package sched

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/choird/headless/mood"
	"choir/internal/config"
	"choir/internal/cron"
)

// memStore is a Store in memory; what it holds survives a "restart" (a new
// Scheduler over the same memStore), like the Postgres table.
type memStore struct {
	mu    sync.Mutex
	fires map[string]Fire
	fail  error // returned by ClaimFire when set
}

var _ Store = (*memStore)(nil)

func newMem() *memStore { return &memStore{fires: map[string]Fire{}} }

func (m *memStore) ClaimFire(_ context.Context, f Fire) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return false, m.fail
	}
	k := f.Agent + "/" + f.Schedule + "/" + f.Key
	if _, ok := m.fires[k]; ok {
		return false, nil
	}
	m.fires[k] = f
	return true, nil
}

func (m *memStore) LastFire(_ context.Context, agent, schedule string) (time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var last time.Time
	for _, f := range m.fires {
		if f.Agent == agent && f.Schedule == schedule && f.Cron && f.At.After(last) {
			last = f.At
		}
	}
	return last, nil
}

// clock is a fake clock the tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func at(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04", s)
	if err != nil {
		panic(err)
	}
	return t
}

func nightly() Schedule {
	return Schedule{Agent: "run-1", ID: "nightly", Cron: cron.MustParse("0 3 * * *"), WorkItem: "w-0123456789ab", Mood: mood.Calm}
}

func start(t *testing.T, st Store, c *clock, scheds ...Schedule) *Scheduler {
	t.Helper()
	s := New(st, scheds, Options{Now: c.Now, Backoff: Backoff{Base: time.Minute, Max: 10 * time.Minute}})
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("Start = %v", err)
	}
	return s
}

func tick(t *testing.T, s *Scheduler) []Request {
	t.Helper()
	reqs, err := s.Tick(context.Background())
	if err != nil {
		t.Fatalf("Tick = %v", err)
	}
	return reqs
}

func TestCronFiresOncePerSlot(t *testing.T) {
	c := &clock{t: at("2026-01-01 12:00")}
	s := start(t, newMem(), c, nightly())
	if w := s.NextWake(); !w.Equal(at("2026-01-02 03:00")) {
		t.Errorf("NextWake = %s; want the next 03:00", w)
	}
	c.Set(at("2026-01-02 02:59"))
	if r := tick(t, s); len(r) != 0 {
		t.Fatalf("Tick before the slot = %+v; want nothing", r)
	}
	c.Set(at("2026-01-02 03:00"))
	r := tick(t, s)
	if len(r) != 1 || r[0].Key != "cron@2026-01-02T03:00:00Z" || r[0].WorkItem != "w-0123456789ab" || r[0].Mood != mood.Calm || r[0].Missed != 0 {
		t.Fatalf("Tick at the slot = %+v; want one request for 03:00", r)
	}
	if !strings.Contains(r[0].Trigger, "cron 0 3 * * * at 2026-01-02T03:00:00Z") {
		t.Errorf("Trigger = %q", r[0].Trigger)
	}
	if again := tick(t, s); len(again) != 0 {
		t.Errorf("second Tick at the same time = %+v; want nothing", again)
	}
	if w := s.NextWake(); !w.Equal(at("2026-01-03 03:00")) {
		t.Errorf("NextWake after firing = %s; want the next day", w)
	}
}

// A restarted choird (a new Scheduler over the same store) neither fires
// a slot again nor fires once per missed slot.
func TestRestart(t *testing.T) {
	store := newMem()
	c := &clock{t: at("2026-01-01 12:00")}
	s := start(t, store, c, nightly())
	c.Set(at("2026-01-02 03:00"))
	if r := tick(t, s); len(r) != 1 {
		t.Fatalf("Tick = %+v; want one", r)
	}

	// Restart at once: the 03:00 slot is not fired again.
	s2 := start(t, store, c, nightly())
	if r := tick(t, s2); len(r) != 0 {
		t.Fatalf("Tick after restart = %+v; want nothing (03:00 fired before)", r)
	}

	// Down for three nights: one fire, for the newest slot.
	c.Set(at("2026-01-05 09:00"))
	s3 := start(t, store, c, nightly())
	r := tick(t, s3)
	if len(r) != 1 || !r[0].At.Equal(at("2026-01-05 03:00")) || r[0].Missed != 2 {
		t.Fatalf("Tick after three nights down = %+v; want one request for 2026-01-05 03:00 with 2 missed", r)
	}
	if r := tick(t, s3); len(r) != 0 {
		t.Errorf("Tick again = %+v; want nothing", r)
	}

	// Two schedulers over one store (a choird that did not die): a slot
	// goes to whichever claims it first.
	a, b := start(t, store, c, nightly()), start(t, store, c, nightly())
	c.Set(at("2026-01-06 03:00"))
	ra, rb := tick(t, a), tick(t, b)
	if len(ra)+len(rb) != 1 {
		t.Errorf("two schedulers fired %d and %d; want one in all", len(ra), len(rb))
	}
}

func TestNewScheduleDoesNotFireThePast(t *testing.T) {
	c := &clock{t: at("2026-01-10 12:00")}
	s := start(t, newMem(), c, nightly())
	if r := tick(t, s); len(r) != 0 {
		t.Errorf("Tick of a schedule new to the store = %+v; want nothing before its first slot after Start", r)
	}
}

func TestLongDowntimeOfAFrequentSchedule(t *testing.T) {
	store := newMem()
	every := Schedule{Agent: "run-1", ID: "often", Cron: cron.MustParse("* * * * *"), Query: &Query{}, Mood: mood.Calm}
	c := &clock{t: at("2026-01-01 00:00")}
	s := start(t, store, c, every)
	c.Set(at("2026-01-01 00:01"))
	tick(t, s)
	c.Set(at("2026-03-01 10:30")) // two months: more slots than catch-up counts
	s = start(t, store, c, every)
	r := tick(t, s)
	if len(r) != 1 || !r[0].At.Equal(at("2026-03-01 10:30")) || r[0].Missed != maxMissedCount {
		t.Fatalf("Tick after two months = %+v; want one request for 10:30, missed capped at %d", r, maxMissedCount)
	}
}

func TestCronInAZone(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	sc := nightly()
	sc.Location = paris
	c := &clock{t: at("2026-07-01 00:00")}
	s := start(t, newMem(), c, sc)
	c.Set(at("2026-07-01 01:00")) // 03:00 CEST
	r := tick(t, s)
	if len(r) != 1 || r[0].Key != "cron@2026-07-01T01:00:00Z" {
		t.Fatalf("Tick at 03:00 Paris = %+v; want the slot keyed in UTC", r)
	}
}

func TestEvents(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: at("2026-01-01 12:00")}
	onReady := Schedule{Agent: "run-1", ID: "on-ready", On: WorkItemReady, Mood: mood.Calm}
	onLowRisk := Schedule{Agent: "run-1", ID: "on-low", On: WorkItemReady, Query: &Query{Risk: []string{"low"}}, Mood: mood.Calm}
	onFail := Schedule{Agent: "run-1", ID: "on-fail", On: RunFailed, WorkItem: "w-00000000000f", Mood: mood.Skeptical}
	other := Schedule{Agent: "run-2", ID: "on-ready", On: WorkItemReady, Mood: mood.Calm}
	s := start(t, newMem(), c, onReady, onLowRisk, onFail, other)

	fire := func(ev Event) []Request {
		t.Helper()
		r, err := s.Event(ctx, ev)
		if err != nil {
			t.Fatalf("Event(%+v) = %v", ev, err)
		}
		return r
	}
	r := fire(Event{ID: "rc-1", Kind: WorkItemReady, Agent: "run-1", WorkItem: "w-000000000001", Risk: "high"})
	if len(r) != 1 || r[0].Schedule != "on-ready" || r[0].WorkItem != "w-000000000001" || r[0].Key != "event:rc-1" || r[0].Event == nil {
		t.Fatalf("high-risk ready = %+v; want on-ready only", r)
	}
	r = fire(Event{ID: "rc-2", Kind: WorkItemReady, Agent: "run-1", WorkItem: "w-000000000002", Risk: "low"})
	if len(r) != 2 {
		t.Fatalf("low-risk ready = %+v; want on-ready and on-low", r)
	}
	if r := fire(Event{ID: "rc-2", Kind: WorkItemReady, Agent: "run-1", WorkItem: "w-000000000002", Risk: "low"}); len(r) != 0 {
		t.Errorf("the same event again = %+v; want nothing", r)
	}
	if r := fire(Event{ID: "rc-3", Kind: RunFailed, Agent: "run-1", WorkItem: "w-000000000001"}); len(r) != 0 {
		t.Errorf("a failure of another work item = %+v; want nothing", r)
	}
	r = fire(Event{ID: "rc-4", Kind: RunFailed, Agent: "run-1", WorkItem: "w-00000000000f", Run: "r-000000000009"})
	if len(r) != 1 || r[0].Mood != mood.Skeptical || !strings.Contains(r[0].Trigger, "event run_failed rc-4") {
		t.Errorf("failure of the watched work item = %+v; want one SKEPTICAL request", r)
	}
	if _, err := s.Event(ctx, Event{Kind: RunFailed, Agent: "run-1"}); err == nil {
		t.Error("Event without an id fired; want an error (its fire could not be keyed)")
	}
}

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Base: time.Minute, Max: 10 * time.Minute}
	for n, want := range []time.Duration{0, 0, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 10 * time.Minute, 10 * time.Minute} {
		if got := b.Delay(n); got != want {
			t.Errorf("Delay(%d) = %s; want %s", n, got, want)
		}
	}
	if got := b.Delay(1 << 30); got != 10*time.Minute {
		t.Errorf("Delay(huge) = %s; want the cap", got)
	}
}

func TestBackoffOnRepeatedFailureSignatures(t *testing.T) {
	ctx := context.Background()
	every := Schedule{Agent: "run-1", ID: "often", Cron: cron.MustParse("*/5 * * * *"), Query: &Query{}, Mood: mood.Calm}
	onReady := Schedule{Agent: "run-1", ID: "on-ready", On: WorkItemReady, Mood: mood.Calm}
	c := &clock{t: at("2026-01-01 00:00")}
	s := start(t, newMem(), c, every, onReady)

	c.Set(at("2026-01-01 00:05"))
	r := tick(t, s)
	if len(r) != 1 {
		t.Fatalf("Tick = %+v", r)
	}
	req := r[0]
	s.Report(req, Result{Failed: true, Signature: "sig-a"})
	if until, _ := s.BackedOff("run-1", "often"); !until.IsZero() {
		t.Fatalf("one failure backed off until %s; want no backoff", until)
	}
	c.Set(at("2026-01-01 00:06"))
	s.Report(req, Result{Failed: true, Signature: "sig-a"})
	until, n := s.BackedOff("run-1", "often")
	if !until.Equal(at("2026-01-01 00:07")) || n != 2 {
		t.Fatalf("second identical failure: BackedOff = %s, %d; want 00:07 (Base), 2", until, n)
	}
	s.Report(req, Result{Failed: true, Signature: "sig-a"})
	if until, n = s.BackedOff("run-1", "often"); !until.Equal(at("2026-01-01 00:08")) || n != 3 {
		t.Fatalf("third identical failure: BackedOff = %s, %d; want 00:08 (2×Base), 3", until, n)
	}
	// During the backoff the 00:10 slot waits.
	c.Set(at("2026-01-01 00:07"))
	if r := tick(t, s); len(r) != 0 {
		t.Fatalf("Tick in backoff = %+v; want nothing", r)
	}
	// After it, the missed slots fire once.
	c.Set(at("2026-01-01 00:16"))
	r = tick(t, s)
	if len(r) != 1 || !r[0].At.Equal(at("2026-01-01 00:15")) || r[0].Missed != 1 {
		t.Fatalf("Tick after the backoff = %+v; want one request for 00:15 with 1 missed", r)
	}
	// Another signature starts over at one failure: no backoff.
	s.Report(r[0], Result{Failed: true, Signature: "sig-b"})
	if until, _ := s.BackedOff("run-1", "often"); !until.IsZero() {
		t.Errorf("a new signature backed off until %s; want it reset", until)
	}
	s.Report(r[0], Result{Failed: true, Signature: "sig-b"})
	if until, _ := s.BackedOff("run-1", "often"); until.IsZero() {
		t.Error("a repeated new signature did not back off")
	}
	// Success resets.
	s.Report(r[0], Result{})
	if until, _ := s.BackedOff("run-1", "often"); !until.IsZero() {
		t.Errorf("a success left a backoff until %s", until)
	}

	// Events are held by a backoff, once per id, and fire when it ends.
	ev := Event{ID: "rc-9", Kind: WorkItemReady, Agent: "run-1", WorkItem: "w-000000000009"}
	first, _ := s.Event(ctx, Event{ID: "rc-8", Kind: WorkItemReady, Agent: "run-1", WorkItem: "w-000000000008"})
	s.Report(first[0], Result{Failed: true, Signature: "sig-c"})
	s.Report(first[0], Result{Failed: true, Signature: "sig-c"})
	for range 2 {
		if r, err := s.Event(ctx, ev); err != nil || len(r) != 0 {
			t.Fatalf("Event in backoff = %+v, %v; want it held", r, err)
		}
	}
	if w := s.NextWake(); !w.Equal(at("2026-01-01 00:17")) {
		t.Errorf("NextWake with a held event = %s; want the backoff's end 00:17", w)
	}
	c.Set(at("2026-01-01 00:17"))
	r = tick(t, s)
	var held []Request
	for _, x := range r {
		if x.Schedule == "on-ready" {
			held = append(held, x)
		}
	}
	if len(held) != 1 || held[0].WorkItem != "w-000000000009" {
		t.Fatalf("Tick after the backoff = %+v; want the held event once", r)
	}
}

func TestClaimErrorsRetry(t *testing.T) {
	store := newMem()
	c := &clock{t: at("2026-01-01 12:00")}
	s := start(t, store, c, nightly())
	c.Set(at("2026-01-02 03:00"))
	store.fail = errors.New("connection refused")
	if r, err := s.Tick(context.Background()); err == nil || len(r) != 0 || !strings.Contains(err.Error(), "nightly") {
		t.Fatalf("Tick with a failing store = %+v, %v; want an error naming the schedule and no request", r, err)
	}
	store.fail = nil
	if r := tick(t, s); len(r) != 1 {
		t.Fatalf("Tick after the store recovered = %+v; want the slot fired", r)
	}
}

func TestFromConfig(t *testing.T) {
	c := &config.Config{Agents: map[string]config.Agent{
		"b": {Schedules: []config.Schedule{{ID: "n", Cron: "0 3 * * *", TZ: "Europe/Paris", Query: &config.WorkQuery{Risk: []string{"low"}}}}},
		"a": {Schedules: []config.Schedule{{ID: "z", On: "run_failed", Mood: "SKEPTICAL"}, {ID: "y", Cron: "@daily", WorkItem: "w-0123456789ab"}}},
	}}
	got, err := FromConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Agent != "a" || got[0].ID != "y" || got[1].ID != "z" || got[2].Agent != "b" {
		t.Fatalf("FromConfig order = %+v; want by agent, then id", got)
	}
	if got[0].Mood != mood.Calm || got[1].Mood != mood.Skeptical || got[1].On != RunFailed || got[1].Cron != nil {
		t.Errorf("FromConfig = %+v", got[:2])
	}
	if got[2].Location == nil || got[2].Location.String() != "Europe/Paris" || got[2].Query == nil || got[2].Query.Risk[0] != "low" {
		t.Errorf("FromConfig(b) = %+v", got[2])
	}
	c.Agents["a"].Schedules[1].Cron = "61 * * * *"
	if _, err := FromConfig(c); err == nil || !strings.Contains(err.Error(), "agents.a.schedules[1].cron") {
		t.Errorf("FromConfig(bad cron) = %v; want an error at its path", err)
	}
}

// A request's trigger ends with its schedule, which ScheduleOf reads back
// (a run's trigger is all the director has of it after a restart).
func TestTriggerNamesTheSchedule(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: at("2026-01-01 02:00")}
	onFail := Schedule{Agent: "a", ID: "on-fail", On: RunFailed, Mood: mood.Skeptical}
	s := start(t, newMem(), c, nightly(), onFail)
	c.Set(at("2026-01-02 03:00"))
	reqs := tick(t, s)
	evs, err := s.Event(ctx, Event{ID: "run-failed:" + strings.Repeat("x", 300), Kind: RunFailed, Agent: "a"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(reqs, evs...) {
		if got, ok := ScheduleOf(r.Trigger); !ok || got != r.Schedule || len(r.Trigger) > MaxTrigger {
			t.Errorf("ScheduleOf(%q) = %q, %t; want %q within %d bytes", r.Trigger, got, ok, r.Schedule, MaxTrigger)
		}
	}
	for _, trig := range []string{"manual", "", "cron x (schedule )", "event (schedule Bad Name)", "(schedule a) more"} {
		if got, ok := ScheduleOf(trig); ok {
			t.Errorf("ScheduleOf(%q) = %q; want no schedule", trig, got)
		}
	}
}

// Report counts a run once: the same run again, or a run that ended
// before the last one counted, changes nothing (the director replays
// receipts after a restart).
func TestReportCountsARunOnce(t *testing.T) {
	c := &clock{t: at("2026-01-01 00:00")}
	onReady := Schedule{Agent: "a", ID: "on-ready", On: WorkItemReady, Mood: mood.Calm}
	s := start(t, newMem(), c, onReady)
	req := Request{Agent: "a", Schedule: "on-ready"}
	s.Report(req, Result{Failed: true, Signature: "sig-a", At: at("2026-01-01 00:01"), Run: "r-1"})
	s.Report(req, Result{Failed: true, Signature: "sig-a", At: at("2026-01-01 00:02"), Run: "r-2"})
	s.Report(req, Result{Failed: true, Signature: "sig-a", At: at("2026-01-01 00:02"), Run: "r-2"}) // again
	s.Report(req, Result{Failed: true, Signature: "sig-a", At: at("2026-01-01 00:01"), Run: "r-1"}) // older
	if until, n := s.BackedOff("a", "on-ready"); n != 2 || !until.Equal(at("2026-01-01 00:03")) {
		t.Errorf("BackedOff = %s, %d; want 00:03 (Base) after 2 failures", until, n)
	}
}
