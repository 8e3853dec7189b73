package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

func TestSessionLifecycle(t *testing.T) {
	s := newStore(t, Config{}, "alpha", "beta")
	ctx := ctxT(t)
	bindings := json.RawMessage(`{"workspace": "main", "dm": "admin-dm"}`)
	got, err := s.CreateSession(ctx, NewSession{SessionID: "s1", AgentID: "alpha", LeaseID: "lease-1", StartedAt: t0,
		Bindings: bindings, ConfigVersion: 41, ImageVersion: "choir-agent-alpha:abc123"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != SessionActive || !got.StartedAt.Equal(t0) || !got.EndedAt.IsZero() || got.ConfigVersion != 41 ||
		got.ImageVersion != "choir-agent-alpha:abc123" || got.LeaseID != "lease-1" {
		t.Errorf("CreateSession() = %+v", got)
	}
	var b map[string]string
	if err := json.Unmarshal(got.Bindings, &b); err != nil || b["workspace"] != "main" || b["dm"] != "admin-dm" {
		t.Errorf("Bindings = %s, %v; want %s", got.Bindings, err, bindings)
	}
	if _, err := s.CreateSession(ctx, NewSession{SessionID: "s2", AgentID: "alpha", LeaseID: "l", StartedAt: t0}); !errors.Is(err, ErrAgentActive) {
		t.Errorf("second active session of alpha: %v; want ErrAgentActive", err)
	}
	if _, err := s.CreateSession(ctx, NewSession{SessionID: "s1", AgentID: "beta", LeaseID: "l", StartedAt: t0}); !errors.Is(err, ErrSessionExists) {
		t.Errorf("session id s1 again: %v; want ErrSessionExists", err)
	}
	if _, err := s.CreateSession(ctx, NewSession{SessionID: "s3", AgentID: "gamma", LeaseID: "l", StartedAt: t0}); !errors.Is(err, ErrNotFound) {
		t.Errorf("session of an agent not bootstrapped: %v; want ErrNotFound", err)
	}
	if _, err := s.CreateSession(ctx, NewSession{SessionID: "s4", AgentID: "beta", LeaseID: "l4", StartedAt: t0.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}

	active, err := s.ActiveSessions(ctx)
	if err != nil || len(active) != 2 || active[0].SessionID != "s1" || active[1].SessionID != "s4" {
		t.Fatalf("ActiveSessions() = %+v, %v; want s1, s4", active, err)
	}

	beat := t0.Add(5 * time.Second)
	if err := s.Heartbeat(ctx, "s1", beat, 42); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetSession(ctx, "s1"); !got.LastHeartbeatAt.Equal(beat) || got.ConfigVersion != 42 {
		t.Errorf("after Heartbeat: last heartbeat %v, config version %d; want %v, 42", got.LastHeartbeatAt, got.ConfigVersion, beat)
	}

	end := t0.Add(time.Minute)
	if err := s.EndSession(ctx, "s1", SessionCrashed, end); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetSession(ctx, "s1"); got.Status != SessionCrashed || !got.EndedAt.Equal(end) {
		t.Errorf("after EndSession: %s at %v; want crashed at %v", got.Status, got.EndedAt, end)
	}
	if err := s.EndSession(ctx, "s1", SessionStopped, end); !errors.Is(err, ErrSessionEnded) {
		t.Errorf("EndSession twice = %v; want ErrSessionEnded", err)
	}
	if err := s.Heartbeat(ctx, "s1", end, 42); !errors.Is(err, ErrSessionEnded) {
		t.Errorf("Heartbeat of an ended session = %v; want ErrSessionEnded", err)
	}
	for name, err := range map[string]error{
		"EndSession": s.EndSession(ctx, "nope", SessionStopped, end),
		"Heartbeat":  s.Heartbeat(ctx, "nope", end, 1),
		"GetSession": second(s.GetSession(ctx, "nope")),
	} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s(unknown session) = %v; want ErrNotFound", name, err)
		}
	}
	if err := s.EndSession(ctx, "s4", SessionActive, end); err == nil {
		t.Error("EndSession(active) succeeded")
	}

	active, err = s.ActiveSessions(ctx)
	if err != nil || len(active) != 1 || active[0].SessionID != "s4" {
		t.Errorf("ActiveSessions() after ending s1 = %+v, %v; want s4", active, err)
	}
	// The agent may start again; its last session is the new one.
	if _, err := s.CreateSession(ctx, NewSession{SessionID: "s5", AgentID: "alpha", LeaseID: "l5", StartedAt: end}); err != nil {
		t.Fatalf("restart after crash: %v", err)
	}
	if last, err := s.LastSession(ctx, "alpha"); err != nil || last.SessionID != "s5" {
		t.Errorf("LastSession(alpha) = %s, %v; want s5", last.SessionID, err)
	}
	if _, err := s.LastSession(ctx, "nobody"); !errors.Is(err, ErrNotFound) {
		t.Errorf("LastSession(nobody) = %v; want ErrNotFound", err)
	}
}

func TestLeases(t *testing.T) {
	s := newStore(t, Config{}, "alpha", "beta")
	ctx := ctxT(t)
	ws := Lease{Kind: "workspace", Name: "main"}
	dm := Lease{Kind: "dm", Name: "admin-dm"}
	if _, err := s.CreateSession(ctx, NewSession{SessionID: "a1", AgentID: "alpha", LeaseID: "l", StartedAt: t0,
		Leases: []Lease{ws, dm, ws}}); err != nil {
		t.Fatal(err)
	}
	_, err := s.CreateSession(ctx, NewSession{SessionID: "b1", AgentID: "beta", LeaseID: "l", StartedAt: t0,
		Leases: []Lease{{Kind: "workspace", Name: "other"}, dm}})
	var held *LeaseHeldError
	if !errors.As(err, &held) || !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("CreateSession with a held DM = %v; want a *LeaseHeldError", err)
	}
	if held.Lease != dm || held.SessionID != "a1" || held.AgentID != "alpha" {
		t.Errorf("LeaseHeldError = %+v; want dm admin-dm held by a1 of alpha", held)
	}
	// All or nothing: the refused session left no row and no lease.
	if _, err := s.GetSession(ctx, "b1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("refused session b1: GetSession = %v; want ErrNotFound", err)
	}
	if _, err := s.CreateSession(ctx, NewSession{SessionID: "b2", AgentID: "beta", LeaseID: "l", StartedAt: t0,
		Leases: []Lease{{Kind: "workspace", Name: "other"}}}); err != nil {
		t.Fatalf("workspace other after the refused start: %v", err)
	}
	if err := s.EndSession(ctx, "b2", SessionStopped, t0); err != nil {
		t.Fatal(err)
	}
	// Ending a session releases its leases.
	if err := s.EndSession(ctx, "a1", SessionStopped, t0); err != nil {
		t.Fatal(err)
	}
	got, err := s.CreateSession(ctx, NewSession{SessionID: "b3", AgentID: "beta", LeaseID: "l", StartedAt: t0,
		Leases: []Lease{ws, dm}})
	if err != nil {
		t.Fatalf("leases after a1 ended: %v", err)
	}
	if got.AgentID != "beta" {
		t.Errorf("CreateSession() = %+v", got)
	}
	if _, err := s.CreateSession(ctx, NewSession{SessionID: "x", AgentID: "alpha", LeaseID: "l", StartedAt: t0,
		Leases: []Lease{{Kind: "workspace"}}}); err == nil {
		t.Error("a lease without a name was accepted")
	}
	active, _ := s.ActiveSessions(ctx)
	ids := []string{}
	for _, a := range active {
		ids = append(ids, a.SessionID)
	}
	if !slices.Equal(ids, []string{"b3"}) {
		t.Errorf("active sessions = %q; want [b3]", ids)
	}
}

func TestSessionsListNewestFirst(t *testing.T) {
	st := newStore(t, Config{}, "a1", "a2")
	ctx := ctxT(t)
	base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for i, agent := range []string{"a1", "a2", "a1"} {
		id := fmt.Sprintf("s%d", i)
		if _, err := st.CreateSession(ctx, NewSession{SessionID: id, AgentID: agent, LeaseID: id, StartedAt: base.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
		if err := st.EndSession(ctx, id, SessionStopped, base.Add(time.Duration(i)*time.Minute+time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	all, err := st.Sessions(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[0].SessionID != "s2" || all[2].SessionID != "s0" {
		t.Errorf("Sessions(all) = %v; want s2, s1, s0", ids(all))
	}
	a1, _ := st.Sessions(ctx, "a1", 1)
	if len(a1) != 1 || a1[0].SessionID != "s2" {
		t.Errorf("Sessions(a1, 1) = %v; want [s2]", ids(a1))
	}
}

func ids(ss []Session) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.SessionID)
	}
	return out
}

// A session records the choird instance that runs it (issue 26); a resume
// records the one resuming it, which may be the other replica.
func TestSessionInstance(t *testing.T) {
	s := newStore(t, Config{}, "alpha")
	ctx := ctxT(t)
	got, err := s.CreateSession(ctx, NewSession{SessionID: "s1", AgentID: "alpha", LeaseID: "l1", StartedAt: t0, Instance: "replica-a"})
	if err != nil || got.Instance != "replica-a" {
		t.Fatalf("CreateSession(instance replica-a) = %+v, %v", got, err)
	}
	if active, err := s.ActiveSessions(ctx); err != nil || len(active) != 1 || active[0].Instance != "replica-a" {
		t.Fatalf("ActiveSessions() = %+v, %v; want s1 of replica-a", active, err)
	}
	if err := s.EndSession(ctx, "s1", SessionCrashed, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	got, err = s.CreateSession(ctx, NewSession{SessionID: "s1", AgentID: "alpha", LeaseID: "l2", StartedAt: t0, Resume: true, Instance: "replica-b"})
	if err != nil || got.Instance != "replica-b" {
		t.Fatalf("resume on replica-b = %+v, %v; want the session recorded as replica-b's", got, err)
	}
}
