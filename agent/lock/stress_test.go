package lock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// stressBound bounds the whole stress run: a hang, not a slow machine, is
// what makes it expire.
const stressBound = 2 * time.Minute

var stressKeys = []Key{
	"workspace", "file:a", "file:b", "file:src", "file:src/x.go", "file:src/y.go",
	"file:src/sub/z.go", "choirtmp", "browser_tab", "mem:m",
}

// TestStress runs the edge and many cores against one manager with random
// locksets, timeouts and TryAcquire calls. The invariants are checked under
// the manager's lock after every change, and again from outside by a shadow
// table of what each goroutine believes it holds.
func TestStress(t *testing.T) {
	workers, rounds := 16, 300
	if testing.Short() {
		rounds = 50
	}
	m := &Manager{}
	var inside []string // violations seen under m.mu
	m.onChange = func() {
		if v := violations(m.snapshot()); v != "" && len(inside) < 5 {
			inside = append(inside, v)
		}
	}
	var sh shadow
	ctx, cancel := context.WithTimeout(t.Context(), stressBound)
	defer cancel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)

	var wg sync.WaitGroup
	for i := range workers {
		owner := Edge
		if i > 0 {
			owner = Owner(fmt.Sprintf("core:job-%d", i))
		}
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		wg.Go(func() {
			for range rounds {
				if err := stressOp(ctx, m, &sh, owner, rng); err != nil {
					t.Errorf("%s: %v", owner, err)
					return
				}
			}
		})
	}
	wg.Wait()

	m.mu.Lock()
	defer m.mu.Unlock()
	for _, v := range append(inside, sh.violations...) {
		t.Error(v)
	}
	if s := m.snapshot(); len(s.Held) != 0 || len(s.Waiting) != 0 || len(m.held.nodes) != 0 {
		t.Errorf("after the run, Snapshot() = %+v; want empty", s)
	}
	t.Logf("%d grants, %d dirty reads", sh.grants, sh.dirtyReads)
}

// stressOp acquires one random lockset, holds it for a few scheduler turns
// and releases it. It returns an error only for an unexpected outcome.
func stressOp(ctx context.Context, m *Manager, sh *shadow, owner Owner, rng *rand.Rand) error {
	set := randomSet(owner, rng)
	var h *Held
	var err error
	switch n := rng.IntN(10); {
	case n < 2:
		h, err = m.TryAcquire(owner, set)
		if errors.Is(err, ErrWouldBlock) {
			return nil
		}
	case n < 4:
		opCtx, cancel := context.WithTimeout(ctx, time.Duration(rng.IntN(200))*time.Microsecond)
		h, err = m.Acquire(opCtx, owner, set)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil
		}
	default:
		h, err = m.Acquire(ctx, owner, set)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("run did not finish within %v; manager: %+v", stressBound, m.Snapshot())
	}
	if err != nil {
		return fmt.Errorf("Acquire(%v) = %v", set, err)
	}
	defer h.Release()
	sh.enter(owner, h.Locks())
	for range rng.IntN(4) {
		runtime.Gosched()
	}
	sh.leave(owner)
	if rng.IntN(4) == 0 {
		h.Release() // early, then again by the defer
	}
	return nil
}

// randomSet returns 1 to 3 random requests; the edge mostly reads files, as
// it does while cores run.
func randomSet(owner Owner, rng *rand.Rand) []Request {
	set := make([]Request, 1+rng.IntN(3))
	for i := range set {
		k := stressKeys[rng.IntN(len(stressKeys))]
		mode := S
		if rng.IntN(3) == 0 {
			mode = X
		}
		if owner.IsEdge() && rng.IntN(3) > 0 {
			k, mode = stressKeys[1+rng.IntN(6)], S
		}
		set[i] = Request{Key: k, Mode: mode}
	}
	return set
}

// violations checks a snapshot against the lock invariants and describes
// the first one broken, or returns "".
func violations(s Snapshot) string {
	type lock struct {
		key   Key
		mode  Mode
		owner Owner
	}
	var all []lock
	for _, l := range s.Held {
		if l.Mode == X && len(l.Owners) != 1 {
			return fmt.Sprintf("%s held X by %v", l.Key, l.Owners)
		}
		for i, o := range l.Owners {
			if i > 0 && l.Owners[i-1] == o {
				return fmt.Sprintf("%s held twice by %s", l.Key, o)
			}
			all = append(all, lock{l.Key, l.Mode, o})
		}
	}
	for i, a := range all {
		for _, b := range all[i+1:] {
			if a.owner != b.owner && excludes(a.key, a.mode, a.owner, b.key, b.mode, b.owner) {
				return fmt.Sprintf("%s %s by %s beside %s %s by %s", a.key, a.mode, a.owner, b.key, b.mode, b.owner)
			}
		}
	}
	return ""
}

// excludes is the rule of the package comment, written independently of
// the manager: different owners may not hold overlapping resources with an
// X among them, except the edge's file S under a core's workspace X.
func excludes(ka Key, ma Mode, oa Owner, kb Key, mb Mode, ob Owner) bool {
	if ma == S && mb == S || !resourcesOverlap(ka, kb) {
		return false
	}
	dirty := func(ws Key, wm Mode, wo Owner, f Key, fm Mode, fo Owner) bool {
		return ws == Workspace && wm == X && strings.HasPrefix(string(wo), "core:") &&
			strings.HasPrefix(string(f), "file:") && fm == S && fo == Edge
	}
	return !dirty(ka, ma, oa, kb, mb, ob) && !dirty(kb, mb, ob, ka, ma, oa)
}

func resourcesOverlap(a, b Key) bool {
	pa, fa := a.Path()
	pb, fb := b.Path()
	switch {
	case a == b:
		return true
	case a == Workspace:
		return fb
	case b == Workspace:
		return fa
	case fa && fb:
		return strings.HasPrefix(pa+"/", pb+"/") || strings.HasPrefix(pb+"/", pa+"/")
	}
	return false
}

// A shadow records what each goroutine believes it holds, between Acquire
// returning and Release being called, and checks it from outside.
type shadow struct {
	mu         sync.Mutex
	held       map[Owner][]Request
	violations []string
	grants     int
	dirtyReads int
}

func (sh *shadow) enter(owner Owner, set []Request) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.held == nil {
		sh.held = map[Owner][]Request{}
	}
	sh.grants++
	for other, locks := range sh.held {
		for _, a := range set {
			for _, b := range locks {
				if excludes(a.Key, a.Mode, owner, b.Key, b.Mode, other) && len(sh.violations) < 5 {
					sh.violations = append(sh.violations,
						fmt.Sprintf("%s got %s while %s holds %s", owner, a, other, b))
				}
				if owner == Edge && a.Mode == S && b == (Request{Workspace, X}) {
					sh.dirtyReads++
				}
			}
		}
	}
	sh.held[owner] = set
}

func (sh *shadow) leave(owner Owner) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	delete(sh.held, owner)
}
