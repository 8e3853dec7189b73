package store

import (
	"errors"
	"testing"
	"time"
)

// A run session runs beside the agent's interactive session; it is never
// what a start resumes, and the one-active-session rule still holds for
// interactive sessions.
func TestRunSessionsBesideTheInteractiveOne(t *testing.T) {
	s := newStore(t, Config{}, "alpha")
	ctx := ctxT(t)
	if _, err := s.CreateSession(ctx, NewSession{SessionID: "i1", AgentID: "alpha", LeaseID: "i1", StartedAt: t0}); err != nil {
		t.Fatal(err)
	}
	got, err := s.CreateSession(ctx, NewSession{SessionID: "run1", AgentID: "alpha", LeaseID: "run1", StartedAt: t0.Add(time.Second), Kind: SessionRun, RunID: "r-000000000001"})
	if err != nil {
		t.Fatalf("a run session beside the interactive one: %v", err)
	}
	if got.Kind != SessionRun || got.RunID != "r-000000000001" {
		t.Errorf("run session recorded as kind %q run %q", got.Kind, got.RunID)
	}
	if _, err := s.CreateSession(ctx, NewSession{SessionID: "run2", AgentID: "alpha", LeaseID: "run2", StartedAt: t0.Add(time.Second), Kind: SessionRun, RunID: "r-000000000002"}); err != nil {
		t.Fatalf("a second run session of the same agent: %v", err)
	}
	if _, err := s.CreateSession(ctx, NewSession{SessionID: "i2", AgentID: "alpha", LeaseID: "i2", StartedAt: t0}); !errors.Is(err, ErrAgentActive) {
		t.Errorf("a second interactive session: %v; want ErrAgentActive", err)
	}
	for _, bad := range []NewSession{
		{SessionID: "x1", AgentID: "alpha", LeaseID: "x", StartedAt: t0, Kind: SessionRun},                               // no run id
		{SessionID: "x2", AgentID: "alpha", LeaseID: "x", StartedAt: t0, RunID: "r-000000000003"},                        // interactive with a run id
		{SessionID: "x3", AgentID: "alpha", LeaseID: "x", StartedAt: t0, Kind: "batch"},                                  // unknown kind
		{SessionID: "run1", AgentID: "alpha", LeaseID: "x", StartedAt: t0, Kind: SessionRun, RunID: "r-1", Resume: true}, // a run is never resumed
	} {
		if _, err := s.CreateSession(ctx, bad); err == nil {
			t.Errorf("CreateSession(%+v) succeeded", bad)
		}
	}
	// The interactive session ends; the run sessions end later: a start
	// resumes the interactive one, never a run.
	if err := s.EndSession(ctx, "i1", SessionStopped, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"run1", "run2"} {
		if err := s.EndSession(ctx, id, SessionStopped, t0.Add(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	e, err := s.LastEnded(ctx, "alpha")
	if err != nil || e.SessionID != "i1" {
		t.Errorf("LastEnded = %+v, %v; want the interactive session i1", e, err)
	}
	last, err := s.LastSession(ctx, "alpha")
	if err != nil || last.SessionID != "i1" {
		t.Errorf("LastSession = %+v, %v; want i1", last, err)
	}
	if _, err := s.CreateSession(ctx, NewSession{SessionID: "run1", AgentID: "alpha", LeaseID: "again", StartedAt: t0, Resume: true}); !errors.Is(err, ErrNotFound) {
		t.Errorf("resuming the run session run1 as interactive: %v; want ErrNotFound", err)
	}
}
