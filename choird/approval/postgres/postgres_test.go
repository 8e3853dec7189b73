package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"choir/choird/approval"
	"choir/choird/approval/approvaltest"
	"choir/choird/approval/postgres"
	"choir/choird/store"
	"choir/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// told records what the agent and the DM were told.
type told struct {
	mu              sync.Mutex
	agent, notified []approval.Approval
}

func (r *told) Requested(ctx context.Context, a approval.Approval) error { return nil }
func (r *told) Decided(ctx context.Context, a approval.Approval) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notified = append(r.notified, a)
	return nil
}
func (r *told) onDecision(ctx context.Context, a approval.Approval) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.agent = append(r.agent, a)
	return nil
}

func openStore(t *testing.T, agents ...string) *store.Store {
	t.Helper()
	db := pgtest.DB(t)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{DSN: db.DSN, Namespace: db.Namespace})
	if err != nil {
		t.Fatalf("store.Open() = %v", err)
	}
	t.Cleanup(func() {
		if err := st.Drop(ctx); err != nil {
			t.Errorf("Drop() = %v", err)
		}
		st.Close()
	})
	if err := st.Bootstrap(ctx, agents, 3); err != nil {
		t.Fatalf("Bootstrap() = %v", err)
	}
	return st
}

// TestServiceOverPostgres runs the pipeline against the real table: a
// decision recorded once, a timeout, and Start re-arming after a restart.
func TestServiceOverPostgres(t *testing.T) {
	st := openStore(t, "alpha", "beta")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The rows' created_at is the database's now(): the clock starts there.
	clock := approvaltest.NewClock(time.Now())
	rec := &told{}
	cfg := approval.Config{Store: postgres.New(st), Notifier: rec, OnDecision: rec.onDecision, Timeout: time.Hour, Clock: clock}
	svc := approval.New(cfg)

	a, err := svc.Request(ctx, "alpha", "", "repo_change", "merge proposal/x", json.RawMessage(`{"branch":"proposal/x"}`))
	if err != nil {
		t.Fatalf("Request() = %v", err)
	}
	b, err := svc.Request(ctx, "beta", "", "tool_proposal", "", json.RawMessage(`{"description":"add fetch"}`))
	if err != nil || b.Summary != "add fetch" {
		t.Fatalf("Request(beta) = %+v, %v", b, err)
	}
	if len("ap:"+a.ID+":y") > 64 {
		t.Errorf("approval id %q makes callback data over 64 bytes", a.ID)
	}
	if _, err := svc.Decide(ctx, a.ID, true, approval.BoundTo("telegram:2 (dm-b)", "beta")); !errors.Is(err, approval.ErrNotAllowed) {
		t.Errorf("Decide(by beta's DM) = %v; want ErrNotAllowed", err)
	}
	d, err := svc.Decide(ctx, a.ID, true, approval.Operator("choirctl"))
	if err != nil || d.Status != approval.Approved || d.ResolvedBy != "choirctl" || d.ResolvedAt.IsZero() {
		t.Fatalf("Decide() = %+v, %v; want approved by choirctl", d, err)
	}
	again, err := svc.Decide(ctx, a.ID, false, approval.Operator("telegram:9 (admin)"))
	if !errors.Is(err, approval.ErrAlreadyDecided) || again.Status != approval.Approved || again.ResolvedBy != "choirctl" {
		t.Errorf("second Decide() = %+v, %v; want choirctl's approval and ErrAlreadyDecided", again, err)
	}
	if _, err := svc.Get(ctx, "00000000-0000-0000-0000-000000000000"); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("Get(unknown) = %v; want ErrNotFound", err)
	}
	pending, err := svc.List(ctx, "")
	if err != nil || len(pending) != 1 || pending[0].ID != b.ID {
		t.Fatalf("List() = %+v, %v; want only beta's", pending, err)
	}

	// choird stops with b pending, and starts again two hours later: b is
	// past due and rejected at start.
	svc.Close()
	clock.Advance(2 * time.Hour)
	rec2 := &told{}
	svc2 := approval.New(approval.Config{Store: postgres.New(st), Notifier: rec2, OnDecision: rec2.onDecision, Timeout: time.Hour, Clock: clock})
	defer svc2.Close()
	r, err := svc2.Start(ctx)
	if err != nil || r.Expired != 1 || r.Armed != 0 {
		t.Fatalf("Start() = %+v, %v; want 1 expired", r, err)
	}
	got, err := svc2.Get(ctx, b.ID)
	if err != nil || !got.TimedOut() {
		t.Fatalf("beta's approval after Start = %+v, %v; want rejected by timeout", got, err)
	}
	if len(rec2.agent) != 1 || rec2.agent[0].Decision().Status != "rejected" || len(rec2.notified) != 1 {
		t.Errorf("after the timeout: agent told %+v, DM told %d; want one rejection each", rec2.agent, len(rec2.notified))
	}

	// A fresh request under svc2 times out by its own timer.
	c, err := svc2.Request(ctx, "alpha", "", "config_change", "raise budget", nil)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour + time.Minute)
	if got, _ := svc2.Get(ctx, c.ID); !got.TimedOut() {
		t.Errorf("request after its timeout = %+v; want rejected by timeout", got)
	}
}

// TestRequestOnceOverPostgres: a request under a chosen id is stored once;
// asking again returns the row as it stands.
func TestRequestOnceOverPostgres(t *testing.T) {
	st := openStore(t, "alpha")
	ctx := t.Context()
	rec := &told{}
	svc := approval.New(approval.Config{Store: postgres.New(st), Notifier: rec, OnDecision: rec.onDecision})
	defer svc.Close()
	ask := approval.Approval{ID: "run-r-0123456789ab-abcdef012345", AgentID: "alpha", RequestType: "run_commit", Summary: "commit"}
	a, created, err := svc.RequestOnce(ctx, ask)
	if err != nil || !created || a.ID != ask.ID {
		t.Fatalf("RequestOnce() = %+v, %v, %v; want created under its id", a, created, err)
	}
	if _, err := svc.Decide(ctx, a.ID, false, approval.Operator("choirctl")); err != nil {
		t.Fatal(err)
	}
	again, created, err := svc.RequestOnce(ctx, ask)
	if err != nil || created || again.Status != approval.Rejected || again.ResolvedBy != "choirctl" {
		t.Errorf("RequestOnce() again = %+v, %v, %v; want the stored rejection", again, created, err)
	}
	if pending, _ := svc.List(ctx, ""); len(pending) != 0 {
		t.Errorf("pending after the rejection = %+v; want none (no second row)", pending)
	}
}
