// Package approvaltest holds fakes for tests of the approval pipeline and
// of its users (the gateway): an in-memory Store that behaves as the
// Postgres one does (decided once, oldest first), and a Clock that moves
// only when the test advances it. Import it only from _test.go files.
package approvaltest

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"sync"
	"time"

	"choir/choird/approval"
)

// Store is an in-memory approval.Store.
type Store struct {
	mu   sync.Mutex
	rows map[string]approval.Approval
	now  func() time.Time
	seq  int
}

var _ approval.Store = (*Store)(nil)

// NewStore returns an empty store whose rows are stamped by now (nil: the
// real time).
func NewStore(now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{rows: map[string]approval.Approval{}, now: now}
}

// Create stores a pending request with a new UUID-shaped id, or a.ID
// when set; an id in use is ErrExists with the stored approval.
func (s *Store) Create(ctx context.Context, a approval.Approval) (approval.Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.rows[a.ID]; ok && a.ID != "" {
		return old, fmt.Errorf("approval %s: %w", a.ID, approval.ErrExists)
	}
	if a.ID == "" {
		var b [16]byte
		rand.Read(b[:])
		a.ID = fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	}
	a.Status = approval.Pending
	a.CreatedAt = s.now().Add(time.Duration(s.seq) * time.Microsecond) // distinct, ordered
	s.seq++
	a.ResolvedAt, a.ResolvedBy = time.Time{}, ""
	if a.Payload == nil {
		a.Payload = []byte("{}")
	}
	s.rows[a.ID] = a
	return a, nil
}

// Resolve decides a pending request once.
func (s *Store) Resolve(ctx context.Context, id string, status approval.Status, by string) (approval.Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.rows[id]
	if !ok {
		return approval.Approval{}, fmt.Errorf("approval %s: %w", id, approval.ErrNotFound)
	}
	if a.Status != approval.Pending {
		return a, fmt.Errorf("approval %s: %w", id, approval.ErrAlreadyDecided)
	}
	a.Status, a.ResolvedBy, a.ResolvedAt = status, by, s.now()
	s.rows[id] = a
	return a, nil
}

// Get returns one approval.
func (s *Store) Get(ctx context.Context, id string) (approval.Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.rows[id]
	if !ok {
		return approval.Approval{}, fmt.Errorf("approval %s: %w", id, approval.ErrNotFound)
	}
	return a, nil
}

// Pending returns the undecided requests of agentID ("" all), oldest first.
func (s *Store) Pending(ctx context.Context, agentID string) ([]approval.Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []approval.Approval
	for _, a := range s.rows {
		if a.Status == approval.Pending && (agentID == "" || a.AgentID == agentID) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(x, y approval.Approval) int { return x.CreatedAt.Compare(y.CreatedAt) })
	return out, nil
}

// Clock is an approval.Clock that moves only on Advance, which runs the
// functions that fell due, in order, on the caller's goroutine: when
// Advance returns, every timeout it passed has been handled.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*timer
}

var _ approval.Clock = (*Clock)(nil)

type timer struct {
	c       *Clock
	at      time.Time
	f       func()
	stopped bool
}

// NewClock returns a clock showing start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f for d from now.
func (c *Clock) AfterFunc(d time.Duration, f func()) approval.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

// Stop cancels the call; it reports whether it had not run yet.
func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

// Pending is how many scheduled calls have neither run nor been stopped.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.stopped {
			n++
		}
	}
	return n
}

// Advance moves the clock by d, running each call that falls due.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var next *timer
		for _, t := range c.timers {
			if !t.stopped && !t.at.After(end) && (next == nil || t.at.Before(next.at)) {
				next = t
			}
		}
		if next == nil {
			c.now = end
			c.mu.Unlock()
			return
		}
		next.stopped = true
		if next.at.After(c.now) {
			c.now = next.at
		}
		c.mu.Unlock()
		next.f()
	}
}
