package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// objects lists the namespace's schemas, tables and indexes with their oids
// and owners.
func objects(t *testing.T, s *Store) []string {
	t.Helper()
	rows, err := s.pool.Query(ctxT(t), `
		SELECT n.nspname || ' ' || pg_get_userbyid(n.nspowner) || ' ' || coalesce(c.relname || ' ' || c.relkind::text || ' ' || c.oid || ' ' || pg_get_userbyid(c.relowner), '')
		FROM pg_namespace n LEFT JOIN pg_class c ON c.relnamespace = n.oid AND c.relkind IN ('r', 'i')
		WHERE n.nspname LIKE $1 ORDER BY 1`, s.ns+"\\_%")
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestBootstrapTwiceChangesNothing(t *testing.T) {
	s := newStore(t, Config{}, "alpha", "beta-2")
	ctx := ctxT(t)
	before := objects(t, s)
	if _, err := s.CreateSession(ctx, NewSession{SessionID: "s1", AgentID: "alpha", LeaseID: "l1", StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := s.Bootstrap(ctx, []string{"alpha", "beta-2"}, dims); err != nil {
		t.Fatalf("second Bootstrap() = %v", err)
	}
	if after := objects(t, s); !slices.Equal(before, after) {
		t.Errorf("second Bootstrap() changed the catalog:\nbefore %q\nafter  %q", before, after)
	}
	if _, err := s.GetSession(ctx, "s1"); err != nil {
		t.Errorf("GetSession(s1) after second Bootstrap() = %v", err)
	}
}

func TestBootstrapCreatesSchemasAndRoles(t *testing.T) {
	s := newStore(t, Config{}, "alpha", "beta-2")
	ctx := ctxT(t)
	want := map[string][]string{
		s.ns + "_control": {"agent_images", "agents", "dm_inbox", "dm_outbox", "kb_cursor", "kb_embeddings", "kb_objects", "leases", "llm_usage", "pending_approvals", "run_receipts", "runs", "sched_fires", "session_events", "session_snapshots", "sessions", "spend_notices", "usage_allowances", "work_items"},
		s.ns + "_alpha":   {"knowledge_documents", "knowledge_embeddings", "memory_documents", "memory_embeddings"},
		s.ns + "_beta_2":  {"knowledge_documents", "knowledge_embeddings", "memory_documents", "memory_embeddings"},
	}
	for schema, tables := range want {
		rows, err := s.pool.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY 1`, schema)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tables) {
			t.Errorf("tables of %s = %q; want %q", schema, got, tables)
		}
	}
	for _, agent := range []string{"alpha", "beta_2"} {
		name := s.ns + "_" + agent
		var owner string
		var login bool
		err := s.pool.QueryRow(ctx, `
			SELECT pg_get_userbyid(n.nspowner), r.rolcanlogin
			FROM pg_namespace n JOIN pg_roles r ON r.rolname = $1
			WHERE n.nspname = $1`, name).Scan(&owner, &login)
		if err != nil {
			t.Fatalf("schema and role %s: %v", name, err)
		}
		if owner != name || login {
			t.Errorf("schema %s: owner %s, role can log in %v; want owner %s, NOLOGIN", name, owner, login, name)
		}
		for _, table := range []string{"memory_embeddings", "knowledge_embeddings"} {
			var typ, index string
			err := s.pool.QueryRow(ctx, `
				SELECT format_type(a.atttypid, a.atttypmod), i.indexdef
				FROM pg_attribute a
				JOIN pg_indexes i ON i.schemaname = $1 AND i.tablename = $2 AND i.indexdef LIKE '%hnsw%'
				WHERE a.attrelid = ($3 || '.' || $2)::regclass AND a.attname = 'embedding'`,
				name, table, `"`+name+`"`).Scan(&typ, &index)
			if err != nil {
				t.Fatalf("%s.%s: %v", name, table, err)
			}
			if typ != fmt.Sprintf("vector(%d)", dims) || !strings.Contains(index, "vector_cosine_ops") {
				t.Errorf("%s.%s: embedding %s, index %q; want vector(%d) with an HNSW cosine index", name, table, typ, index, dims)
			}
		}
	}
}

// An agent's role reaches its own schema (vectors, full text) and nothing
// else: not another agent's schema, not the control schema.
func TestAgentRoleIsolation(t *testing.T) {
	s := newStore(t, Config{}, "alpha", "beta-2")
	ctx := ctxT(t)
	err := s.asAgent(ctx, "alpha", func(tx pgx.Tx) error {
		var id string
		err := tx.QueryRow(ctx, `INSERT INTO `+s.ns+`_alpha.memory_documents (session_id, tier, chunk_index, text)
			VALUES ('s1', 'mid_term', 0, 'The quick brown fox') RETURNING id::text`).Scan(&id)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+s.ns+`_alpha.memory_embeddings VALUES ($1, '[1,0,0]')`, id); err != nil {
			return err
		}
		var text string
		var score float64
		return tx.QueryRow(ctx, `
			SELECT d.text, 1 - (e.embedding <=> '[1,0,0]')
			FROM `+s.ns+`_alpha.memory_documents d JOIN `+s.ns+`_alpha.memory_embeddings e ON d.id = e.document_id
			WHERE d.tsv @@ plainto_tsquery('simple', 'brown fox')`).Scan(&text, &score)
	})
	if err != nil {
		t.Fatalf("agent alpha in its own schema: %v", err)
	}
	for _, table := range []string{s.ns + "_beta_2.memory_documents", s.ns + "_control.sessions"} {
		err := s.asAgent(ctx, "alpha", func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `SELECT count(*) FROM `+table)
			return err
		})
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" {
			t.Errorf("agent alpha reading %s: error %v; want permission denied (42501)", table, err)
		}
	}
}

func TestBootstrapRefuses(t *testing.T) {
	s := newStore(t, Config{})
	for _, tc := range []struct {
		agents []string
		dims   int
		want   string
	}{
		{[]string{"Alpha"}, dims, "want [a-z0-9][a-z0-9_-]*"},
		{[]string{"a;drop"}, dims, "want [a-z0-9][a-z0-9_-]*"},
		{[]string{"x-y", "x_y"}, dims, "both map to schema"},
		{[]string{"control"}, dims, "control schema"},
		{[]string{strings.Repeat("a", 60)}, dims, "63 bytes"},
		{[]string{"alpha"}, 0, "embedding dimensions"},
		{[]string{"alpha"}, MaxEmbeddingDims + 1, "embedding dimensions"},
	} {
		err := s.Bootstrap(context.Background(), tc.agents, tc.dims)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Bootstrap(%q, %d) = %v; want an error containing %q", tc.agents, tc.dims, err, tc.want)
		}
	}
}

func TestBootstrapRefusesOtherDims(t *testing.T) {
	s := newStore(t, Config{}, "alpha")
	err := s.Bootstrap(ctxT(t), []string{"alpha"}, dims+1)
	if err == nil || !strings.Contains(err.Error(), "has 3 dimensions but the embedding model has 4") {
		t.Errorf("Bootstrap with other dimensions = %v; want a dimensions error", err)
	}
}

// TestBootstrapGoesInBatchesAndResumes: on one connection, agents beyond
// one batch all get their schemas; a batch that fails rolls back alone
// (the batches before it keep their schemas) and says which agent and why;
// once the cause is gone the next Bootstrap finishes the rest.
func TestBootstrapGoesInBatchesAndResumes(t *testing.T) {
	s := newStore(t, Config{MaxConns: 1})
	s.batch = 2
	ctx := ctxT(t)
	// dave's memory tables were made for another embedding model, and
	// his knowledge tables are gone: Bootstrap must create him again and
	// then refuses his memory_embeddings.
	if err := s.Bootstrap(ctx, []string{"dave"}, dims+1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, "DROP TABLE "+s.ns+"_dave.knowledge_documents CASCADE"); err != nil {
		t.Fatal(err)
	}
	agents := []string{"ann", "bob", "cat", "dave", "eve"}
	err := s.Bootstrap(ctx, agents, dims)
	if err == nil || !strings.Contains(err.Error(), `agent "dave"`) || !strings.Contains(err.Error(), fmt.Sprintf("has %d dimensions but the embedding model has %d", dims+1, dims)) {
		t.Fatalf("Bootstrap(%q) with dave's tables of other dimensions = %v; want an error naming dave and the dimensions", agents, err)
	}
	if missing, err := s.MissingTables(ctx, []string{"ann", "bob"}); err != nil || len(missing) != 0 {
		t.Errorf("after a later batch failed, MissingTables(ann, bob) = %q, %v; want none: the first batch stays", missing, err)
	}
	if missing, err := s.MissingTables(ctx, []string{"cat"}); err != nil || len(missing) == 0 {
		t.Errorf("MissingTables(cat) = %q, %v; want its tables missing: its batch failed with dave's", missing, err)
	}

	if _, err := s.pool.Exec(ctx, "DROP SCHEMA "+s.ns+"_dave CASCADE"); err != nil {
		t.Fatal(err)
	}
	if err := s.Bootstrap(ctx, agents, dims); err != nil {
		t.Fatalf("Bootstrap(%q) once dave's old tables are gone = %v", agents, err)
	}
	if missing, err := s.MissingTables(ctx, agents); err != nil || len(missing) != 0 {
		t.Errorf("MissingTables(%q) = %q, %v; want none", agents, missing, err)
	}
	for _, id := range agents {
		if _, err := s.CreateSession(ctx, NewSession{SessionID: "s-" + id, AgentID: id, LeaseID: "l-" + id, StartedAt: time.Now()}); err != nil {
			t.Errorf("CreateSession for %s = %v; want the agent registered", id, err)
		}
	}
}
