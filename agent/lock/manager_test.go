package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func mustAcquire(t *testing.T, m *Manager, owner Owner, specs ...string) *Held {
	t.Helper()
	h, err := m.Acquire(t.Context(), owner, requests(t, specs...))
	if err != nil {
		t.Fatalf("Acquire(%s, %v) = %v", owner, specs, err)
	}
	return h
}

func TestTryAcquire(t *testing.T) {
	tests := []struct {
		name  string
		held  []string // core:a holds these
		owner Owner
		reqs  []string
		err   error
	}{
		{"free", nil, coreB, []string{"file:a:X"}, nil},
		{"shared", []string{"file:a:S"}, coreB, []string{"file:a:S"}, nil},
		{"exclusive", []string{"file:a:X"}, coreB, []string{"file:a:S"}, ErrWouldBlock},
		{"hierarchy", []string{"file:a:S"}, coreB, []string{"workspace:X"}, ErrWouldBlock},
		{"dirty read", []string{"workspace:X"}, Edge, []string{"file:a:S"}, nil},
		{"upgrade", []string{"file:a:S"}, coreA, []string{"file:a:X"}, ErrUpgrade},
		{"holding", []string{"file:a:S"}, coreA, []string{"file:b:S"}, ErrHolding},
		{"empty", []string{"workspace:X"}, coreB, nil, nil},
		{"invalid", nil, coreB, []string{"disk:X"}, ErrInvalidKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m Manager
			if len(tt.held) > 0 {
				defer mustAcquire(t, &m, coreA, tt.held...).Release()
			}
			h, err := m.TryAcquire(tt.owner, requests(t, tt.reqs...))
			defer h.Release()
			if !errors.Is(err, tt.err) || (err == nil) != (h != nil) {
				t.Fatalf("TryAcquire(%s, %v) = %v, %v; want error %v", tt.owner, tt.reqs, h, err, tt.err)
			}
		})
	}
}

func TestTryAcquireRespectsQueue(t *testing.T) {
	r := newRunner(t)
	acquire("c1", coreA, "file:a:S")(r)
	acquire("c2", coreB, "file:a:X")(r)
	if h, err := r.m.TryAcquire(coreC, requests(t, "file:a:S")); !errors.Is(err, ErrWouldBlock) {
		h.Release()
		t.Fatalf("TryAcquire(core:c, file:a:S) behind a waiting X = %v; want ErrWouldBlock", err)
	}
}

// TestReleaseOnPanic checks that a deferred Release frees the set when the
// tool panics.
func TestReleaseOnPanic(t *testing.T) {
	var m Manager
	runTool := func() {
		h := mustAcquire(t, &m, coreA, "workspace:X", "choirtmp:X")
		defer h.Release()
		panic("tool crashed")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("runTool did not panic")
			}
		}()
		runTool()
	}()
	if s := m.Snapshot(); len(s.Held) != 0 {
		t.Fatalf("after the panic, Snapshot().Held = %+v; want empty", s.Held)
	}
	mustAcquire(t, &m, coreB, "workspace:X").Release()
}

// TestReleaseConcurrent releases one set from several goroutines at once, as
// a deferred Release and a timeout path might: the set is freed exactly once.
func TestReleaseConcurrent(t *testing.T) {
	var m Manager
	other := mustAcquire(t, &m, coreB, "file:a:S")
	defer other.Release()
	h := mustAcquire(t, &m, coreA, "file:a:S", "file:b:X")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(h.Release)
	}
	wg.Wait()
	s := m.Snapshot()
	if got := s.State("file:a"); got != "S_LOCKED(1)" {
		t.Errorf("State(file:a) = %s; want S_LOCKED(1)", got)
	}
	if got := s.State("file:b"); got != "FREE" {
		t.Errorf("State(file:b) = %s; want FREE", got)
	}
	if h, err := m.TryAcquire(coreC, requests(t, "workspace:X")); !errors.Is(err, ErrWouldBlock) {
		h.Release()
		t.Errorf("TryAcquire(workspace:X) beside core:b's file:a S = %v; want ErrWouldBlock", err)
	}
}

// TestDeadline waits on a lock that is never released under a real
// deadline: Acquire returns DeadlineExceeded and leaves nothing behind.
func TestDeadline(t *testing.T) {
	var m Manager
	defer mustAcquire(t, &m, coreA, "workspace:X").Release()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	h, err := m.Acquire(ctx, coreB, requests(t, "file:a:S", "choirtmp:X"))
	if !errors.Is(err, context.DeadlineExceeded) || h != nil {
		t.Fatalf("Acquire under a passed deadline = %v, %v; want nil, DeadlineExceeded", h, err)
	}
	s := m.Snapshot()
	if len(s.Waiting) != 0 || s.State("choirtmp") != "FREE" {
		t.Fatalf("after the deadline, Snapshot() = %+v; want core:a's workspace X only", s)
	}
}

func TestSnapshot(t *testing.T) {
	r := newRunner(t)
	acquire("c1", coreB, "file:a:S", "workspace:S")(r)
	acquire("c2", coreA, "file:a:S")(r)
	acquire("c3", coreC, "workspace:X", "choirtmp:X")(r)
	acquire("c4", Edge, "file:./a:X")(r)
	got := fmt.Sprintf("%+v", r.m.Snapshot())
	want := "{Held:[{Key:file:a Mode:S Owners:[core:a core:b]} {Key:workspace Mode:S Owners:[core:b]}] " +
		"Waiting:[{Owner:core:c Locks:[choirtmp:X workspace:X]} {Owner:edge Locks:[file:a:X]}]}"
	if got != want {
		t.Errorf("Snapshot() = %s\nwant %s", got, want)
	}
}

func TestHeldLockState(t *testing.T) {
	tests := []struct {
		l    HeldLock
		want string
	}{
		{HeldLock{"file:a", S, []Owner{coreA}}, "S_LOCKED(1)"},
		{HeldLock{"file:a", S, []Owner{coreA, Edge}}, "S_LOCKED(2)"},
		{HeldLock{"workspace", X, []Owner{coreA}}, "X_LOCKED(core:a)"},
	}
	for _, tt := range tests {
		if got := tt.l.State(); got != tt.want {
			t.Errorf("%+v.State() = %s; want %s", tt.l, got, tt.want)
		}
	}
}
