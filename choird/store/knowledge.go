package store

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"
)

// KnowledgeRef names one knowledge document: by id or by key, not both.
type KnowledgeRef struct {
	ID  string
	Key string
}

func (r KnowledgeRef) String() string {
	if r.Key != "" {
		return fmt.Sprintf("key %q", r.Key)
	}
	return "id " + r.ID
}

func checkKey(key string) error {
	if len(key) > MaxKeyLen || !utf8.ValidString(key) {
		return fmt.Errorf("knowledge key: want at most %d bytes of UTF-8", MaxKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if key[i] == 0 {
			return fmt.Errorf("knowledge key: holds a NUL byte at offset %d", i)
		}
	}
	return nil
}

// UpsertKnowledge stores a knowledge document of the agent (spec 11.6)
// under the agent's role: a new one when doc.Key is empty or new, else it
// replaces the text and metadata of the document with that key (keeping
// its id and created_at). A vector given is stored with it; an update
// without one deletes the old vector, which described the old text, and
// leaves the document to text search until SetKnowledgeVector. It returns
// the document's id and whether it was inserted.
func (s *Store) UpsertKnowledge(ctx context.Context, agentID string, doc KnowledgeDoc) (id string, inserted bool, err error) {
	what := fmt.Sprintf("upsert knowledge of agent %q", agentID)
	if doc.Key != "" {
		what += fmt.Sprintf(" (key %q)", doc.Key)
	}
	if err := checkKey(doc.Key); err != nil {
		return "", false, fmt.Errorf("%s: %w", what, err)
	}
	if err := checkText(what, doc.Text); err != nil {
		return "", false, err
	}
	if doc.Vector != nil {
		if err := checkVector(what, doc.Vector); err != nil {
			return "", false, err
		}
	}
	meta, err := buildMeta(what, doc.Metadata, map[string]any{"content_hash": ContentHash(doc.Text)})
	if err != nil {
		return "", false, err
	}
	var key any
	if doc.Key != "" {
		key = doc.Key
	}
	err = s.agentWrite(ctx, agentID, func(tx pgx.Tx, n names) error {
		err := tx.QueryRow(ctx, `INSERT INTO `+n.Schema+`.knowledge_documents (key, text, metadata) VALUES ($1, $2, $3)
			ON CONFLICT (key) DO UPDATE SET text = EXCLUDED.text, metadata = EXCLUDED.metadata, updated_at = now()
			RETURNING id::text, xmax = 0`, key, doc.Text, meta).Scan(&id, &inserted)
		if err != nil {
			return schemaErr(agentID, n, err)
		}
		if doc.Vector == nil {
			_, err = tx.Exec(ctx, `DELETE FROM `+n.Schema+`.knowledge_embeddings WHERE document_id = $1`, id)
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+n.Schema+`.knowledge_embeddings (document_id, embedding) VALUES ($1, $2)
			ON CONFLICT (document_id) DO UPDATE SET embedding = EXCLUDED.embedding`, id, pgvector.NewVector(doc.Vector)); err != nil {
			return vectorErr("knowledge", doc.Vector, err)
		}
		return nil
	})
	if err != nil {
		return "", false, fmt.Errorf("%s: %w", what, err)
	}
	return id, inserted, nil
}

// SetKnowledgeVector gives a knowledge document its embedding, computed
// by the embedding queue from the text whose ContentHash is contentHash.
// When the document's text changed since (an update raced the queue) it
// is ErrStaleVector and nothing changes; a document the agent does not
// have is ErrNotFound.
func (s *Store) SetKnowledgeVector(ctx context.Context, agentID, docID, contentHash string, vec []float32) error {
	what := fmt.Sprintf("set vector of knowledge %s of agent %q", docID, agentID)
	if !uuidRE.MatchString(docID) {
		return fmt.Errorf("%s: the id is not a UUID", what)
	}
	if err := checkVector(what, vec); err != nil {
		return err
	}
	return s.agentWrite(ctx, agentID, func(tx pgx.Tx, n names) error {
		var hash string
		err := tx.QueryRow(ctx, `SELECT coalesce(metadata->>'content_hash', '') FROM `+n.Schema+`.knowledge_documents WHERE id = $1 FOR UPDATE`, docID).Scan(&hash)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%s: %w", what, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", what, schemaErr(agentID, n, err))
		}
		if hash != contentHash {
			return fmt.Errorf("%s: vector computed for %s, the text is now %s: %w", what, contentHash, hash, ErrStaleVector)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+n.Schema+`.knowledge_embeddings (document_id, embedding) VALUES ($1, $2)
			ON CONFLICT (document_id) DO UPDATE SET embedding = EXCLUDED.embedding`, docID, pgvector.NewVector(vec)); err != nil {
			return vectorErr(what, vec, err)
		}
		return nil
	})
}

// DeleteKnowledge deletes one knowledge document of the agent, with its
// vector, under the agent's role; ErrNotFound when it has none such.
func (s *Store) DeleteKnowledge(ctx context.Context, agentID string, ref KnowledgeRef) error {
	what := fmt.Sprintf("delete knowledge %s of agent %q", ref, agentID)
	var where string
	var arg string
	switch {
	case (ref.ID == "") == (ref.Key == ""):
		return fmt.Errorf("delete knowledge of agent %q: name the document by id or by key, not both or neither", agentID)
	case ref.ID != "":
		if !uuidRE.MatchString(ref.ID) {
			return fmt.Errorf("%s: the id is not a UUID", what)
		}
		where, arg = "id = $1", ref.ID
	default:
		if err := checkKey(ref.Key); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		where, arg = "key = $1", ref.Key
	}
	return s.agentWrite(ctx, agentID, func(tx pgx.Tx, n names) error {
		tag, err := tx.Exec(ctx, `DELETE FROM `+n.Schema+`.knowledge_documents WHERE `+where, arg)
		if err != nil {
			return fmt.Errorf("%s: %w", what, schemaErr(agentID, n, err))
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%s: %w", what, ErrNotFound)
		}
		return nil
	})
}

// ListKnowledge returns up to limit (1 to MaxSearchLimit) of target's
// knowledge documents, newest update first, without their vectors
// (HasVector says whether one is stored). caller is the agent asking
// ("" for the operator): target's own role reads when they are the same.
func (s *Store) ListKnowledge(ctx context.Context, caller, target string, limit int) ([]KnowledgeDoc, error) {
	what := fmt.Sprintf("list knowledge of agent %q", target)
	if limit < 1 || limit > MaxSearchLimit {
		return nil, fmt.Errorf("%s: limit %d: want 1 to %d", what, limit, MaxSearchLimit)
	}
	var out []KnowledgeDoc
	err := s.memRead(ctx, caller, target, func(tx pgx.Tx, n names) error {
		rows, err := tx.Query(ctx, `SELECT d.id::text, coalesce(d.key, ''), d.text, d.metadata, coalesce(d.metadata->>'content_hash', ''),
				e.document_id IS NOT NULL, d.created_at, d.updated_at
			FROM `+n.Schema+`.knowledge_documents d LEFT JOIN `+n.Schema+`.knowledge_embeddings e ON e.document_id = d.id
			ORDER BY d.updated_at DESC, d.id LIMIT $1`, limit)
		if err != nil {
			return schemaErr(target, n, err)
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (KnowledgeDoc, error) {
			var d KnowledgeDoc
			err := r.Scan(&d.ID, &d.Key, &d.Text, &d.Metadata, &d.ContentHash, &d.HasVector, &d.CreatedAt, &d.UpdatedAt)
			return d, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}
