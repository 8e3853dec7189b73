package store

import (
	"context"
	_ "embed"
	"fmt"
	"regexp"
	"slices"
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

// BootstrapBatch is how many agents' schemas one transaction of Bootstrap
// creates. Creating an agent's role, schema, four tables and their indexes
// takes a few dozen locks held to the transaction's end; PGlite's lock
// table (max_locks_per_transaction) ran out at the 827th agent of one
// transaction (SQLSTATE 53200), so the agents go in batches well below it.
const BootstrapBatch = 50

// Bootstrap creates what is missing of the schema (spec 23 and schema.sql):
// the vector extension, the control schema and its tables, and for each
// agent a NOLOGIN role and a schema owned by it with the memory and
// knowledge tables, embeddings of embeddingDims dimensions. It changes
// nothing that already exists, so choird runs it at every start. The
// control schema comes first in a transaction of its own; then one query
// finds the agents already complete (registered, their four tables there,
// choird's user a member of their role), whose embedding sizes are checked
// in one more, and the others are created BootstrapBatch at a time, each
// batch its own transaction: an interrupted bootstrap keeps the batches it
// committed and the next one resumes after them. Embedding tables made
// with other dimensions are an error (migrations are manual in v1).
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
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if err := s.bootstrapLock(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, ext); err != nil {
			return fmt.Errorf("bootstrap: create extension vector (pgvector must be installed in the server, and creating it may need a superuser): %w", err)
		}
		if _, err := tx.Exec(ctx, control); err != nil {
			return fmt.Errorf("bootstrap: schema %s: %w", s.control, err)
		}
		return s.fixKBDims(ctx, tx, embeddingDims) // kb.go
	})
	if err != nil {
		return err
	}
	done, err := s.completeAgents(ctx, agents, owner)
	if err != nil {
		return err
	}
	if err := checkDims(ctx, s.pool, owner, done, embeddingDims); err != nil {
		return err
	}
	var todo []names
	for _, n := range agents {
		if !slices.Contains(done, n.bare) {
			todo = append(todo, n)
		}
	}
	size := s.batch
	if size <= 0 {
		size = BootstrapBatch
	}
	for batch := range slices.Chunk(todo, size) {
		err := s.inTx(ctx, func(tx pgx.Tx) error {
			if err := s.bootstrapLock(ctx, tx); err != nil {
				return err
			}
			schemas := make([]string, 0, len(batch))
			for _, n := range batch {
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
				schemas = append(schemas, n.bare)
			}
			return checkDims(ctx, tx, owner, schemas, embeddingDims)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// bootstrapLock serialises bootstraps of the namespace (two choirds on one
// database) for the rest of tx.
func (s *Store) bootstrapLock(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", s.ns+" bootstrap"); err != nil {
		return fmt.Errorf("bootstrap: lock: %w", err)
	}
	return nil
}

// completeAgents names, of agents, the schemas that need nothing from
// Bootstrap: the agent is in the control schema's agents table, its four
// tables exist, and choird's user is a member of its role. One query.
func (s *Store) completeAgents(ctx context.Context, agents []names, owner map[string]string) ([]string, error) {
	ids, schemas := make([]string, len(agents)), make([]string, len(agents))
	for i, n := range agents {
		ids[i], schemas[i] = owner[n.bare], n.bare
	}
	rows, err := s.pool.Query(ctx, s.q(`
		SELECT t.nsp FROM unnest($1::text[], $2::text[]) AS t (id, nsp)
		WHERE EXISTS (SELECT FROM choir_control.agents a WHERE a.agent_id = t.id)
		  AND EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.rolname = t.nsp AND pg_catalog.pg_has_role(current_user, r.oid, 'MEMBER'))
		  AND (SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		       WHERE n.nspname = t.nsp AND c.relkind = 'r' AND c.relname = ANY ($3::text[])) = cardinality($3::text[])`),
		ids, schemas, agentTables)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: find the agents whose schemas exist: %w", err)
	}
	done, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("bootstrap: find the agents whose schemas exist: %w", err)
	}
	return done, nil
}

// rowsQuerier is a transaction or the pool.
type rowsQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// checkDims refuses embedding tables of the schemas whose vector size is
// not dims, naming the agent (owner maps a schema to its agent id).
func checkDims(ctx context.Context, q rowsQuerier, owner map[string]string, schemas []string, dims int) error {
	if len(schemas) == 0 {
		return nil
	}
	rows, err := q.Query(ctx, `
		SELECT n.nspname, c.relname, a.atttypmod
		FROM pg_catalog.pg_attribute a
		JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = ANY ($1::text[]) AND a.attname = 'embedding'
		  AND c.relname IN ('memory_embeddings', 'knowledge_embeddings')
		  AND a.atttypmod <> $2
		ORDER BY n.nspname, c.relname
		LIMIT 1`, schemas, dims)
	if err != nil {
		return fmt.Errorf("bootstrap: read embedding sizes: %w", err)
	}
	type col struct {
		Schema string
		Table  string
		Dims   int
	}
	cols, err := pgx.CollectRows(rows, pgx.RowToStructByPos[col])
	if err != nil {
		return fmt.Errorf("bootstrap: read embedding sizes: %w", err)
	}
	for _, c := range cols {
		return fmt.Errorf("agent %q: %s.%s.embedding has %d dimensions but the embedding model has %d; "+
			"migrations are manual in v1: change the column and rebuild its embeddings, or keep the old model",
			owner[c.Schema], c.Schema, c.Table, c.Dims, dims)
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
