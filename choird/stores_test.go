package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"choir/choird/lifecycle"
	"choir/choird/store"
	"choir/internal/chain"
	"choir/internal/rpc"
	"choir/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestReplicationThroughTheStore: the lifecycle's Store over Postgres
// refuses a forged batch as a *lifecycle.ReplicationRefused naming the
// stored head (which HEARTBEAT turns into a 409 the agent resends from),
// stores nothing of it, then takes the real agent's events, and the
// session's events read back verify.
func TestReplicationThroughTheStore(t *testing.T) {
	st, ctx := alphaStore(t)
	if _, err := st.CreateSession(ctx, store.NewSession{SessionID: "s1", AgentID: "alpha", LeaseID: "l", StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	var log []rpc.Event
	prev := ""
	for i := range 6 {
		e := rpc.Event{Rev: int64(i + 1), Type: "UserMsg", Lane: "edge", Time: time.Now().UTC().Truncate(time.Microsecond),
			Payload: json.RawMessage(fmt.Sprintf(`{"text":"message %d","n":1e%d}`, i, i))}
		e.Hash, _ = chain.Hash(prev, chain.Event(e))
		log, prev = append(log, e), e.Hash
	}
	a := sessionStore{st}
	got, err := a.Replicate(ctx, "s1", lifecycle.Replication{Events: log[:3]})
	if err != nil || got.Head != (rpc.ChainHead{Rev: 3, Hash: log[2].Hash}) || got.SnapshotRev != -1 {
		t.Fatalf("Replicate(1-3) = %+v, %v; want head 3, no snapshot", got, err)
	}
	forged := append([]rpc.Event(nil), log[3:5]...)
	forged[0].Payload = json.RawMessage(`{"text":"forged"}`)
	_, err = a.Replicate(ctx, "s1", lifecycle.Replication{Events: forged})
	var refused *lifecycle.ReplicationRefused
	if !errors.As(err, &refused) || refused.Head != (rpc.ChainHead{Rev: 3, Hash: log[2].Hash}) || !strings.Contains(refused.Reason, "event 4") {
		t.Fatalf("Replicate(forged 4-5) = %v; want ReplicationRefused at head 3 naming event 4", err)
	}
	snap := json.RawMessage(`{"reference_summary_edge":{},"reference_summary_core":{},"event_window_boundary":{"edge":1},"skill_state":{},"lane_state":[],"open_jobs":[]}`)
	got, err = a.Replicate(ctx, "s1", lifecycle.Replication{Events: log[3:], Snapshot: snap, SnapshotRev: 5})
	if err != nil || got.Head.Rev != 6 || got.SnapshotRev != 5 {
		t.Fatalf("the real agent's 4-6 with a snapshot of 5 = %+v, %v; want head 6, snapshot 5", got, err)
	}
	stored, err := st.EventsAfter(ctx, "s1", 0)
	if err != nil || len(stored) != 6 {
		t.Fatalf("EventsAfter = %d events, %v; want 6", len(stored), err)
	}
	evs := make([]chain.Event, len(stored))
	for i, e := range stored {
		evs[i] = chain.Event{Rev: e.Rev, Type: e.Type, Lane: e.Lane, Payload: e.Payload, Hash: e.Hash, Time: e.Time}
	}
	if err := chain.Verify("", evs); err != nil {
		t.Errorf("the stored log does not verify: %v", err)
	}
}

// alphaStore is a store on the test database with agent alpha
// bootstrapped (embedding dimensions 3), dropped when the test ends, and a
// context bounding the test's work with it.
func alphaStore(t *testing.T) (*store.Store, context.Context) {
	t.Helper()
	db := pgtest.DB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	st, err := store.Open(ctx, store.Config{DSN: db.DSN, Namespace: db.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Drop(context.Background()); st.Close() })
	if err := st.Bootstrap(ctx, []string{"alpha"}, 3); err != nil {
		t.Fatal(err)
	}
	return st, ctx
}
