package store

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// jsonEqual compares two JSON documents by value (jsonb keeps neither the
// order of members nor white space).
func jsonEqual(t *testing.T, got, want json.RawMessage) bool {
	t.Helper()
	var g, w any
	if json.Unmarshal(got, &g) != nil || json.Unmarshal(want, &w) != nil {
		return false
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return string(gb) == string(wb)
}

// The final heartbeat's session summary is stored with the session, in the
// transaction of its batch, and read back with why the session ended; a
// batch that is refused stores neither its events nor its summary.
func TestSessionSummaryIsStoredWithTheFinalBatch(t *testing.T) {
	s := newStore(t, Config{}, "alpha")
	ctx := ctxT(t)
	newSession(t, s, "s1")
	if _, err := s.Replicate(ctx, "s1", Batch{Events: events(1, 3)}); err != nil {
		t.Fatal(err)
	}
	if o, err := s.SessionOutcome(ctx, "s1"); err != nil || o.Summary != nil || o.EndReason != "" {
		t.Fatalf("SessionOutcome before the stop = %+v, %v; want no summary, no end reason", o, err)
	}

	doc := json.RawMessage(`{"title":"Notes","summary":"Tidied \"notes\" — all of them.","decisions":["keep"],"open_items":[],"facts":[]}`)
	if r, err := s.Replicate(ctx, "s1", Batch{Events: events(4, 5), Summary: doc}); err != nil || r.Head.Rev != 5 {
		t.Fatalf("final Replicate = %+v, %v; want the batch stored up to 5", r, err)
	}
	if err := s.EndSessionWhy(ctx, "s1", SessionStopped, time.Now(), "shutdown requested: agent stop"); err != nil {
		t.Fatal(err)
	}
	o, err := s.SessionOutcome(ctx, "s1")
	if err != nil || !jsonEqual(t, o.Summary, doc) || o.EndReason != "shutdown requested: agent stop" {
		t.Errorf("SessionOutcome = %s, %q, %v; want %s and the end reason", o.Summary, o.EndReason, err, doc)
	}

	// Refused: a forged event, a summary that is not an object, a session
	// that has ended. Nothing of them is stored.
	newSession2 := func(id string) {
		if _, err := s.CreateSession(ctx, NewSession{SessionID: id, AgentID: "alpha", LeaseID: "l", StartedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	newSession2("s2")
	for _, tc := range []struct {
		name string
		b    Batch
	}{
		{"forged event", Batch{Events: forge(events(1, 2), "hash"), Summary: doc}},
		{"summary not an object", Batch{Events: events(1, 2), Summary: json.RawMessage(`["a"]`)}},
		{"summary not JSON", Batch{Events: events(1, 2), Summary: json.RawMessage(`{"title":`)}},
	} {
		if _, err := s.Replicate(ctx, "s2", tc.b); err == nil {
			t.Errorf("%s: Replicate succeeded; want a refusal", tc.name)
		}
		if o, err := s.SessionOutcome(ctx, "s2"); err != nil || o.Summary != nil {
			t.Errorf("%s: SessionOutcome = %s, %v; want no summary", tc.name, o.Summary, err)
		}
		if got := storedRevs(t, s, "s2"); got != "[]" {
			t.Errorf("%s: stored revisions %s; want none", tc.name, got)
		}
	}
	if _, err := s.Replicate(ctx, "s1", Batch{Summary: json.RawMessage(`{"title":"late"}`)}); !errors.Is(err, ErrSessionEnded) {
		t.Errorf("a summary for an ended session: %v; want ErrSessionEnded", err)
	}
	if o, _ := s.SessionOutcome(ctx, "s1"); !jsonEqual(t, o.Summary, doc) {
		t.Errorf("an ended session's summary changed to %s", o.Summary)
	}
	if _, err := s.SessionOutcome(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("SessionOutcome(unknown) = %v; want ErrNotFound", err)
	}
}

// A database made before sessions had a summary gets the column at the
// next start (Bootstrap), with its sessions kept.
func TestBootstrapAddsTheSummaryColumn(t *testing.T) {
	s := newStore(t, Config{}, "alpha")
	ctx := ctxT(t)
	newSession(t, s, "s1")
	if _, err := s.pool.Exec(ctx, s.q(`ALTER TABLE choir_control.sessions DROP COLUMN summary`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SessionOutcome(ctx, "s1"); err == nil {
		t.Fatal("SessionOutcome works without the column; the test would prove nothing")
	}
	if err := s.Bootstrap(ctx, []string{"alpha"}, dims); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Replicate(ctx, "s1", Batch{Events: events(1, 1), Summary: json.RawMessage(`{"title":"t"}`)}); err != nil {
		t.Fatalf("Replicate after the upgrade = %v", err)
	}
	if o, err := s.SessionOutcome(ctx, "s1"); err != nil || !jsonEqual(t, o.Summary, json.RawMessage(`{"title":"t"}`)) {
		t.Errorf("SessionOutcome after the upgrade = %s, %v", o.Summary, err)
	}
}
