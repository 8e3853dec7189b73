package store

import (
	"context"
	_ "embed"
	"fmt"
	"regexp"
	"strings"
	"text/template"

	"github.com/jackc/pgx/v5"
)

//go:embed schema.sql
var schemaSQL string

var schema = template.Must(template.New("schema.sql").Parse(schemaSQL))

// MaxEmbeddingDims is the most dimensions pgvector's HNSW index takes.
const MaxEmbeddingDims = 2000

// agentIDRE is what config.json allows as an agent id.
var agentIDRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// names are one agent's schema and role, ready for the schema templates.
type names struct {
	Control  string // quoted control schema
	Schema   string // quoted agent schema
	Role     string // quoted agent role (the same name)
	RoleName string // the role name as a string literal
	Dims     int
	bare     string // unquoted schema and role name
}

// agentNames maps an agent id to its schema and role: <ns>_<id> with each
// "-" turned into "_".
func (s *Store) agentNames(agentID string) (names, error) {
	if !agentIDRE.MatchString(agentID) {
		return names{}, fmt.Errorf("agent id %q: want [a-z0-9][a-z0-9_-]*", agentID)
	}
	bare := s.ns + "_" + strings.ReplaceAll(agentID, "-", "_")
	if len(bare) > 63 {
		return names{}, fmt.Errorf("agent id %q: schema name %s is longer than Postgres's 63 bytes", agentID, bare)
	}
	if bare == s.ns+"_control" {
		return names{}, fmt.Errorf("agent id %q: its schema would be the control schema %s; rename the agent", agentID, bare)
	}
	return names{
		Control:  s.control,
		Schema:   pgx.Identifier{bare}.Sanitize(),
		Role:     pgx.Identifier{bare}.Sanitize(),
		RoleName: "'" + bare + "'", // [a-z0-9_] only: nothing to escape
		bare:     bare,
	}, nil
}

func render(name string, data any) (string, error) {
	var b strings.Builder
	if err := schema.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("render schema template %s: %w", name, err)
	}
	return b.String(), nil
}

// Bootstrap creates what is missing of the schema (spec 23 and schema.sql):
// the vector extension, the control schema and its tables, and for each
// agent a NOLOGIN role and a schema owned by it with the memory and
// knowledge tables, embeddings of embeddingDims dimensions. It runs in one
// transaction and changes nothing that already exists, so choird runs it at
// every start. Embedding tables made with other dimensions are an error
// (migrations are manual in v1).
func (s *Store) Bootstrap(ctx context.Context, agentIDs []string, embeddingDims int) error {
	if embeddingDims < 1 || embeddingDims > MaxEmbeddingDims {
		return fmt.Errorf("embedding dimensions %d: want 1 to %d (pgvector's HNSW limit)", embeddingDims, MaxEmbeddingDims)
	}
	agents := make([]names, 0, len(agentIDs))
	owner := map[string]string{} // schema name -> agent id
	for _, id := range agentIDs {
		n, err := s.agentNames(id)
		if err != nil {
			return err
		}
		if other, ok := owner[n.bare]; ok {
			if other == id {
				continue
			}
			return fmt.Errorf("agent ids %q and %q both map to schema %s; rename one", other, id, n.bare)
		}
		owner[n.bare] = id
		n.Dims = embeddingDims
		agents = append(agents, n)
	}
	ext, err := render("extension", nil)
	if err != nil {
		return err
	}
	control, err := render("control", names{Control: s.control, Dims: embeddingDims})
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", s.ns+" bootstrap"); err != nil {
			return fmt.Errorf("bootstrap: lock: %w", err)
		}
		if _, err := tx.Exec(ctx, ext); err != nil {
			return fmt.Errorf("bootstrap: create extension vector (pgvector must be installed in the server, and creating it may need a superuser): %w", err)
		}
		if _, err := tx.Exec(ctx, control); err != nil {
			return fmt.Errorf("bootstrap: schema %s: %w", s.control, err)
		}
		if err := s.fixKBDims(ctx, tx, embeddingDims); err != nil { // kb.go
			return err
		}
		for _, n := range agents {
			id := owner[n.bare]
			ddl, err := render("agent", n)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, ddl); err != nil {
				return fmt.Errorf("bootstrap: agent %q, schema %s: %w", id, n.bare, err)
			}
			if _, err := tx.Exec(ctx, s.q(`INSERT INTO choir_control.agents (agent_id) VALUES ($1) ON CONFLICT DO NOTHING`), id); err != nil {
				return fmt.Errorf("bootstrap: agent %q: %w", id, err)
			}
			if err := checkDims(ctx, tx, id, n.bare, embeddingDims); err != nil {
				return err
			}
		}
		return nil
	})
}

// checkDims refuses embedding tables whose vector size is not dims.
func checkDims(ctx context.Context, tx pgx.Tx, agentID, schemaName string, dims int) error {
	rows, err := tx.Query(ctx, `
		SELECT c.relname, a.atttypmod
		FROM pg_catalog.pg_attribute a
		JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND a.attname = 'embedding'
		  AND c.relname IN ('memory_embeddings', 'knowledge_embeddings')
		ORDER BY c.relname`, schemaName)
	if err != nil {
		return fmt.Errorf("bootstrap: agent %q: read embedding sizes: %w", agentID, err)
	}
	type col struct {
		Table string
		Dims  int
	}
	cols, err := pgx.CollectRows(rows, pgx.RowToStructByPos[col])
	if err != nil {
		return fmt.Errorf("bootstrap: agent %q: read embedding sizes: %w", agentID, err)
	}
	for _, c := range cols {
		if c.Dims != dims {
			return fmt.Errorf("agent %q: %s.%s.embedding has %d dimensions but the embedding model has %d; "+
				"migrations are manual in v1: change the column and rebuild its embeddings, or keep the old model",
				agentID, schemaName, c.Table, c.Dims, dims)
		}
	}
	return nil
}

// Drop removes every schema and role of the store's namespace, with all
// their data: the control schema, and each agent schema and role named in
// its agents table. Tests use it at cleanup; choird never calls it.
func (s *Store) Drop(ctx context.Context) error {
	var agentIDs []string
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, s.control+".agents").Scan(&exists); err != nil {
			return err
		}
		if exists {
			rows, err := tx.Query(ctx, s.q(`SELECT agent_id FROM choir_control.agents ORDER BY agent_id`))
			if err != nil {
				return err
			}
			if agentIDs, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
				return err
			}
		}
		for _, id := range agentIDs {
			n, err := s.agentNames(id)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "DROP SCHEMA IF EXISTS "+n.Schema+" CASCADE"); err != nil {
				return err
			}
			var role bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = $1)`, n.bare).Scan(&role); err != nil {
				return err
			}
			if role {
				if _, err := tx.Exec(ctx, "DROP OWNED BY "+n.Role+" CASCADE"); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, "DROP ROLE "+n.Role); err != nil {
					return err
				}
			}
		}
		_, err := tx.Exec(ctx, "DROP SCHEMA IF EXISTS "+s.control+" CASCADE")
		return err
	})
	if err != nil {
		return fmt.Errorf("drop namespace %s: %w", s.ns, err)
	}
	return nil
}
