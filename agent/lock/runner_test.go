package lock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// settleBound is how long a test waits for the manager to reach a state
// before it gives up: generous, since it only bounds a hang.
const settleBound = 30 * time.Second

// A runner drives Acquire calls, each in its own goroutine, through a
// scenario, and waits for the manager to settle after every step: each call
// has either returned or is queued and has rechecked its lockset since the
// last change. Nothing sleeps: the manager's onChange hook wakes the runner.
type runner struct {
	t     *testing.T
	m     *Manager
	calls map[string]*call
	poke  chan struct{}
}

// A call is one Acquire running in its goroutine.
type call struct {
	owner  Owner
	cancel context.CancelFunc
	done   chan struct{} // closed when Acquire has returned
	held   *Held
	err    error
}

func (c *call) finished() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func newRunner(t *testing.T) *runner {
	r := &runner{t: t, m: &Manager{}, calls: map[string]*call{}, poke: make(chan struct{}, 1)}
	r.m.onChange = r.wake
	t.Cleanup(r.stop)
	return r
}

func (r *runner) wake() {
	select {
	case r.poke <- struct{}{}:
	default:
	}
}

// stop cancels what still waits, releases what is held and checks that every
// goroutine has returned.
func (r *runner) stop() {
	for _, c := range r.calls {
		c.cancel()
	}
	for id, c := range r.calls {
		r.await(id, c)
		c.held.Release()
	}
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	if len(r.m.held.nodes) != 0 || len(r.m.waiting) != 0 {
		r.t.Errorf("after releasing everything, manager = %+v; want it empty", r.m.snapshot())
	}
}

// await waits for call id to return.
func (r *runner) await(id string, c *call) {
	r.t.Helper()
	select {
	case <-c.done:
	case <-time.After(settleBound):
		r.t.Fatalf("call %s did not return within %v; manager: %+v", id, settleBound, r.m.Snapshot())
	}
}

// settle waits until every call has returned or sits in the queue blocked
// on the current state.
func (r *runner) settle() {
	r.t.Helper()
	deadline := time.After(settleBound)
	for !r.settled() {
		select {
		case <-r.poke:
		case <-deadline:
			r.t.Fatalf("lock manager did not settle within %v: %+v", settleBound, r.m.Snapshot())
		}
	}
}

func (r *runner) settled() bool {
	pending := 0
	for _, c := range r.calls {
		if !c.finished() {
			pending++
		}
	}
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	if len(r.m.waiting) != pending {
		return false
	}
	for _, w := range r.m.waiting {
		if w.checked != r.m.epoch {
			return false
		}
	}
	return true
}

// A step is one line of a scenario.
type step func(r *runner)

// ctxKind says which context a call runs under.
type ctxKind int

const (
	cancellable ctxKind = iota // cancelled by the cancel step
	expiring                   // its deadline passes at the cancel step
	doneBefore                 // cancelled before Acquire is called
)

func acquire(id string, owner Owner, reqs ...string) step {
	return acquireWith(cancellable, id, owner, reqs...)
}

func acquireWith(kind ctxKind, id string, owner Owner, reqs ...string) step {
	return func(r *runner) {
		r.t.Helper()
		var ctx context.Context
		var cancel context.CancelFunc
		switch kind {
		case cancellable, doneBefore:
			ctx, cancel = context.WithCancel(r.t.Context())
		case expiring:
			ctx, cancel = newExpiring(r.t.Context())
		}
		if kind == doneBefore {
			cancel()
		}
		c := &call{owner: owner, cancel: cancel, done: make(chan struct{})}
		r.calls[id] = c
		set := requests(r.t, reqs...)
		go func() {
			c.held, c.err = r.m.Acquire(ctx, owner, set)
			close(c.done)
			r.wake()
		}()
		r.settle()
	}
}

// requests parses "file:a:S"-style strings; a mode other than S or X
// becomes the invalid zero Mode.
func requests(t *testing.T, specs ...string) []Request {
	t.Helper()
	var set []Request
	for _, s := range specs {
		i := strings.LastIndexByte(s, ':')
		if i < 0 {
			t.Fatalf("request %q: want key:mode", s)
		}
		m, _ := ParseMode(s[i+1:])
		set = append(set, Request{Key: Key(s[:i]), Mode: m})
	}
	return set
}

func (r *runner) call(id string) *call {
	r.t.Helper()
	c, ok := r.calls[id]
	if !ok {
		r.t.Fatalf("no call %s in this scenario", id)
	}
	return c
}

// granted checks that call id holds its lockset.
func granted(id string) step {
	return func(r *runner) {
		r.t.Helper()
		c := r.call(id)
		if !c.finished() {
			r.t.Fatalf("Acquire %s (%s) is waiting; want granted; manager: %+v", id, c.owner, r.m.Snapshot())
		}
		if c.err != nil || c.held == nil {
			r.t.Fatalf("Acquire %s (%s) = %v, %v; want granted", id, c.owner, c.held, c.err)
		}
	}
}

// waiting checks that call id is queued.
func waiting(id string) step {
	return func(r *runner) {
		r.t.Helper()
		if c := r.call(id); c.finished() {
			r.t.Fatalf("Acquire %s (%s) returned %v, %v; want it waiting", id, c.owner, c.held, c.err)
		}
	}
}

// fails waits for call id to return and checks its error.
func fails(id string, want error) step {
	return func(r *runner) {
		r.t.Helper()
		c := r.call(id)
		r.await(id, c)
		if !errors.Is(c.err, want) || c.held != nil {
			r.t.Fatalf("Acquire %s (%s) = %v, %v; want nil, %v", id, c.owner, c.held, c.err, want)
		}
	}
}

func release(id string) step {
	return func(r *runner) {
		r.t.Helper()
		r.call(id).held.Release()
		r.settle()
	}
}

// cancel ends the context of call id (for an expiring call, its deadline
// passes) and waits for the call to return.
func cancel(id string) step {
	return func(r *runner) {
		r.t.Helper()
		c := r.call(id)
		c.cancel()
		r.await(id, c)
		r.settle()
	}
}

// state checks the §9.1 state of a key.
func state(key Key, want string) step {
	return func(r *runner) {
		r.t.Helper()
		if got := r.m.Snapshot().State(key); got != want {
			r.t.Fatalf("State(%s) = %s; want %s; manager: %+v", key, got, want, r.m.Snapshot())
		}
	}
}

// queue checks the owners of the waiting calls, in arrival order.
func queue(want ...Owner) step {
	return func(r *runner) {
		r.t.Helper()
		var got []Owner
		for _, w := range r.m.Snapshot().Waiting {
			got = append(got, w.Owner)
		}
		if !slices.Equal(got, want) {
			r.t.Fatalf("Snapshot().Waiting owners = %v; want %v", got, want)
		}
	}
}

// holdsNothing checks that owner appears nowhere among the holders.
func holdsNothing(owner Owner) step {
	return func(r *runner) {
		r.t.Helper()
		for _, l := range r.m.Snapshot().Held {
			if slices.Contains(l.Owners, owner) {
				r.t.Fatalf("%s holds %s %s; want nothing", owner, l.Key, l.Mode)
			}
		}
	}
}

// locks checks the canonical lockset of granted call id.
func locks(id string, want ...string) step {
	return func(r *runner) {
		r.t.Helper()
		got := fmt.Sprint(r.call(id).held.Locks())
		if w := fmt.Sprint(requests(r.t, want...)); got != w {
			r.t.Fatalf("Held(%s).Locks() = %s; want %s", id, got, w)
		}
	}
}

// expiringCtx is a context whose deadline passes when the test says so:
// once cancelled, its Err is context.DeadlineExceeded.
type expiringCtx struct{ context.Context }

func newExpiring(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	return expiringCtx{ctx}, cancel
}

func (c expiringCtx) Err() error {
	if c.Context.Err() != nil {
		return context.DeadlineExceeded
	}
	return nil
}
