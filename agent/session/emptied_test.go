package session

import (
	"context"
	"testing"
)

// TestResendEverythingToAnEmptiedChoird: choird's database came back
// empty and choird recorded the session again with an empty log. The
// agent's next heartbeat is refused naming head 0 (hash ""), which its own
// log trivially holds, so it resends everything from revision 1 in the
// same tick, and choird ends up with the whole chain; nothing is reported
// as diverged.
func TestResendEverythingToAnEmptiedChoird(t *testing.T) {
	l := &agentLog{size: 50}
	l.commit(12)
	c := &storingChoird{}
	s, notices := replicating(c, l)
	ctx := context.Background()
	if _, err := s.replicate(ctx); err != nil || c.storedRevs() != 12 {
		t.Fatalf("first replication: %v, %d stored", err, c.storedRevs())
	}
	c.mu.Lock()
	c.stored = nil // the database came back without choird's schemas
	c.mu.Unlock()
	l.commit(3)
	n := len(c.beats)
	if _, err := s.replicate(ctx); err != nil {
		t.Fatalf("replicate to the emptied choird = %v; want the resend to succeed in the same tick", err)
	}
	if got := c.storedRevs(); got != 15 {
		t.Errorf("choird holds %d events (verifying); want all 15", got)
	}
	if got := c.beats[n+1]; got.BaseRev != 0 || len(got.Patches) == 0 || got.Patches[0].Rev != 1 {
		t.Errorf("the heartbeat after the refusal starts after %d; want after 0 (revision 1 first)", got.BaseRev)
	}
	if s.Acked() != 15 || len(*notices) != 0 {
		t.Errorf("Acked() = %d, notices %q; want 15 and none", s.Acked(), *notices)
	}
}
