package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/choird/lifecycle"
	"choir/choird/store"
	"choir/internal/chain"
	"choir/internal/rpc"
)

// runningSessions stands in for the lifecycle: it runs sessions and
// records those the store lacks, as Manager.RecordRunning does.
type runningSessions struct {
	store lifecycle.Store
	runs  []lifecycle.SessionRecord
}

func (f *runningSessions) RecordRunning(ctx context.Context) (int, error) {
	active, err := f.store.ActiveSessions(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
next:
	for _, r := range f.runs {
		for _, a := range active {
			if a.SessionID == r.SessionID {
				continue next
			}
		}
		if err := f.store.CreateSession(ctx, r); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// syncBuffer is a log destination the repair's goroutine and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func chainOf(n int) []rpc.Event {
	out := make([]rpc.Event, n)
	prev := ""
	for i := range out {
		e := rpc.Event{Rev: int64(i + 1), Type: "UserMsg", Lane: "edge", Time: time.Now().UTC().Truncate(time.Microsecond),
			Payload: json.RawMessage(fmt.Sprintf(`{"text":"message %d"}`, i+1))}
		e.Hash, _ = chain.Hash(prev, chain.Event(e))
		out[i], prev = e, e.Hash
	}
	return out
}

// repairFixture is a store with agent alpha's session s1 holding events
// 1-5, the repair over it, and the lifecycle's view of the store.
func repairFixture(t *testing.T) (*store.Store, *schemaRepair, *repairingStore, []rpc.Event, *syncBuffer, context.Context) {
	t.Helper()
	st, ctx := alphaStore(t)
	a := sessionStore{st}
	rec := lifecycle.SessionRecord{SessionID: "s1", AgentID: "alpha", LeaseID: "s1", Status: lifecycle.StatusActive,
		StartedAt: time.Now(), Bindings: rpc.ResourceBindings{Workspace: "ws"}, Image: "choir-alpha:v1"}
	if err := a.CreateSession(ctx, rec); err != nil {
		t.Fatal(err)
	}
	log := chainOf(7)
	if _, err := a.Replicate(ctx, "s1", lifecycle.Replication{Events: log[:5]}); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	rep := &schemaRepair{st: st, agents: []string{"alpha"}, dims: 3, sessions: &runningSessions{store: a, runs: []lifecycle.SessionRecord{rec}},
		log: slog.New(slog.NewJSONHandler(logs, nil)), base: ctx}
	t.Cleanup(rep.wg.Wait)
	return st, rep, &repairingStore{Store: a, repair: rep}, log, logs, ctx
}

// afterTheLoss checks what the agent sees once choird repaired: its next
// heartbeat (6-7) is refused naming head 0, and its resend of 1-7 is
// stored and verifies.
func afterTheLoss(t *testing.T, st *store.Store, rs *repairingStore, log []rpc.Event, ctx context.Context) {
	t.Helper()
	if missing, err := st.MissingTables(ctx, []string{"alpha"}); err != nil || len(missing) != 0 {
		t.Fatalf("after the repair MissingTables = %q, %v; want none", missing, err)
	}
	_, err := rs.Replicate(ctx, "s1", lifecycle.Replication{Events: log[5:7]})
	var refused *lifecycle.ReplicationRefused
	if !errors.As(err, &refused) || refused.Head != (rpc.ChainHead{}) {
		t.Fatalf("heartbeat 6-7 after the repair = %v; want refused naming head 0", err)
	}
	got, err := rs.Replicate(ctx, "s1", lifecycle.Replication{Events: log})
	if err != nil || got.Head != (rpc.ChainHead{Rev: 7, Hash: log[6].Hash}) {
		t.Fatalf("the resend of 1-7 = %+v, %v; want head 7", got, err)
	}
	s, err := st.GetSession(ctx, "s1")
	if err != nil || s.Status != store.SessionActive || s.AgentID != "alpha" || s.ImageVersion != "choir-alpha:v1" {
		t.Errorf("session s1 after the repair = %+v, %v; want it active for alpha with its image", s, err)
	}
}

// TestProbeRecreatesLostSchemas: the database comes back empty (every
// schema and role of the namespace dropped). The Postgres probe's ping
// succeeds, it finds the tables missing, logs a warning naming them,
// bootstraps, and the running session is recorded again, so the agent's
// heartbeat is refused naming head 0 and its resend from 1 is stored.
func TestProbeRecreatesLostSchemas(t *testing.T) {
	st, rep, rs, log, logs, ctx := repairFixture(t)
	probe := postgresProbe(st, rep)
	if err := probe(ctx); err != nil {
		t.Fatalf("probe on a whole database = %v; want nil", err)
	}
	if err := st.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := probe(ctx); err != nil {
		t.Fatalf("probe after the database lost its schemas = %v; want it to repair them", err)
	}
	if out := logs.String(); !strings.Contains(out, `"level":"WARN"`) || !strings.Contains(out, "_control.sessions") || !strings.Contains(out, "_alpha.memory_documents") {
		t.Errorf("the log says %s; want a warning naming the missing tables", out)
	}
	afterTheLoss(t, st, rs, log, ctx)
}

// TestFailedHeartbeatTriggersTheRepair: without waiting for the probe, a
// heartbeat that fails because the tables are gone starts the repair.
func TestFailedHeartbeatTriggersTheRepair(t *testing.T) {
	st, rep, rs, log, _, ctx := repairFixture(t)
	if err := st.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := rs.Replicate(ctx, "s1", lifecycle.Replication{Events: log[5:7]})
	if !store.IsMissingSchema(err) {
		t.Fatalf("heartbeat into a dropped namespace = %v; want SQLSTATE 42P01 or 3F000", err)
	}
	rep.wg.Wait()
	afterTheLoss(t, st, rs, log, ctx)
}

// TestRepairIsRateLimited: a database that keeps losing its tables is not
// repaired in a loop: within the gap a second loss is reported by the
// probe (degraded, naming the tables) and failed heartbeats start nothing.
func TestRepairIsRateLimited(t *testing.T) {
	st, rep, rs, log, _, ctx := repairFixture(t)
	rep.gap = time.Hour
	probe := postgresProbe(st, rep)
	if err := st.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := probe(ctx); err != nil {
		t.Fatalf("first probe after the loss = %v; want it repaired", err)
	}
	if err := st.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	err := probe(ctx)
	if err == nil || !strings.Contains(err.Error(), "_control.sessions") || !strings.Contains(err.Error(), "tried less than 1h0m0s ago") {
		t.Errorf("second probe within the gap = %v; want an error naming the missing tables and the wait", err)
	}
	for range 3 {
		rs.Replicate(ctx, "s1", lifecycle.Replication{Events: log[5:7]})
	}
	rep.wg.Wait()
	if missing, err := st.MissingTables(ctx, []string{"alpha"}); err != nil || len(missing) == 0 {
		t.Errorf("after failed heartbeats within the gap MissingTables = %q, %v; want the tables still missing (no repair)", missing, err)
	}
}

// An agent the running config gains while choird runs (a config applied)
// gets its schema and role at the next probe, with the running config's
// dimensions; the agents choird had keep theirs.
func TestProbeBootstrapsAnAgentAddedToTheConfig(t *testing.T) {
	st, rep, _, _, _, ctx := repairFixture(t)
	agents := []string{"alpha"}
	rep.targets = func() ([]string, int) { return agents, 3 }
	if err := rep.check(ctx); err != nil {
		t.Fatalf("check with nothing new = %v", err)
	}
	agents = []string{"alpha", "gamma"}
	if missing, _ := st.MissingTables(ctx, agents); len(missing) == 0 {
		t.Fatal("gamma's tables exist before the probe")
	}
	if err := rep.check(ctx); err != nil {
		t.Fatalf("the probe after gamma was added = %v; want its schema made", err)
	}
	if missing, err := st.MissingTables(ctx, agents); err != nil || len(missing) != 0 {
		t.Errorf("after the probe MissingTables = %q, %v; want gamma's tables made", missing, err)
	}
}
