package sched

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Store keeps the claimed fires (choird/store's sched_fires).
type Store interface {
	// ClaimFire records f and reports whether this call recorded it:
	// false when its (agent, schedule, key) was claimed before, by this
	// process or an earlier one.
	ClaimFire(ctx context.Context, f Fire) (bool, error)
	// LastFire returns the slot of the newest claimed cron fire of the
	// schedule, the zero Time when it has none.
	LastFire(ctx context.Context, agent, schedule string) (time.Time, error)
}

// Backoff is the wait after repeated identical failures.
type Backoff struct {
	Base time.Duration // the wait after the second identical failure
	Max  time.Duration // the cap
}

// DefaultBackoff waits 5 minutes after the second identical failure,
// doubling up to 6 hours.
var DefaultBackoff = Backoff{Base: 5 * time.Minute, Max: 6 * time.Hour}

// Delay is the wait after n identical failures in a row: none for n < 2,
// then Base, 2×Base, 4×Base, ... never more than Max.
func (b Backoff) Delay(n int) time.Duration {
	if n < 2 {
		return 0
	}
	d := b.Base
	for i := 2; i < n && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

// Result is how a requested run ended, for backoff.
type Result struct {
	Failed bool
	// Signature is the failure signature (mood.Signature); a failure
	// without one counts as its own signature, "".
	Signature string
	// At is when it ended; zero means Options.Now().
	At time.Time
	// Run is the run's id. Report counts a run once: a result for the run
	// counted last, or one that ended before it, changes nothing (the
	// director replays the receipts at its start and may then report a run
	// it has counted already).
	Run string
}

// Options tune a Scheduler; zero fields take defaults.
type Options struct {
	Now     func() time.Time // default time.Now
	Backoff Backoff          // default DefaultBackoff
}

// maxMissedCount bounds how far catch-up counts missed slots.
const maxMissedCount = 10000

// Scheduler turns schedules and events into run requests. It is safe for
// concurrent use.
type Scheduler struct {
	store Store
	opt   Options

	mu     sync.Mutex
	scheds []*state
	byKey  map[string]*state
}

type state struct {
	Schedule
	next    time.Time // the next cron slot; zero before Start
	fails   int       // identical failures in a row
	sig     string    // their signature
	until   time.Time // backoff end
	pending []Event   // events held by the backoff
	last    time.Time // when the newest reported run ended
	lastRun string    // its id
}

func skey(agent, id string) string { return agent + "/" + id }

// New returns a Scheduler of the given schedules over store.
func New(store Store, schedules []Schedule, opt Options) *Scheduler {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Backoff == (Backoff{}) {
		opt.Backoff = DefaultBackoff
	}
	s := &Scheduler{store: store, opt: opt, byKey: map[string]*state{}}
	for _, sc := range schedules {
		st := &state{Schedule: sc}
		s.scheds = append(s.scheds, st)
		s.byKey[skey(sc.Agent, sc.ID)] = st
	}
	return s
}

// Start reads each cron schedule's newest fire back from the store and
// sets its next slot after it (after now, for a schedule that never
// fired). Call it once before Tick.
func (s *Scheduler) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opt.Now()
	for _, st := range s.scheds {
		if st.Cron == nil {
			continue
		}
		last, err := s.store.LastFire(ctx, st.Agent, st.ID)
		if err != nil {
			return fmt.Errorf("schedule %s of agent %s: last fire: %w", st.ID, st.Agent, err)
		}
		from := now
		if !last.IsZero() {
			from = last
		}
		st.next = st.Cron.Next(from, st.Location)
	}
	return nil
}

// Tick returns the requests due now: cron schedules with a slot at or
// before now (once, for the newest such slot) and events held by a backoff
// that has ended. Each request's fire was claimed; a fire another process
// claimed first is left out.
func (s *Scheduler) Tick(ctx context.Context) ([]Request, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opt.Now()
	var out []Request
	var errs []error
	for _, st := range s.scheds {
		if now.Before(st.until) {
			continue
		}
		if len(st.pending) > 0 {
			held := st.pending
			st.pending = nil
			for i := range held {
				r, ok, err := s.fireEvent(ctx, st, &held[i])
				if err != nil {
					errs = append(errs, err)
					st.pending = append(st.pending, held[i:]...) // retried next Tick
					break
				}
				if ok {
					out = append(out, r)
				}
			}
		}
		if st.Cron == nil || st.next.IsZero() || st.next.After(now) {
			continue
		}
		slot, missed := s.latestSlot(st, now)
		r := Request{Agent: st.Agent, Schedule: st.ID, Key: FireKey(slot, nil), WorkItem: st.WorkItem, Query: st.Query,
			Mood: st.Mood, Trigger: trigger(st.ID, fmt.Sprintf("cron %s at %s", st.Cron, slot.UTC().Format(time.RFC3339))), At: slot, Missed: missed}
		ok, err := s.store.ClaimFire(ctx, Fire{Agent: st.Agent, Schedule: st.ID, Key: r.Key, Cron: true, At: slot})
		if err != nil {
			errs = append(errs, fmt.Errorf("schedule %s of agent %s: claim %s: %w", st.ID, st.Agent, r.Key, err))
			continue // the slot stays due: retried next Tick
		}
		st.next = st.Cron.Next(slot, st.Location)
		if ok {
			out = append(out, r)
		}
	}
	return out, errors.Join(errs...)
}

// latestSlot returns the newest slot of st at or before now (st.next is
// one) and how many earlier slots it skips.
func (s *Scheduler) latestSlot(st *state, now time.Time) (time.Time, int) {
	slot, missed := st.next, 0
	for missed < maxMissedCount {
		n := st.Cron.Next(slot, st.Location)
		if n.IsZero() || n.After(now) {
			return slot, missed
		}
		slot, missed = n, missed+1
	}
	// Very long downtime of a frequent schedule: find the newest slot
	// from a window before now rather than walking every slot.
	for _, w := range []time.Duration{time.Hour, 24 * time.Hour, 32 * 24 * time.Hour, 367 * 24 * time.Hour} {
		n := st.Cron.Next(now.Add(-w), st.Location)
		if n.IsZero() || n.After(now) {
			continue
		}
		for {
			m := st.Cron.Next(n, st.Location)
			if m.IsZero() || m.After(now) {
				return n, missed
			}
			n = m
		}
	}
	return slot, missed
}

// Event returns the requests the event fires: one per event schedule of
// its agent whose On is its kind and whose work item or query matches its
// work item. A schedule in backoff holds the event until the backoff ends
// (Tick returns it then). An event whose id fired before fires nothing.
func (s *Scheduler) Event(ctx context.Context, ev Event) ([]Request, error) {
	if ev.ID == "" || ev.Agent == "" || ev.Kind == "" {
		return nil, fmt.Errorf("event %+v: id, agent and kind are required", ev)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ev.At.IsZero() {
		ev.At = s.opt.Now()
	}
	now := s.opt.Now()
	var out []Request
	var errs []error
	for _, st := range s.scheds {
		if st.On != ev.Kind || st.Agent != ev.Agent || (st.WorkItem != "" && st.WorkItem != ev.WorkItem) || !st.Query.matches(ev.Risk, ev.Parent) {
			continue
		}
		if now.Before(st.until) {
			if !heldAlready(st.pending, ev.ID) {
				st.pending = append(st.pending, ev)
			}
			continue
		}
		r, ok, err := s.fireEvent(ctx, st, &ev)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			out = append(out, r)
		}
	}
	return out, errors.Join(errs...)
}

func heldAlready(held []Event, id string) bool {
	for _, e := range held {
		if e.ID == id {
			return true
		}
	}
	return false
}

func (s *Scheduler) fireEvent(ctx context.Context, st *state, ev *Event) (Request, bool, error) {
	e := *ev
	r := Request{Agent: st.Agent, Schedule: st.ID, Key: FireKey(time.Time{}, &e), WorkItem: e.WorkItem, Mood: st.Mood,
		Trigger: trigger(st.ID, fmt.Sprintf("event %s %s", e.Kind, e.ID)), At: e.At, Event: &e}
	ok, err := s.store.ClaimFire(ctx, Fire{Agent: st.Agent, Schedule: st.ID, Key: r.Key, At: e.At})
	if err != nil {
		return Request{}, false, fmt.Errorf("schedule %s of agent %s: claim %s: %w", st.ID, st.Agent, r.Key, err)
	}
	return r, ok, nil
}

// Report tells the scheduler how the run of a request ended, for backoff.
func (s *Scheduler) Report(r Request, res Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.byKey[skey(r.Agent, r.Schedule)]
	if !ok {
		return
	}
	at := res.At
	if at.IsZero() {
		at = s.opt.Now()
	}
	if res.Run != "" && (res.Run == st.lastRun || at.Before(st.last)) {
		return // counted already, or older than what was
	}
	st.last, st.lastRun = at, res.Run
	switch {
	case !res.Failed:
		st.fails, st.sig, st.until = 0, "", time.Time{}
		return
	case st.fails > 0 && res.Signature == st.sig:
		st.fails++
	default:
		st.fails, st.sig = 1, res.Signature
	}
	st.until = at.Add(s.opt.Backoff.Delay(st.fails))
}

// BackedOff returns when the schedule's backoff ends and how many
// identical failures caused it; the zero Time when it is not backed off.
func (s *Scheduler) BackedOff(agent, schedule string) (time.Time, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.byKey[skey(agent, schedule)]
	if !ok || !s.opt.Now().Before(st.until) {
		return time.Time{}, 0
	}
	return st.until, st.fails
}

// NextWake returns when Tick next has something to do: the earliest cron
// slot, or backoff end of a schedule with a slot or events waiting; the
// zero Time when nothing is scheduled. A slot in a backoff counts at the
// backoff's end.
func (s *Scheduler) NextWake() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var wake time.Time
	for _, st := range s.scheds {
		var t time.Time
		switch {
		case len(st.pending) > 0:
			t = st.until
		case st.Cron != nil && !st.next.IsZero():
			t = st.next
			if st.until.After(t) {
				t = st.until
			}
		default:
			continue
		}
		if wake.IsZero() || t.Before(wake) {
			wake = t
		}
	}
	return wake
}

// Schedules returns the schedules, sorted as given to New.
func (s *Scheduler) Schedules() []Schedule {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Schedule, len(s.scheds))
	for i, st := range s.scheds {
		out[i] = st.Schedule
	}
	return out
}
