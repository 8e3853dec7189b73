package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// controlTables and agentTables are the tables Bootstrap creates, in the
// control schema and in each agent's schema (schema.sql).
var (
	controlTables = []string{"agents", "sessions", "leases", "session_events", "session_snapshots", "pending_approvals", "agent_images", "llm_usage", "usage_allowances", "spend_notices", "dm_outbox", "dm_inbox", "work_items", "runs", "run_receipts", "sched_fires", "kb_objects", "kb_embeddings", "kb_cursor"}
	agentTables   = []string{"memory_documents", "memory_embeddings", "knowledge_documents", "knowledge_embeddings"}
)

// MissingTables names the tables of the store's namespace that Bootstrap
// would create for agentIDs and the database lacks (schema-qualified, as
// <ns>_control.sessions), control tables first; none when all are there.
// It is one catalogue query (to_regclass on each name), cheap enough for
// the health probe: a database that came back empty (a server replaced, or
// restored without choird's schemas) lists them all.
func (s *Store) MissingTables(ctx context.Context, agentIDs []string) ([]string, error) {
	var want, names []string // quoted for to_regclass; bare for people
	for _, t := range controlTables {
		want, names = append(want, s.control+"."+t), append(names, s.ns+"_control."+t)
	}
	seen := map[string]bool{}
	for _, id := range agentIDs {
		n, err := s.agentNames(id)
		if err != nil {
			return nil, err
		}
		if seen[n.bare] {
			continue
		}
		seen[n.bare] = true
		for _, t := range agentTables {
			want, names = append(want, n.Schema+"."+t), append(names, n.bare+"."+t)
		}
	}
	rows, err := s.pool.Query(ctx, `SELECT shown FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t (name, shown, i)
		WHERE to_regclass(name) IS NULL ORDER BY i`, want, names)
	if err != nil {
		return nil, fmt.Errorf("check the tables of namespace %s: %w", s.ns, err)
	}
	missing, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("check the tables of namespace %s: %w", s.ns, err)
	}
	return missing, nil
}

// IsMissingSchema says whether err is Postgres saying a relation or
// schema does not exist (SQLSTATE 42P01 undefined_table, 3F000
// invalid_schema_name): the database lost choird's schemas, which
// Bootstrap recreates.
func IsMissingSchema(err error) bool {
	code, _ := pgCode(err)
	return code == "42P01" || code == "3F000"
}
