package lock

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// A Manager grants locksets to owners. The zero Manager is ready to use; it
// must not be copied after first use.
type Manager struct {
	mu      sync.Mutex
	cond    sync.Cond       // L is &mu; broadcast whenever a waiter may proceed
	held    table           // what is held, key by key
	holding map[Owner]*Held // the lockset each owner holds
	waiting []*waiter       // blocked Acquire calls, in arrival order
	epoch   uint64          // counts broadcasts

	// onChange, if set, is called with mu held after every change of the
	// holdings or of the queue, and after every waiter's recheck. Tests use
	// it to wait for a state without sleeping.
	onChange func()
}

// A waiter is one blocked Acquire call.
type waiter struct {
	held    *Held  // the lockset it wants
	checked uint64 // the epoch at which it last found itself blocked
}

// Acquire takes every lock of reqs for owner, or none. It waits while any of
// them conflicts with a lock held by another owner or with an earlier waiting
// request, never holding part of the set meanwhile. It returns ctx.Err() if
// ctx is done before the set is granted, including when it is done already;
// the caller then holds nothing.
//
// An empty lockset is granted at once, whatever ctx: a tool that needs no
// lock never waits. An owner that already holds a lockset gets ErrUpgrade if
// reqs asks X on a key it holds in S, and ErrHolding otherwise; if two calls
// by one owner wait at the same time, they take turns. Invalid keys, modes
// and owners are refused with ErrInvalidKey, ErrInvalidMode and
// ErrInvalidOwner.
//
// Release the returned Held on every path, typically with defer.
func (m *Manager) Acquire(ctx context.Context, owner Owner, reqs []Request) (*Held, error) {
	h, err := m.prepare(owner, reqs)
	if err != nil || len(h.locks) == 0 {
		return h, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init()
	if err := m.checkOwner(h); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if m.grantable(h, nil) {
		m.grant(h)
		return h, nil
	}
	if err := m.wait(ctx, h); err != nil {
		return nil, err
	}
	return h, nil
}

// TryAcquire is Acquire without waiting: when the set cannot be granted at
// once, it fails with ErrWouldBlock.
func (m *Manager) TryAcquire(owner Owner, reqs []Request) (*Held, error) {
	h, err := m.prepare(owner, reqs)
	if err != nil || len(h.locks) == 0 {
		return h, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init()
	if err := m.checkOwner(h); err != nil {
		return nil, err
	}
	if !m.grantable(h, nil) {
		return nil, fmt.Errorf("%w: %s for %s", ErrWouldBlock, formatSet(h.locks), owner)
	}
	m.grant(h)
	return h, nil
}

// prepare checks owner and returns the canonical lockset of reqs, not yet granted.
func (m *Manager) prepare(owner Owner, reqs []Request) (*Held, error) {
	if _, err := ParseOwner(string(owner)); err != nil {
		return nil, err
	}
	h := &Held{owner: owner}
	set, err := canonical(h.small[:0], reqs)
	if err != nil {
		return nil, fmt.Errorf("lockset for %s: %w", owner, err)
	}
	if len(set) > 0 {
		h.m, h.locks = m, set
	}
	return h, nil
}

func (m *Manager) init() {
	if m.holding == nil {
		m.cond.L = &m.mu
		m.holding = map[Owner]*Held{}
	}
}

// checkOwner refuses a lockset from an owner that holds one already.
func (m *Manager) checkOwner(h *Held) error {
	cur := m.holding[h.owner]
	if cur == nil {
		return nil
	}
	for _, r := range h.locks {
		if r.Mode == X && slices.Contains(cur.locks, Request{Key: r.Key, Mode: S}) {
			return fmt.Errorf("%w: %s holds %s and asks %s; release it and acquire X afresh",
				ErrUpgrade, h.owner, Request{Key: r.Key, Mode: S}, r)
		}
	}
	return fmt.Errorf("%w: %s holds %s and asks %s; a lane holds one lockset at a time",
		ErrHolding, h.owner, formatSet(cur.locks), formatSet(h.locks))
}

// grantable reports whether h can be granted now. self is h's place in the
// queue, or nil for a request that has not queued: only the waiters ahead
// of it count.
func (m *Manager) grantable(h *Held, self *waiter) bool {
	if m.holding[h.owner] != nil {
		return false // another call by the same owner got in first
	}
	for _, r := range h.locks {
		if m.held.blocks(h.owner, r) {
			return false
		}
	}
	for _, w := range m.waiting {
		if w == self {
			break
		}
		for _, r := range h.locks {
			if m.held.dirtyRead(h.owner, r) {
				continue
			}
			for _, q := range w.held.locks {
				if conflicts(q, r) {
					return false
				}
			}
		}
	}
	return true
}

func (m *Manager) grant(h *Held) {
	for _, r := range h.locks {
		m.held.grant(h.owner, r)
	}
	m.holding[h.owner] = h
	m.changed()
}

// wait queues h and blocks until it is granted (nil) or ctx is done
// (ctx.Err()). Called with mu held; returns with mu held.
func (m *Manager) wait(ctx context.Context, h *Held) error {
	w := &waiter{held: h, checked: m.epoch}
	m.waiting = append(m.waiting, w)
	m.changed()
	stop := context.AfterFunc(ctx, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.wakeAll()
	})
	defer stop()
	for {
		m.cond.Wait()
		if err := ctx.Err(); err != nil {
			m.leave(w)
			return err
		}
		if m.grantable(h, w) {
			m.leave(w)
			m.grant(h)
			return nil
		}
		w.checked = m.epoch
		m.changed()
	}
}

// leave takes w out of the queue. Its requests no longer hold back the
// waiters behind it, so they all recheck.
func (m *Manager) leave(w *waiter) {
	m.waiting = slices.DeleteFunc(m.waiting, func(x *waiter) bool { return x == w })
	m.wakeAll()
	m.changed()
}

// wakeAll makes every waiter recheck its lockset.
func (m *Manager) wakeAll() {
	m.epoch++
	m.cond.Broadcast()
}

func (m *Manager) changed() {
	if m.onChange != nil {
		m.onChange()
	}
}
