package store

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"choir/testkit/pgnative"
)

// replicaStores are two stores of two replicas on one native Postgres
// (PGlite has one session: no advisory lock can be told apart there).
func replicaStores(t *testing.T) (a, b *Store, db pgnative.Database) {
	t.Helper()
	db = pgnative.DB(t)
	ctx := ctxT(t)
	open := func() *Store {
		s, err := Open(ctx, Config{DSN: db.DSN})
		if err != nil {
			t.Fatalf("Open(%s) = %v", db.Backend, err)
		}
		t.Cleanup(s.Close)
		return s
	}
	a, b = open(), open()
	if err := a.Bootstrap(ctx, []string{"alpha"}, dims); err != nil {
		t.Fatalf("Bootstrap = %v", err)
	}
	return a, b, db
}

// TestLeaderLockAndFencing: one replica leads at a time; when the
// leader's lock session ends (as when its process dies) the other takes
// the lead with the next term, and the deposed one's late leader-only
// writes are refused while the new leader's go through.
func TestLeaderLockAndFencing(t *testing.T) {
	a, b, db := replicaStores(t)
	ctx := ctxT(t)
	m, _, err := a.QueueOutbox(ctx, NewOutbox{AgentID: "alpha", DM: "alice", Key: "k1", Body: json.RawMessage(`{}`)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.OutboxAttempt(ctx, m.ID, 0); err != nil {
		t.Fatalf("OutboxAttempt before any replica led = %v; want it unfenced", err)
	}

	la, err := a.TryLead(ctx, LeadOptions{Holder: "a"})
	if err != nil || la.Term() != 1 {
		t.Fatalf("a.TryLead() = %v; want term 1", err)
	}
	if _, err := b.TryLead(ctx, LeadOptions{Holder: "b"}); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("b.TryLead() while a leads = %v; want ErrNotLeader", err)
	}
	if err := la.Check(ctx); err != nil {
		t.Fatalf("a's Check() = %v", err)
	}
	if _, err := a.NextOutbox(ctx, "alice"); err != nil {
		t.Fatalf("the leader's NextOutbox() = %v", err)
	}

	// The server drops a's lock session: the lock is free.
	if err := pgnative.Terminate(db, " AND application_name = 'choird leader lock'"); err != nil {
		t.Fatal(err)
	}
	if err := la.Check(ctx); err == nil {
		t.Fatal("a's Check() after its session was ended = nil; want the lead lost")
	}
	lb, err := b.TryLead(ctx, LeadOptions{Holder: "b"})
	if err != nil || lb.Term() != 2 {
		t.Fatalf("b.TryLead() after a's session ended = %v; want term 2", err)
	}
	defer lb.Release(ctx)
	// a has not noticed yet: its pool still writes, with term 1.
	for name, write := range map[string]func() error{
		"OutboxAttempt":    func() error { return a.OutboxAttempt(ctx, m.ID, 0) },
		"OutboxPartSent":   func() error { return a.OutboxPartSent(ctx, m.ID, 0, 7, "", true) },
		"NextOutbox":       func() error { _, err := a.NextOutbox(ctx, "alice"); return err },
		"FailOutbox":       func() error { return a.FailOutbox(ctx, m.ID, "x") },
		"FailQueuedOutbox": func() error { _, err := a.FailQueuedOutbox(ctx, "alice", "x"); return err },
	} {
		if err := write(); !errors.Is(err, ErrDeposed) {
			t.Errorf("the deposed leader's %s = %v; want ErrDeposed", name, err)
		}
	}
	if got, _ := b.OutboxByKey(ctx, "alpha", "k1"); got.Status != OutboxQueued || got.PartsDone != 0 {
		t.Fatalf("after the deposed leader's writes the message is %+v; want it untouched", got)
	}
	if err := b.OutboxPartSent(ctx, m.ID, 0, 8, "", true); err != nil {
		t.Fatalf("the new leader's OutboxPartSent = %v", err)
	}
	if got, _ := b.OutboxByKey(ctx, "alpha", "k1"); got.Status != OutboxSent || len(got.TelegramIDs) != 1 || got.TelegramIDs[0] != 8 {
		t.Errorf("the message is %+v; want sent once, by the new leader (telegram id 8)", got)
	}
}

// TestLeaderFrozenLosesLock: a leader that stops talking on its lock's
// session (a frozen process) loses the lock after IdleTimeout, and the
// other replica leads.
func TestLeaderFrozenLosesLock(t *testing.T) {
	a, b, _ := replicaStores(t)
	ctx := ctxT(t)
	la, err := a.TryLead(ctx, LeadOptions{Holder: "a", IdleTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer la.Release(context.Background())
	deadline := time.Now().Add(time.Minute)
	for {
		lb, err := b.TryLead(ctx, LeadOptions{Holder: "b"})
		if err == nil {
			if lb.Term() != 2 {
				t.Errorf("b's term = %d; want 2", lb.Term())
			}
			lb.Release(ctx)
			break
		}
		if !errors.Is(err, ErrNotLeader) || time.Now().After(deadline) {
			t.Fatalf("b.TryLead() = %v; want the lead once a's idle session was ended", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := la.Check(ctx); err == nil {
		t.Error("the frozen leader's Check() = nil; want the lead lost")
	}
}

// TestLeaderReleaseHandsOver: a leader that stops cleanly frees the lock
// at once and fences its own store off.
func TestLeaderReleaseHandsOver(t *testing.T) {
	a, b, _ := replicaStores(t)
	ctx := ctxT(t)
	m, _, err := a.QueueOutbox(ctx, NewOutbox{AgentID: "alpha", DM: "alice", Key: "k1", Body: json.RawMessage(`{}`)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	la, err := a.TryLead(ctx, LeadOptions{Holder: "a"})
	if err != nil {
		t.Fatal(err)
	}
	la.Release(ctx)
	if err := a.OutboxAttempt(ctx, m.ID, 0); !errors.Is(err, ErrDeposed) {
		t.Errorf("OutboxAttempt after Release = %v; want ErrDeposed", err)
	}
	lb, err := b.TryLead(ctx, LeadOptions{Holder: "b"})
	if err != nil {
		t.Fatalf("b.TryLead() after a released = %v", err)
	}
	lb.Release(ctx)
}
