package store

import (
	"errors"
	"testing"
	"time"

	"choir/internal/chain"
)

// A session that ended is what the agent's next start resumes (spec
// 13.2): LastEnded finds it with its log's head and why it ended; Resume
// reopens it with new leases, keeping its log, and counts the resume;
// EventsPage reads its log a page at a time, verifying from the hash it
// gives; an active last session is nothing to resume.
func TestResumeAnEndedSession(t *testing.T) {
	s := newStore(t, Config{}, "alpha", "beta")
	ctx := ctxT(t)
	if _, err := s.LastEnded(ctx, "alpha"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("LastEnded of an agent without sessions = %v; want ErrNotFound", err)
	}
	ws := []Lease{{Kind: "workspace", Name: "main"}}
	if _, err := s.CreateSession(ctx, NewSession{SessionID: "s1", AgentID: "alpha", LeaseID: "l1", StartedAt: t0, Leases: ws}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LastEnded(ctx, "alpha"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("LastEnded while the session is active = %v; want ErrNotFound", err)
	}
	if _, err := s.Replicate(ctx, "s1", Batch{Events: events(1, 1200)}); err != nil {
		t.Fatal(err)
	}
	if err := s.EndSessionWhy(ctx, "s1", SessionCrashed, t0.Add(time.Minute), "no heartbeat for 10s"); err != nil {
		t.Fatal(err)
	}
	e, err := s.LastEnded(ctx, "alpha")
	if err != nil || e.SessionID != "s1" || e.Status != SessionCrashed || e.EndReason != "no heartbeat for 10s" || e.Head.Rev != 1200 || e.Head.Hash != hashOf(1200) || e.Resumes != 0 {
		t.Fatalf("LastEnded = %+v, %v; want s1, crashed, its reason, head 1200", e, err)
	}

	// Another agent holds the workspace now: resuming fails whole.
	if _, err := s.CreateSession(ctx, NewSession{SessionID: "b1", AgentID: "beta", LeaseID: "lb", StartedAt: t0, Leases: ws}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateSession(ctx, NewSession{SessionID: "s1", AgentID: "alpha", LeaseID: "l2", StartedAt: t0, Leases: ws, Resume: true}); !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("resume while beta holds the workspace = %v; want ErrLeaseHeld", err)
	}
	if got, _ := s.GetSession(ctx, "s1"); got.Status != SessionCrashed {
		t.Errorf("a refused resume left s1 %s; want it still crashed", got.Status)
	}
	if err := s.EndSession(ctx, "b1", SessionStopped, t0); err != nil {
		t.Fatal(err)
	}
	got, err := s.CreateSession(ctx, NewSession{SessionID: "s1", AgentID: "alpha", LeaseID: "l2", StartedAt: t0.Add(time.Hour), Leases: ws, Resume: true, ImageVersion: "v2"})
	if err != nil || got.Status != SessionActive || !got.EndedAt.IsZero() || got.LeaseID != "l2" || got.ImageVersion != "v2" {
		t.Fatalf("resume = %+v, %v; want s1 active again with the new lease and image", got, err)
	}
	if _, err := s.CreateSession(ctx, NewSession{SessionID: "s1", AgentID: "alpha", LeaseID: "l3", StartedAt: t0, Resume: true}); err == nil {
		t.Error("resuming an active session succeeded")
	}
	if _, err := s.CreateSession(ctx, NewSession{SessionID: "b1", AgentID: "alpha", LeaseID: "l3", StartedAt: t0, Resume: true}); err == nil {
		t.Error("alpha resumed beta's session")
	}

	// The log goes on from its head; a page verifies from its prev hash.
	if _, err := s.Replicate(ctx, "s1", Batch{Events: events(1201, 1210)}); err != nil {
		t.Fatalf("replication after the resume: %v", err)
	}
	var all []chain.Event
	prevOf := ""
	for after := int64(0); ; {
		prev, page, err := s.EventsPage(ctx, "s1", after, 512)
		if err != nil {
			t.Fatal(err)
		}
		if after == 0 {
			prevOf = prev
		} else if prev != hashOf(after) {
			t.Fatalf("the page after %d chains from %q; want that revision's hash", after, prev)
		}
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			all = append(all, chain.Event{Rev: e.Rev, Type: e.Type, Lane: e.Lane, Payload: e.Payload, Time: e.Time, Hash: e.Hash})
		}
		after = page[len(page)-1].Rev
	}
	if len(all) != 1210 || prevOf != "" {
		t.Fatalf("paged %d events from %q; want 1210 from genesis", len(all), prevOf)
	}
	if err := chain.Verify("", all); err != nil {
		t.Errorf("the resumed session's log does not verify end to end: %v", err)
	}
	if _, _, err := s.EventsPage(ctx, "s1", 5000, 10); !errors.Is(err, ErrNotFound) {
		t.Errorf("a page after a revision the log lacks = %v; want ErrNotFound", err)
	}

	if err := s.EndSessionWhy(ctx, "s1", SessionStopped, t0.Add(2*time.Hour), "agent stop"); err != nil {
		t.Fatal(err)
	}
	if e, _ := s.LastEnded(ctx, "alpha"); e.Resumes != 1 || e.Status != SessionStopped || e.Head.Rev != 1210 {
		t.Errorf("after one resume, LastEnded = %+v; want resumes 1, stopped at 1210", e)
	}
}
