package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Chunked is what an agent's memory already holds of one session, in any
// tier: where the session-close pipeline picks up (spec 11.8 step 6).
type Chunked struct {
	// ThroughRev is the highest event revision its event chunks were cut
	// from (the largest of their metadata "revisions"), 0 for none.
	ThroughRev int64
	// NextIndex is one past its highest chunk index, 0 for none.
	NextIndex int
	// SummaryHash is the content hash of its newest summary chunk (highest
	// chunk index), "" for none.
	SummaryHash string
}

// ChunkedThrough says what the agent's memory holds of the session, read
// under the agent's role. A session with no chunks is the zero Chunked.
func (s *Store) ChunkedThrough(ctx context.Context, agentID, sessionID string) (Chunked, error) {
	var c Chunked
	err := s.memRead(ctx, agentID, agentID, func(tx pgx.Tx, n names) error {
		err := tx.QueryRow(ctx, `SELECT
			coalesce((SELECT max(r::bigint) FROM `+n.Schema+`.memory_documents d, jsonb_array_elements_text(d.metadata->'revisions') r
			          WHERE d.session_id = $1 AND d.metadata->>'kind' = 'events'), 0),
			coalesce((SELECT max(chunk_index) + 1 FROM `+n.Schema+`.memory_documents WHERE session_id = $1), 0),
			coalesce((SELECT metadata->>'content_hash' FROM `+n.Schema+`.memory_documents
			          WHERE session_id = $1 AND metadata->>'kind' = 'summary' ORDER BY chunk_index DESC LIMIT 1), '')`,
			sessionID).Scan(&c.ThroughRev, &c.NextIndex, &c.SummaryHash)
		return schemaErr(agentID, n, err)
	})
	if err != nil {
		return Chunked{}, fmt.Errorf("what memory holds of session %s of agent %q: %w", sessionID, agentID, err)
	}
	return c, nil
}

// Unembedded is a memory chunk that should have a vector and has none.
type Unembedded struct {
	ID, Text string
}

// MemoryWithoutVectors lists at most limit of the agent's mid_term and
// long_term_summary chunks that have no vector (the embedding queue gave
// up on them, or choird stopped before it delivered), oldest first, so
// they can be queued again. long_term_detail chunks carry none by design.
func (s *Store) MemoryWithoutVectors(ctx context.Context, agentID string, limit int) ([]Unembedded, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []Unembedded
	err := s.memRead(ctx, agentID, agentID, func(tx pgx.Tx, n names) error {
		rows, err := tx.Query(ctx, `SELECT d.id::text, d.text FROM `+n.Schema+`.memory_documents d
			WHERE d.tier IN ('mid_term', 'long_term_summary')
			  AND NOT EXISTS (SELECT FROM `+n.Schema+`.memory_embeddings e WHERE e.document_id = d.id)
			ORDER BY d.created_at, d.session_id, d.chunk_index LIMIT $1`, limit)
		if err != nil {
			return schemaErr(agentID, n, err)
		}
		out, err = pgx.CollectRows(rows, pgx.RowToStructByPos[Unembedded])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("memory chunks of agent %q without vectors: %w", agentID, err)
	}
	return out, nil
}
