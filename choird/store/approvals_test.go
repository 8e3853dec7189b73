package store

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestApprovalDecidedOnce(t *testing.T) {
	s := newStore(t, Config{}, "alpha", "beta")
	ctx := ctxT(t)
	newSession(t, s, "s1")
	a, err := s.CreateApproval(ctx, NewApproval{SessionID: "s1", AgentID: "alpha", RequestType: "repo_proposal",
		Summary: "merge tool foo", Payload: json.RawMessage(`{"branch": "foo"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if a.ID == "" || len(a.ID) > 64 || a.Status != ApprovalPending || !a.ResolvedAt.IsZero() || a.Summary != "merge tool foo" {
		t.Errorf("CreateApproval() = %+v", a)
	}
	b, err := s.CreateApproval(ctx, NewApproval{AgentID: "beta", RequestType: "skill_proposal"})
	if err != nil {
		t.Fatal(err)
	}
	if b.SessionID != "" || string(b.Payload) != "{}" {
		t.Errorf("approval without session or payload = %+v", b)
	}

	pending, err := s.PendingApprovals(ctx, "")
	if err != nil || len(pending) != 2 {
		t.Fatalf("PendingApprovals(all) = %v, %v; want 2", pending, err)
	}
	pending, err = s.PendingApprovals(ctx, "alpha")
	if err != nil || len(pending) != 1 || pending[0].ID != a.ID {
		t.Fatalf("PendingApprovals(alpha) = %v, %v; want %s", pending, err, a.ID)
	}

	got, err := s.ResolveApproval(ctx, a.ID, ApprovalApproved, "alice")
	if err != nil || got.Status != ApprovalApproved || got.ResolvedBy != "alice" || got.ResolvedAt.IsZero() {
		t.Fatalf("ResolveApproval() = %+v, %v; want approved by alice", got, err)
	}
	again, err := s.ResolveApproval(ctx, a.ID, ApprovalRejected, "bob")
	if !errors.Is(err, ErrAlreadyResolved) || again.Status != ApprovalApproved || again.ResolvedBy != "alice" {
		t.Errorf("second ResolveApproval() = %+v, %v; want the first decision and ErrAlreadyResolved", again, err)
	}
	stored, err := s.GetApproval(ctx, a.ID)
	if err != nil || stored.Status != ApprovalApproved || stored.ResolvedBy != "alice" || !stored.ResolvedAt.Equal(got.ResolvedAt) {
		t.Errorf("GetApproval() after two resolves = %+v, %v; want alice's approval unchanged", stored, err)
	}
	if pending, _ := s.PendingApprovals(ctx, ""); len(pending) != 1 || pending[0].ID != b.ID {
		t.Errorf("PendingApprovals() after a resolve = %v; want only %s", pending, b.ID)
	}

	if _, err := s.ResolveApproval(ctx, "no-such-id", ApprovalApproved, "alice"); !errors.Is(err, ErrNotFound) {
		t.Errorf("ResolveApproval(unknown) = %v; want ErrNotFound", err)
	}
	if _, err := s.GetApproval(ctx, "no-such-id"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetApproval(unknown) = %v; want ErrNotFound", err)
	}
	if _, err := s.ResolveApproval(ctx, b.ID, ApprovalPending, "alice"); err == nil {
		t.Error("ResolveApproval(pending) succeeded")
	}
	if _, err := s.CreateApproval(ctx, NewApproval{AgentID: "gamma", RequestType: "x"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("CreateApproval(unknown agent) = %v; want ErrNotFound", err)
	}
}

// Many deciders at once: exactly one wins.
func TestApprovalRace(t *testing.T) {
	s := newStore(t, Config{}, "alpha")
	ctx := ctxT(t)
	a, err := s.CreateApproval(ctx, NewApproval{AgentID: "alpha", RequestType: "x"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	errc := make(chan error, n)
	for i := range n {
		decision := ApprovalApproved
		if i%2 == 1 {
			decision = ApprovalRejected
		}
		go func() {
			_, err := s.ResolveApproval(ctx, a.ID, decision, "op")
			errc <- err
		}()
	}
	wins := 0
	for range n {
		switch err := <-errc; {
		case err == nil:
			wins++
		case !errors.Is(err, ErrAlreadyResolved):
			t.Errorf("ResolveApproval() = %v", err)
		}
	}
	if wins != 1 {
		t.Errorf("%d of %d concurrent resolves succeeded; want 1", wins, n)
	}
}
