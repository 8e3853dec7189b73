package lock

import (
	"fmt"
	"slices"
	"strings"
)

// A Snapshot is the state of a Manager at one instant, for operators and
// tests.
type Snapshot struct {
	Held    []HeldLock // every held key, sorted by key
	Waiting []Waiter   // every blocked Acquire, in arrival order
}

// A HeldLock is one held key: its mode and holders, sorted.
type HeldLock struct {
	Key    Key
	Mode   Mode
	Owners []Owner
}

// A Waiter is one blocked Acquire: its owner and canonical lockset.
type Waiter struct {
	Owner Owner
	Locks []Request
}

// Snapshot returns the current holders and waiters.
func (m *Manager) Snapshot() Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snapshot()
}

// snapshot is Snapshot with mu held.
func (m *Manager) snapshot() Snapshot {
	var s Snapshot
	for k, n := range m.held.nodes {
		if n.mode == 0 {
			continue
		}
		owners := slices.Clone(n.owners)
		slices.Sort(owners)
		s.Held = append(s.Held, HeldLock{Key: k, Mode: n.mode, Owners: owners})
	}
	slices.SortFunc(s.Held, func(a, b HeldLock) int { return strings.Compare(string(a.Key), string(b.Key)) })
	for _, w := range m.waiting {
		s.Waiting = append(s.Waiting, Waiter{Owner: w.held.owner, Locks: w.held.Locks()})
	}
	return s
}

// State returns the state of k in the spec's words: "FREE", "S_LOCKED(n)"
// or "X_LOCKED(owner)".
func (s Snapshot) State(k Key) string {
	for _, l := range s.Held {
		if l.Key == k {
			return l.State()
		}
	}
	return "FREE"
}

// State returns "S_LOCKED(n)" or "X_LOCKED(owner)".
func (l HeldLock) State() string {
	if l.Mode == X {
		return fmt.Sprintf("X_LOCKED(%s)", strings.Join(ownerStrings(l.Owners), ","))
	}
	return fmt.Sprintf("S_LOCKED(%d)", len(l.Owners))
}

func ownerStrings(owners []Owner) []string {
	s := make([]string, len(owners))
	for i, o := range owners {
		s[i] = string(o)
	}
	return s
}
