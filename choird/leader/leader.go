// Package leader runs the election between choird replicas (issue 26):
// two choird processes against one Postgres, of which one, the leader,
// runs what must run once (the Telegram pollers, the outbox senders, the
// headless director and scheduler), while both serve choirctl and their
// agents.
//
// The lock is the store's (choird/store/leader.go): a Postgres advisory
// lock held by a session of its own, and a term bumped at each
// acquisition that fences the leader-only writes. This package only
// decides when to try, when to start and stop the leader's parts, and
// when the lead counts as lost.
//
// # Never two pollers
//
// The follower starts the leader's parts only after TryLead succeeded,
// that is after Postgres freed the lock, which it does only once the old
// leader's lock session ended. The old leader, if it still runs, checks
// its lock every Check (with CheckTimeout) and stops its parts at the
// first check that fails or cannot finish, and stops them anyway once
// Lease has passed since its last good check, a deadline it keeps on its
// own clock: Lease is shorter than the idle_session_timeout its lock
// session was given, so a leader that cannot reach Postgres (or was
// frozen) has stopped polling before Postgres can free its lock to
// anyone else.
package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Lead is a held lock: the store's *store.Lead.
type Lead interface {
	Term() int64
	Check(ctx context.Context) error
	Release(ctx context.Context)
}

// Locker tries the lock once; it returns ErrNotLeader (its own sentinel,
// told apart by IsBusy) when another replica holds it.
type Locker interface {
	TryLead(ctx context.Context) (Lead, error)
}

// ErrLost is what Run returns when this replica led and lost the lead
// while it ran: its leader parts have stopped.
var ErrLost = errors.New("lost the lead")

// Default timings: a follower tries every Poll; a leader checks every
// Check, gives up on a check after CheckTimeout, and stops its parts when
// no check succeeded for Lease. IdleTimeout is the lock session's
// idle_session_timeout, after which Postgres frees a silent leader's lock.
const (
	DefaultPoll         = time.Second
	DefaultCheck        = time.Second
	DefaultCheckTimeout = 2 * time.Second
	DefaultLease        = 5 * time.Second
	DefaultIdleTimeout  = 8 * time.Second
)

// Elector campaigns for the lead and runs the leader's parts while it
// holds it.
type Elector struct {
	Lock Locker
	// IsBusy reports the Locker's "another replica leads" error.
	IsBusy func(error) bool
	// Lead runs the leader-only parts until ctx ends, then stops them
	// and returns. It is called once per term.
	Lead func(ctx context.Context, term int64)
	// Changed, when set, is told each change: leading (term) or not (0).
	Changed func(term int64)

	Poll, Check, CheckTimeout, Lease time.Duration
	Log                              *slog.Logger
	// After makes timers (tests use a fake clock); nil is time.After.
	After func(time.Duration) <-chan time.Time
	// Now reads the clock; nil is time.Now.
	Now func() time.Time
}

func (e *Elector) defaults() {
	if e.Poll <= 0 {
		e.Poll = DefaultPoll
	}
	if e.Check <= 0 {
		e.Check = DefaultCheck
	}
	if e.CheckTimeout <= 0 {
		e.CheckTimeout = DefaultCheckTimeout
	}
	if e.Lease <= 0 {
		e.Lease = DefaultLease
	}
	if e.Log == nil {
		e.Log = slog.New(slog.DiscardHandler)
	}
	if e.After == nil {
		e.After = time.After
	}
	if e.Now == nil {
		e.Now = time.Now
	}
}

// Run campaigns until ctx ends (then it returns nil, having stopped the
// leader's parts and released the lock) or until the lead it won is lost
// (then it returns ErrLost, the parts stopped): a replica that lost the
// lead stops, and its supervisor starts it again as a follower.
func (e *Elector) Run(ctx context.Context) error {
	e.defaults()
	for {
		l, err := e.Lock.TryLead(ctx)
		if err == nil {
			return e.lead(ctx, l)
		}
		if ctx.Err() != nil {
			return nil
		}
		if e.IsBusy == nil || !e.IsBusy(err) {
			e.Log.Warn("could not try the leader lock; trying again", "error", err.Error(), "retry_in", e.Poll)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-e.After(e.Poll):
		}
	}
}

// lead runs the leader's parts under l until ctx ends or l is lost.
func (e *Elector) lead(ctx context.Context, l Lead) error {
	term := l.Term()
	e.Log.Info("leading: starting the Telegram pollers, outbox senders and schedulers", "term", term)
	if e.Changed != nil {
		e.Changed(term)
	}
	partsCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Lead(partsCtx, term)
	}()
	lost := e.watch(ctx, l, stop)
	stop()
	<-done
	if e.Changed != nil {
		e.Changed(0)
	}
	rctx, cancel := context.WithTimeout(context.Background(), e.CheckTimeout)
	l.Release(rctx)
	cancel()
	if lost != nil {
		e.Log.Error("lost the lead: the leader's parts are stopped", "term", term, "error", lost.Error())
		return fmt.Errorf("%w (term %d): %v", ErrLost, term, lost)
	}
	e.Log.Info("stopped leading", "term", term)
	return nil
}

// watch checks l every Check until ctx ends (nil) or the lead is lost
// (why): a check that fails or does not answer within CheckTimeout. A
// timer on this process's own clock stops the parts (stopParts) when
// Lease passes after the start of the last good check, without waiting
// for a check to say so: a process frozen past its lease stops its parts
// as soon as it runs again.
func (e *Elector) watch(ctx context.Context, l Lead, stopParts func()) error {
	expired := make(chan struct{})
	lease := time.AfterFunc(e.Lease, func() { stopParts(); close(expired) })
	defer lease.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-expired:
			return fmt.Errorf("no check of the lock succeeded within the lease (%s)", e.Lease)
		case <-e.After(e.Check):
		}
		start := e.Now()
		cctx, cancel := context.WithTimeout(ctx, e.CheckTimeout)
		err := l.Check(cctx)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if !lease.Reset(e.Lease - e.Now().Sub(start)) {
			return fmt.Errorf("no check of the lock succeeded within the lease (%s)", e.Lease)
		}
	}
}
