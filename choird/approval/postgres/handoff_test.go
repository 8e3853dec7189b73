package postgres_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"choir/choird/approval"
	"choir/choird/approval/approvaltest"
	"choir/choird/approval/postgres"
	"choir/choird/store"
)

func (r *told) counts() (agent, notified int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.agent), len(r.notified)
}

// TestDecisionReachesTheReplicaRunningTheSession: two replicas' services
// over one store; alpha's session runs on the follower. A decision made on
// the leader (choirctl there) is handed on by the follower's look, once,
// and never by the leader; a timeout is kept by the follower only (the
// leader's Start does not arm it) and handed on there in process.
func TestDecisionReachesTheReplicaRunningTheSession(t *testing.T) {
	st := openStore(t, "alpha")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := st.CreateSession(ctx, store.NewSession{SessionID: "s-a", AgentID: "alpha", LeaseID: "l", StartedAt: time.Now(),
		Bindings: json.RawMessage(`{"dm":"dm-a"}`), Instance: "follower"}); err != nil {
		t.Fatal(err)
	}
	clock := approvaltest.NewClock(time.Now())
	replica := func(instance string) (*approval.Service, *told) {
		rec := &told{}
		svc := approval.New(approval.Config{Store: postgres.New(st), Notifier: rec, OnDecision: rec.onDecision, Timeout: time.Hour, Clock: clock,
			Handoff: postgres.Handoff{S: st, Instance: instance, OrphanAfter: time.Hour}})
		t.Cleanup(svc.Close)
		return svc, rec
	}
	follower, onF := replica("follower")
	leader, onL := replica("leader")
	a, err := follower.Request(ctx, "alpha", "s-a", "skill", "a skill", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := leader.Start(ctx); err != nil || r.Armed != 0 {
		t.Errorf("the leader's Start() = %+v, %v; want nothing armed: the follower keeps its session's timeouts", r, err)
	}
	if d, err := leader.Decide(ctx, a.ID, true, approval.Operator("choirctl")); err != nil || d.Status != approval.Approved {
		t.Fatalf("Decide() on the leader = %+v, %v", d, err)
	}
	if agent, notified := onL.counts(); agent != 0 || notified != 0 {
		t.Errorf("the leader told the agent %d times and the DM %d; want none: the follower runs the session", agent, notified)
	}
	look, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		follower.RunHandoff(look, 10*time.Millisecond)
	}()
	for deadline := time.Now().Add(time.Minute); ; {
		if agent, _ := onF.counts(); agent > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the follower never handed on the leader's decision")
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, with a deadline
	}
	stop()
	<-done
	if agent, notified := onF.counts(); agent != 1 || notified != 1 || onF.agent[0].Status != approval.Approved || onF.agent[0].ResolvedBy != "choirctl" {
		t.Errorf("the follower told the agent %+v and the DM %d times; want choirctl's approval once each", onF.agent, notified)
	}
	if clock.Pending() != 0 {
		t.Errorf("%d timeouts armed after the hand-on; want the follower's disarmed", clock.Pending())
	}

	// A timeout: armed by the follower only, handed on there.
	b, err := follower.Request(ctx, "alpha", "s-a", "tool", "a tool", nil)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour + time.Second)
	if got, _ := follower.Get(ctx, b.ID); !got.TimedOut() {
		t.Fatalf("the follower's request after its timeout = %+v; want rejected by timeout", got)
	}
	if agent, notified := onF.counts(); agent != 2 || notified != 2 || !onF.agent[1].TimedOut() {
		t.Errorf("after the timeout the follower told the agent %+v and the DM %d times; want the timeout once more", onF.agent, notified)
	}
	if agent, notified := onL.counts(); agent != 0 || notified != 0 {
		t.Errorf("the leader told the agent %d times and the DM %d; want none", agent, notified)
	}
	if untold, err := st.UntoldApprovals(ctx, "follower", 0); err != nil || len(untold) != 0 {
		t.Errorf("UntoldApprovals(follower) at the end = %+v, %v; want none", untold, err)
	}
}

// TestSingleChoirdHandsOnWhatItDecides: without replicas (Instance "")
// every decision is handed on where it is made, whatever instance the
// session recorded, as before told_at.
func TestSingleChoirdHandsOnWhatItDecides(t *testing.T) {
	st := openStore(t, "alpha")
	ctx := t.Context()
	if _, err := st.CreateSession(ctx, store.NewSession{SessionID: "s-a", AgentID: "alpha", LeaseID: "l", StartedAt: time.Now(),
		Instance: "an-old-home"}); err != nil {
		t.Fatal(err)
	}
	rec := &told{}
	svc := approval.New(approval.Config{Store: postgres.New(st), Notifier: rec, OnDecision: rec.onDecision, Timeout: time.Hour,
		Handoff: postgres.Handoff{S: st}})
	defer svc.Close()
	a, err := svc.Request(ctx, "alpha", "s-a", "skill", "a skill", nil)
	if err != nil {
		t.Fatal(err)
	}
	svc2 := approval.New(approval.Config{Store: postgres.New(st), Timeout: time.Hour, Handoff: postgres.Handoff{S: st}})
	defer svc2.Close()
	if r, err := svc2.Start(ctx); err != nil || r.Armed != 1 {
		t.Errorf("Start() = %+v, %v; want its one request armed", r, err)
	}
	if _, err := svc.Decide(ctx, a.ID, false, approval.Operator("choirctl")); err != nil {
		t.Fatal(err)
	}
	if agent, notified := rec.counts(); agent != 1 || notified != 1 {
		t.Errorf("told the agent %d times and the DM %d; want once each", agent, notified)
	}
}
