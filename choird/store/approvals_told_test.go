package store

import (
	"encoding/json"
	"testing"
	"time"
)

// With two replicas, a decided approval is handed on once: by the replica
// running the session that asked (its in-process path or its poll), or by
// the one that decided it when no other replica runs that session; and a
// replica keeps the timeouts of every pending approval but the other
// replica's sessions'.
func TestApprovalToldOnce(t *testing.T) {
	s := newStore(t, Config{}, "alpha", "beta")
	ctx := ctxT(t)
	for _, ns := range []NewSession{
		{SessionID: "s-a", AgentID: "alpha", LeaseID: "l", StartedAt: t0, Bindings: json.RawMessage(`{"dm":"dm-a"}`), Instance: "follower"},
		{SessionID: "s-b", AgentID: "beta", LeaseID: "l", StartedAt: t0, Bindings: json.RawMessage(`{"dm":"dm-b"}`), Instance: "leader"},
	} {
		if _, err := s.CreateSession(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	ask := func(session, agent string) string {
		t.Helper()
		a, err := s.CreateApproval(ctx, NewApproval{SessionID: session, AgentID: agent, RequestType: "skill"})
		if err != nil {
			t.Fatal(err)
		}
		return a.ID
	}
	onFollower, onLeader, sessionless := ask("s-a", "alpha"), ask("s-b", "beta"), ask("", "beta")
	ids := func(as []Approval, err error) []string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, a := range as {
			out = append(out, a.ID)
		}
		return out
	}
	same := func(got []string, want ...string) bool {
		if len(got) != len(want) {
			return false
		}
		for i := range got {
			if got[i] != want[i] {
				return false
			}
		}
		return true
	}
	for _, c := range []struct {
		instance string
		want     []string
	}{
		{"leader", []string{onLeader, sessionless}},
		{"follower", []string{onFollower, sessionless}},
		{"", []string{onFollower, onLeader, sessionless}},
	} {
		if got := ids(s.PendingApprovalsHere(ctx, c.instance)); !same(got, c.want...) {
			t.Errorf("PendingApprovalsHere(%q) = %v; want %v", c.instance, got, c.want)
		}
	}
	tell := func(id, instance string, want bool) {
		t.Helper()
		if got, err := s.TellApproval(ctx, id, instance); err != nil || got != want {
			t.Errorf("TellApproval(%s, %q) = %v, %v; want %v", id, instance, got, err, want)
		}
	}
	decide := func(id string) {
		t.Helper()
		if _, err := s.ResolveApproval(ctx, id, ApprovalApproved, "choirctl"); err != nil {
			t.Fatal(err)
		}
	}
	tell(onFollower, "leader", false) // pending: nothing to hand on
	// Orphans after an hour (none yet), or at once.
	anHour, atOnce := time.Hour, time.Duration(0)

	// Decided on the leader, for the follower's session: the follower's
	// poll hands it on, once.
	decide(onFollower)
	tell(onFollower, "leader", false)
	if got := ids(s.UntoldApprovals(ctx, "leader", atOnce)); len(got) != 0 {
		t.Errorf("UntoldApprovals(leader) = %v; want none: the follower runs its session", got)
	}
	if got := ids(s.UntoldApprovals(ctx, "follower", anHour)); !same(got, onFollower) {
		t.Errorf("UntoldApprovals(follower) = %v; want %s", got, onFollower)
	}
	if got := ids(s.UntoldApprovals(ctx, "follower", atOnce)); len(got) != 0 {
		t.Errorf("UntoldApprovals(follower) again = %v; want none", got)
	}
	tell(onFollower, "follower", false)

	// Decided on the replica running the session: handed on in process,
	// and then by nobody's poll.
	decide(onLeader)
	tell(onLeader, "leader", true)
	tell(onLeader, "leader", false)
	if got := ids(s.UntoldApprovals(ctx, "leader", atOnce)); len(got) != 0 {
		t.Errorf("UntoldApprovals(leader) after its hand-on = %v; want none", got)
	}

	// Nobody's session: the decider hands it on; should it not (it died),
	// either replica's poll takes it once it is orphaned, and only then.
	decide(sessionless)
	if got := ids(s.UntoldApprovals(ctx, "follower", anHour)); len(got) != 0 {
		t.Errorf("UntoldApprovals(follower) of a fresh decision nobody runs = %v; want none yet", got)
	}
	if got := ids(s.UntoldApprovals(ctx, "follower", atOnce)); !same(got, sessionless) {
		t.Errorf("UntoldApprovals(follower) of an orphaned decision = %v; want %s", got, sessionless)
	}
	tell(sessionless, "leader", false)

	// A single choird ("") hands on whatever it decides, whoever runs it.
	single := ask("s-a", "alpha")
	decide(single)
	tell(single, "", true)

	// The follower's session ends with a decision untold: the orphan goes
	// to whichever replica polls first.
	ended := ask("s-a", "alpha")
	decide(ended)
	if err := s.EndSession(ctx, "s-a", SessionCrashed, time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := ids(s.UntoldApprovals(ctx, "leader", atOnce)); !same(got, ended) {
		t.Errorf("UntoldApprovals(leader) of an ended session's decision = %v; want %s", got, ended)
	}
}

// A database made before told_at: the requests decided then count as told
// when the column is added (they were told by the choird that decided
// them), and those pending are handed on when decided.
func TestApprovalToldAtAddedToAnOldDatabase(t *testing.T) {
	s := newStore(t, Config{}, "alpha")
	ctx := ctxT(t)
	newSession(t, s, "s1")
	old, err := s.CreateApproval(ctx, NewApproval{SessionID: "s1", AgentID: "alpha", RequestType: "skill"})
	if err != nil {
		t.Fatal(err)
	}
	waiting, err := s.CreateApproval(ctx, NewApproval{SessionID: "s1", AgentID: "alpha", RequestType: "tool"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ResolveApproval(ctx, old.ID, ApprovalRejected, "choirctl"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, s.q(`UPDATE choir_control.pending_approvals SET told_at = NULL`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, s.q(`DROP INDEX choir_control.pending_approvals_untold`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, s.q(`ALTER TABLE choir_control.pending_approvals DROP COLUMN told_at`)); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the upgrade, then a atOnce start
		if err := s.Bootstrap(ctx, []string{"alpha"}, 3); err != nil {
			t.Fatalf("Bootstrap() over the old table = %v", err)
		}
	}
	if got, err := s.UntoldApprovals(ctx, "", 0); err != nil || len(got) != 0 {
		t.Errorf("UntoldApprovals() after the upgrade = %+v, %v; want none: %s was decided before", got, err, old.ID)
	}
	if _, err := s.ResolveApproval(ctx, waiting.ID, ApprovalApproved, "choirctl"); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.TellApproval(ctx, waiting.ID, ""); err != nil || !ok {
		t.Errorf("TellApproval(%s) decided after the upgrade = %v, %v; want true", waiting.ID, ok, err)
	}
}
