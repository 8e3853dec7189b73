package lifecycle

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"choir/choird/lease"
	"choir/internal/rpc"
)

// TestRecordRunningAfterTheStoreLostItsSessions: Postgres came back empty
// (the sessions and their events gone). RecordRunning records the running
// session again exactly as it started (id, lease id, bindings, leases,
// image; active) but not one being stopped; the agent's next heartbeat is
// refused naming head 0, and its resend from revision 1 is stored whole.
func TestRecordRunningAfterTheStoreLostItsSessions(t *testing.T) {
	m, r, ctx := handlerManager(t, 4)
	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r.StartedAt, r.Image = started, "choir-a-1:v7"
	r.Bindings = rpc.ResourceBindings{Workspace: "ws-a"}
	r.Resources = []lease.Resource{{Kind: lease.Workspace, Name: "ws-a"}}
	stopping := &Run{AgentID: "b-1", SessionID: "s-2", state: StateStopping, StartedAt: started,
		ready: make(chan struct{}), exited: make(chan struct{}), lanes: map[string]rpc.StatusReq{}}
	m.register(stopping)

	log := agentLog(5)
	if _, err := m.HandleHeartbeat(ctx, beat(log, 1, 5)); err != nil {
		t.Fatal(err)
	}
	st := m.Store.(*memStore)
	st.mu.Lock()
	st.sessions, st.events = map[string]SessionRecord{}, map[string][]rpc.Event{} // the database came back empty
	st.mu.Unlock()

	n, err := m.RecordRunning(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("RecordRunning() = %d, %v; want 1 session recorded", n, err)
	}
	st.mu.Lock()
	got, ok := st.sessions["s-1"]
	_, stoppingRecorded := st.sessions["s-2"]
	st.mu.Unlock()
	want := SessionRecord{SessionID: "s-1", AgentID: "a-1", LeaseID: "s-1", Status: StatusActive, StartedAt: started,
		Bindings: r.Bindings, Leases: r.Resources, Image: "choir-a-1:v7"}
	if !ok || got.SessionID != want.SessionID || got.AgentID != want.AgentID || got.LeaseID != want.LeaseID || got.Status != want.Status ||
		!got.StartedAt.Equal(started) || got.Bindings.Workspace != "ws-a" || len(got.Leases) != 1 || got.Leases[0] != want.Leases[0] ||
		got.Image != want.Image || got.Resume {
		t.Errorf("the store holds s-1 as %+v (recorded %v); want %+v", got, ok, want)
	}
	if stoppingRecorded {
		t.Errorf("the session being stopped (s-2) was recorded again; want it left to its end")
	}

	// The agent carries on from where it was acknowledged: choird's empty
	// log refuses it naming head 0, and the resend from 1 is stored.
	log = agentLog(7)
	_, err = m.HandleHeartbeat(ctx, beat(log, 6, 7))
	rerr, refused := refusedAt(err)
	if !refused || rerr.Head.Rev != 0 || rerr.Head.Hash != "" {
		t.Fatalf("heartbeat 6-7 after the loss = %v; want 409 replication_refused naming head 0", err)
	}
	resp, err := m.HandleHeartbeat(ctx, beat(log, 1, 7))
	if err != nil || resp.AckRev != 7 || resp.AckHash != log[6].Hash {
		t.Fatalf("the resend of 1-7 = %+v, %v; want ack 7", resp, err)
	}
	if got := storedOf(m, "s-1"); len(got) != 7 {
		t.Errorf("the store holds %d events of s-1; want all 7 again", len(got))
	}
}

// TestRecordRunningLeavesStoredSessionsAlone: a store that still has the
// running session is not written to.
func TestRecordRunningLeavesStoredSessionsAlone(t *testing.T) {
	m, r, _ := handlerManager(t, 4)
	st := m.Store.(*memStore)
	st.sessions["s-1"] = SessionRecord{SessionID: "s-1", AgentID: "a-1", LeaseID: "as-recorded", Status: StatusActive, StartedAt: r.StartedAt}
	n, err := m.RecordRunning(context.Background())
	if err != nil || n != 0 {
		t.Fatalf("RecordRunning() = %d, %v; want 0 (the store has the session)", n, err)
	}
	if got := st.sessions["s-1"].LeaseID; got != "as-recorded" {
		t.Errorf("the stored session's lease id is %q; want it untouched (as-recorded)", got)
	}
}

// TestRecordRunningNamesWhatFailed: a store that cannot list or record
// says so, naming the session.
func TestRecordRunningNamesWhatFailed(t *testing.T) {
	m, _, _ := handlerManager(t, 4)
	m.Store = lostStore{Store: newMemStore(), create: errors.New("relation does not exist")}
	n, err := m.RecordRunning(context.Background())
	if n != 0 || err == nil || !strings.Contains(err.Error(), "session s-1 of a-1") || !strings.Contains(err.Error(), "relation does not exist") {
		t.Errorf("RecordRunning() with a failing CreateSession = %d, %v; want an error naming session s-1 and the cause", n, err)
	}
	m.Store = lostStore{Store: newMemStore(), list: errors.New("connection refused")}
	if _, err := m.RecordRunning(context.Background()); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("RecordRunning() with a failing ActiveSessions = %v; want the cause", err)
	}
}

type lostStore struct {
	Store
	create, list error
}

func (s lostStore) CreateSession(ctx context.Context, r SessionRecord) error {
	if s.create != nil {
		return s.create
	}
	return s.Store.CreateSession(ctx, r)
}

func (s lostStore) ActiveSessions(ctx context.Context) ([]SessionRecord, error) {
	if s.list != nil {
		return nil, s.list
	}
	return s.Store.ActiveSessions(ctx)
}
