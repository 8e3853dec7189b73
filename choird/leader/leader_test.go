package leader

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

var errBusy = errors.New("busy")

// fakeLock hands out leads after busy refusals; it records what happened
// in order.
type fakeLock struct {
	mu     sync.Mutex
	busy   int   // refusals before a lead
	fail   error // one other error before the busy ones
	term   int64
	events []string
	check  func(ctx context.Context) error
}

var _ Locker = (*fakeLock)(nil)

func (f *fakeLock) TryLead(ctx context.Context) (Lead, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		err := f.fail
		f.fail = nil
		f.events = append(f.events, "error")
		return nil, err
	}
	if f.busy > 0 {
		f.busy--
		f.events = append(f.events, "busy")
		return nil, errBusy
	}
	f.term++
	f.events = append(f.events, "lead")
	return &fakeLead{f: f, term: f.term}, nil
}

func (f *fakeLock) record(e string) {
	f.mu.Lock()
	f.events = append(f.events, e)
	f.mu.Unlock()
}

func (f *fakeLock) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.events...)
}

type fakeLead struct {
	f    *fakeLock
	term int64
}

var _ Lead = (*fakeLead)(nil)

func (l *fakeLead) Term() int64 { return l.term }
func (l *fakeLead) Check(ctx context.Context) error {
	if l.f.check != nil {
		return l.f.check(ctx)
	}
	return nil
}
func (l *fakeLead) Release(context.Context) { l.f.record("release") }

func elector(f *fakeLock, started chan<- int64) *Elector {
	return &Elector{
		Lock:   f,
		IsBusy: func(err error) bool { return errors.Is(err, errBusy) },
		Lead: func(ctx context.Context, term int64) {
			f.record("parts start")
			started <- term
			<-ctx.Done()
			f.record("parts stop")
		},
		Poll: time.Millisecond, Check: time.Millisecond, CheckTimeout: 50 * time.Millisecond, Lease: time.Minute,
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestFollowerLeadsWhenFreed: a follower tries until the lock is free,
// runs the leader's parts with its term, and at stop stops them before it
// releases the lock.
func TestFollowerLeadsWhenFreed(t *testing.T) {
	f := &fakeLock{busy: 3, fail: errors.New("connection refused")}
	started := make(chan int64, 1)
	e := elector(f, started)
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { res <- e.Run(ctx) }()
	if term := <-started; term != 1 {
		t.Errorf("the parts started with term %d; want 1", term)
	}
	cancel()
	if err := <-res; err != nil {
		t.Errorf("Run() after its context ended = %v; want nil", err)
	}
	want := []string{"error", "busy", "busy", "busy", "lead", "parts start", "parts stop", "release"}
	if got := f.log(); !equal(got, want) {
		t.Errorf("events = %q; want %q", got, want)
	}
}

// TestLeaderStopsPartsWhenLockLost: a check that fails, or one that does
// not answer within CheckTimeout, loses the lead: the parts stop before the
// lock is released, and Run says the lead was lost.
func TestLeaderStopsPartsWhenLockLost(t *testing.T) {
	for name, check := range map[string]func(ctx context.Context) error{
		"fails": func(context.Context) error { return errors.New("the lock's session is gone") },
		"hangs": func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
	} {
		t.Run(name, func(t *testing.T) {
			f := &fakeLock{check: check}
			started := make(chan int64, 1)
			err := elector(f, started).Run(context.Background())
			if !errors.Is(err, ErrLost) {
				t.Fatalf("Run() = %v; want ErrLost", err)
			}
			want := []string{"lead", "parts start", "parts stop", "release"}
			if got := f.log(); !equal(got, want) {
				t.Errorf("events = %q; want %q", got, want)
			}
		})
	}
}

// TestLeaseStopsPartsWithoutACheck: when no check succeeds within the
// lease (a check stuck longer than the lease), the parts stop on the
// process's own clock, before the stuck check returns.
func TestLeaseStopsPartsWithoutACheck(t *testing.T) {
	unblock := make(chan struct{})
	f := &fakeLock{check: func(context.Context) error { <-unblock; return nil }}
	started := make(chan int64, 1)
	e := elector(f, started)
	e.Lease, e.CheckTimeout = 10*time.Millisecond, time.Hour
	stopped := make(chan struct{})
	e.Lead = func(ctx context.Context, term int64) {
		<-ctx.Done()
		close(stopped)
	}
	res := make(chan error, 1)
	go func() { res <- e.Run(context.Background()) }()
	<-stopped // the lease stopped the parts while the check still hangs
	close(unblock)
	if err := <-res; !errors.Is(err, ErrLost) {
		t.Fatalf("Run() = %v; want ErrLost", err)
	}
}
