package store

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// nextXID is the transaction id Postgres would assign next: it moves only
// when a transaction writes (a row changed, inserted or locked).
func nextXID(t *testing.T, s *Store) uint64 {
	t.Helper()
	var x uint64
	if err := s.pool.QueryRow(ctxT(t), `SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint`).Scan(&x); err != nil {
		t.Fatal(err)
	}
	return x
}

// TestIdleHeartbeatWritesNothing: a heartbeat's empty batch (an idle
// agent) is answered with the stored head and newest snapshot and writes
// nothing to the database (no transaction takes an id: no row changed or
// locked), its liveness included; a batch with events records its beat.
func TestIdleHeartbeatWritesNothing(t *testing.T) {
	s := newStore(t, Config{}, "alpha")
	ctx := ctxT(t)
	newSession(t, s, "s1")
	beat := &Liveness{SessionID: "s1", At: t0.Add(time.Minute), ConfigVersion: 7}
	if _, err := s.Replicate(ctx, "s1", Batch{Events: events(1, 4), Snapshot: []byte(`{"a":1}`), SnapshotRev: 3, Beat: beat}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetSession(ctx, "s1"); !got.LastHeartbeatAt.Equal(beat.At) || got.ConfigVersion != 7 {
		t.Errorf("after a batch with events: last heartbeat %v, config %d; want %v, 7 (written with the batch)", got.LastHeartbeatAt, got.ConfigVersion, beat.At)
	}
	before := nextXID(t, s)
	for i := range 20 {
		later := &Liveness{SessionID: "s1", At: t0.Add(time.Hour), ConfigVersion: 8}
		got, err := s.Replicate(ctx, "s1", Batch{Beat: later})
		if err != nil || got.Head != (Head{Rev: 4, Hash: hashOf(4)}) || got.SnapshotRev != 3 {
			t.Fatalf("idle heartbeat %d = %+v, %v; want head 4 and snapshot 3", i, got, err)
		}
	}
	if after := nextXID(t, s); after != before {
		t.Errorf("20 idle heartbeats moved the next transaction id from %d to %d; want no write", before, after)
	}
	if got, _ := s.GetSession(ctx, "s1"); !got.LastHeartbeatAt.Equal(beat.At) {
		t.Errorf("idle heartbeats wrote the last heartbeat %v; want it left at %v", got.LastHeartbeatAt, beat.At)
	}
	if _, err := s.Replicate(ctx, "s1", Batch{Events: events(5, 5)}); err != nil {
		t.Fatal(err)
	}
	if after := nextXID(t, s); after == before {
		t.Error("a batch with an event took no transaction id: the check above cannot see a write")
	}
	if err := s.EndSession(ctx, "s1", SessionCrashed, t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Replicate(ctx, "s1", Batch{}); !errors.Is(err, ErrSessionEnded) {
		t.Errorf("idle heartbeat of an ended session = %v; want ErrSessionEnded", err)
	}
	if _, err := s.Replicate(ctx, "nope", Batch{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("idle heartbeat of an unknown session = %v; want ErrNotFound", err)
	}
}

// TestRefusedBatchRecordsNoBeat: the beat is part of its batch's
// transaction: a refused batch leaves the last heartbeat as it was.
func TestRefusedBatchRecordsNoBeat(t *testing.T) {
	s := newStore(t, Config{}, "alpha")
	ctx := ctxT(t)
	newSession(t, s, "s1")
	if _, err := s.Replicate(ctx, "s1", Batch{Events: events(1, 2), Beat: &Liveness{SessionID: "s1", At: t0.Add(time.Second), ConfigVersion: 1}}); err != nil {
		t.Fatal(err)
	}
	var refused *RefusedError
	_, err := s.Replicate(ctx, "s1", Batch{Events: forge(events(3, 4), "hash"), Beat: &Liveness{SessionID: "s1", At: t0.Add(time.Hour), ConfigVersion: 2}})
	if !errors.As(err, &refused) {
		t.Fatalf("forged batch = %v; want refused", err)
	}
	if got, _ := s.GetSession(ctx, "s1"); !got.LastHeartbeatAt.Equal(t0.Add(time.Second)) || got.ConfigVersion != 1 {
		t.Errorf("after a refused batch: last heartbeat %v, config %d; want the earlier %v, 1", got.LastHeartbeatAt, got.ConfigVersion, t0.Add(time.Second))
	}
}

// TestRecordLiveness: one call records many active sessions' heartbeats,
// names those that are not active (ended, unknown), and never moves a
// recorded heartbeat back.
func TestRecordLiveness(t *testing.T) {
	s := newStore(t, Config{}, "alpha", "beta", "gamma")
	ctx := ctxT(t)
	for i, agent := range []string{"alpha", "beta", "gamma"} {
		if _, err := s.CreateSession(ctx, NewSession{SessionID: "s-" + agent, AgentID: agent, LeaseID: "l", StartedAt: t0.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.EndSession(ctx, "s-gamma", SessionStopped, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	at := t0.Add(10 * time.Minute)
	missing, err := s.RecordLiveness(ctx, []Liveness{
		{SessionID: "s-alpha", At: at, ConfigVersion: 3},
		{SessionID: "s-beta", At: at.Add(time.Second), ConfigVersion: 4},
		{SessionID: "s-gamma", At: at, ConfigVersion: 5},
		{SessionID: "s-nope", At: at, ConfigVersion: 5},
	})
	if err != nil || !slices.Equal(missing, []string{"s-gamma", "s-nope"}) {
		t.Fatalf("RecordLiveness() = %q, %v; want s-gamma and s-nope missing", missing, err)
	}
	for id, want := range map[string]struct {
		at time.Time
		v  int64
	}{"s-alpha": {at, 3}, "s-beta": {at.Add(time.Second), 4}} {
		if got, _ := s.GetSession(ctx, id); !got.LastHeartbeatAt.Equal(want.at) || got.ConfigVersion != want.v {
			t.Errorf("%s: last heartbeat %v, config %d; want %v, %d", id, got.LastHeartbeatAt, got.ConfigVersion, want.at, want.v)
		}
	}
	if got, _ := s.GetSession(ctx, "s-gamma"); !got.LastHeartbeatAt.IsZero() {
		t.Errorf("an ended session's last heartbeat was written: %v", got.LastHeartbeatAt)
	}
	// An older record (a batch that lost a race with a heartbeat's own
	// transaction) changes nothing.
	if missing, err := s.RecordLiveness(ctx, []Liveness{{SessionID: "s-alpha", At: at.Add(-time.Minute), ConfigVersion: 1}}); err != nil || len(missing) != 0 {
		t.Fatalf("older RecordLiveness() = %q, %v", missing, err)
	}
	if got, _ := s.GetSession(ctx, "s-alpha"); !got.LastHeartbeatAt.Equal(at) || got.ConfigVersion != 3 {
		t.Errorf("an older record moved s-alpha back to %v, config %d; want %v, 3", got.LastHeartbeatAt, got.ConfigVersion, at)
	}
	if missing, err := s.RecordLiveness(ctx, nil); err != nil || missing != nil {
		t.Errorf("RecordLiveness(nothing) = %q, %v", missing, err)
	}
}
