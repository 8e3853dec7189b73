package store

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestMissingTablesAfterTheDatabaseLostThem: schemas dropped behind the
// store's back (a server replaced or restored without them) are named by
// MissingTables, table by table in the namespace's own names; Bootstrap
// creates them again, after which nothing is missing, and a second
// Bootstrap changes nothing.
func TestMissingTablesAfterTheDatabaseLostThem(t *testing.T) {
	s := newStore(t, Config{}, "alpha", "beta-2")
	ctx := ctxT(t)
	agents := []string{"alpha", "beta-2"}
	if got, err := s.MissingTables(ctx, agents); err != nil || len(got) != 0 {
		t.Fatalf("MissingTables on a bootstrapped namespace = %q, %v; want none", got, err)
	}
	if _, err := s.CreateSession(ctx, NewSession{SessionID: "s1", AgentID: "alpha", LeaseID: "l1", StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	alpha := s.ns + "_alpha"
	for _, sql := range []string{"DROP SCHEMA " + alpha + " CASCADE", "DROP TABLE " + s.control + ".session_snapshots"} {
		if _, err := s.pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	got, err := s.MissingTables(ctx, agents)
	want := []string{s.ns + "_control.session_snapshots", alpha + ".memory_documents", alpha + ".memory_embeddings",
		alpha + ".knowledge_documents", alpha + ".knowledge_embeddings"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("MissingTables after dropping alpha's schema and session_snapshots = %q, %v; want %q", got, err, want)
	}

	// The whole control schema gone: replication says so with the code
	// choird repairs on.
	if _, err := s.pool.Exec(ctx, "DROP SCHEMA "+s.control+" CASCADE"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Replicate(ctx, "s1", Batch{})
	if !IsMissingSchema(err) {
		t.Errorf("Replicate into a dropped control schema = %v; want an error IsMissingSchema recognises", err)
	}
	got, err = s.MissingTables(ctx, agents)
	if err != nil || len(got) != len(controlTables)+len(agentTables) {
		t.Fatalf("MissingTables with the control schema gone = %q, %v; want %d tables", got, err, len(controlTables)+len(agentTables))
	}

	for i := range 2 {
		if err := s.Bootstrap(ctx, agents, dims); err != nil {
			t.Fatalf("Bootstrap #%d after the loss = %v", i+1, err)
		}
		if got, err := s.MissingTables(ctx, agents); err != nil || len(got) != 0 {
			t.Fatalf("MissingTables after Bootstrap #%d = %q, %v; want none", i+1, got, err)
		}
	}
	if _, err := s.GetSession(ctx, "s1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetSession(s1) after the loss = %v; want ErrNotFound (the rows went with the schema)", err)
	}
	if _, err := s.CreateSession(ctx, NewSession{SessionID: "s1", AgentID: "alpha", LeaseID: "l1", StartedAt: time.Now()}); err != nil {
		t.Errorf("CreateSession(s1) again after Bootstrap = %v; want the session recorded", err)
	}
}

// TestMissingTablesRefusesABadAgentID: an id config.json would not allow
// is an error, not a name spliced into SQL.
func TestMissingTablesRefusesABadAgentID(t *testing.T) {
	s := newStore(t, Config{}, "alpha")
	for _, id := range []string{`x"; DROP SCHEMA public; --`, "", "UPPER"} {
		t.Run(fmt.Sprintf("%q", id), func(t *testing.T) {
			if got, err := s.MissingTables(ctxT(t), []string{id}); err == nil {
				t.Errorf("MissingTables(%q) = %q, nil; want an error naming the id", id, got)
			}
		})
	}
}

func TestIsMissingSchemaIgnoresOtherErrors(t *testing.T) {
	for _, err := range []error{nil, errors.New("relation does not exist"), ErrNotFound} {
		if IsMissingSchema(err) {
			t.Errorf("IsMissingSchema(%v) = true; want false (only SQLSTATE 42P01 and 3F000)", err)
		}
	}
}
