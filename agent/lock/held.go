package lock

import "slices"

// Held is a granted lockset. Release gives it back.
type Held struct {
	m        *Manager // nil for an empty lockset
	owner    Owner
	locks    []Request         // canonical, never modified after the grant
	released bool              // guarded by m.mu
	small    [smallSet]Request // backs locks for small sets: one allocation per call
}

// smallSet is the size of lockset that Acquire holds without a second allocation.
const smallSet = 4

// Owner returns the owner that holds the set.
func (h *Held) Owner() Owner { return h.owner }

// Locks returns the canonical lockset: keys cleaned, each key once in the
// strongest mode asked for, sorted by key.
func (h *Held) Locks() []Request { return slices.Clone(h.locks) }

// Release gives back every lock of the set at once and wakes the waiters.
// It is idempotent and safe for concurrent use, so it can be deferred and
// also called early; Release on a nil *Held does nothing.
func (h *Held) Release() {
	if h == nil || h.m == nil {
		return
	}
	m := h.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if h.released {
		return
	}
	h.released = true
	for _, r := range h.locks {
		m.held.drop(h.owner, r)
	}
	delete(m.holding, h.owner)
	if len(m.waiting) > 0 {
		m.wakeAll()
	}
	m.changed()
}
