package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"
	pgxvec "github.com/pgvector/pgvector-go/pgx"
)

// Memory tiers (spec 11.4-11.5), the values of memory_documents.tier.
const (
	TierMidTerm         = "mid_term"
	TierLongTermSummary = "long_term_summary"
	TierLongTermDetail  = "long_term_detail"
)

// Chunk kinds, metadata "kind": what a memory chunk was cut from.
// Promotion turns a session's summary chunks into long_term_summary and
// its event chunks into long_term_detail.
const (
	KindEvents  = "events"
	KindSummary = "summary"
)

// Bounds on what the memory API takes.
const (
	MaxChunkBytes   = 64 << 10 // one chunk's or knowledge document's text
	MaxMetadataSize = 16 << 10 // its metadata object, as JSON
	MaxSessionIDLen = 200
	MaxKeyLen       = 512 // a knowledge key
	MaxDocsPerAdd   = 10000
)

// Metadata keys the store sets itself; callers may not.
var reservedMeta = []string{"kind", "revisions", "content_hash"}

// ErrStaleVector is SetKnowledgeVector refusing a vector computed for a
// text the document no longer has.
var ErrStaleVector = errors.New("the document's text changed since its vector was computed")

// MemoryDoc is one chunk of session-derived memory (spec 23.2).
type MemoryDoc struct {
	ID         string // set by AddMemory
	SessionID  string
	Tier       string // empty means mid_term
	ChunkIndex int
	Kind       string  // KindEvents (the default) or KindSummary
	Revisions  []int64 // the session events the chunk was cut from (provenance)
	Text       string
	// Metadata is a JSON object of the caller's tags (skill, phase,
	// topic); nil for none. The store adds kind, revisions and
	// content_hash.
	Metadata json.RawMessage
	// Vector is the chunk's embedding, or nil when it is not computed yet
	// (SetMemoryVector adds it later; text search finds the chunk
	// meanwhile). long_term_detail chunks have none.
	Vector []float32
}

// KnowledgeDoc is one agent-managed knowledge document (spec 23.3).
type KnowledgeDoc struct {
	ID          string
	Key         string // optional dedup key; empty means none
	Text        string
	Metadata    json.RawMessage
	Vector      []float32 // nil when not computed yet
	ContentHash string    // set by the store: ContentHash(Text)
	HasVector   bool      // set by ListKnowledge
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// ContentHash is the provenance hash of a chunk's or document's text:
// "sha256:" and the hex SHA-256 of its UTF-8 bytes. A reply citing a hit
// can be checked against the text it quotes.
func ContentHash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "sha256:" + hex.EncodeToString(sum[:])
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// memConn runs fn on a pooled connection that knows pgvector's types.
// The registration (one catalogue query) happens once per connection, the
// first time memory uses it; a connection opened before Bootstrap created
// the extension is registered when memory first needs it, not at connect.
func (s *Store) memConn(ctx context.Context, fn func(*pgx.Conn) error) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer c.Release()
	if err := registerVector(ctx, c); err != nil {
		return err
	}
	return fn(c.Conn())
}

func registerVector(ctx context.Context, c *pgxpool.Conn) error {
	if _, ok := c.Conn().TypeMap().TypeForName("vector"); ok {
		return nil
	}
	if err := pgxvec.RegisterTypes(ctx, c.Conn()); err != nil {
		return fmt.Errorf("register pgvector's types (is the vector extension installed? choird's Bootstrap creates it): %w", err)
	}
	return nil
}

// agentWrite runs fn in a transaction under the agent's role (spec 23.0):
// Postgres itself keeps it to the agent's own schema.
func (s *Store) agentWrite(ctx context.Context, agentID string, fn func(pgx.Tx, names) error) error {
	n, err := s.agentNames(agentID)
	if err != nil {
		return err
	}
	return s.memConn(ctx, func(c *pgx.Conn) error {
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			if err := setRole(ctx, tx, agentID, n); err != nil {
				return err
			}
			return fn(tx, n)
		})
	})
}

// memRead runs fn in a read-only transaction on target's schema: under
// target's role when the caller is target itself, as choird's own role
// when it reads another agent's memory (spec 11.2, 23.4) or when the
// caller is the operator (empty).
func (s *Store) memRead(ctx context.Context, caller, target string, fn func(pgx.Tx, names) error) error {
	n, err := s.agentNames(target)
	if err != nil {
		return err
	}
	if caller != "" && caller != target {
		if _, err := s.agentNames(caller); err != nil {
			return fmt.Errorf("caller: %w", err)
		}
	}
	return s.memConn(ctx, func(c *pgx.Conn) error {
		return pgx.BeginTxFunc(ctx, c, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			if caller == target {
				if err := setRole(ctx, tx, target, n); err != nil {
					return err
				}
			}
			return fn(tx, n)
		})
	})
}

// setRole switches tx to the agent's role; a role that does not exist is
// an agent choird never bootstrapped.
func setRole(ctx context.Context, tx pgx.Tx, agentID string, n names) error {
	_, err := tx.Exec(ctx, "SET LOCAL ROLE "+n.Role)
	if code, _ := pgCode(err); code == "22023" || code == "42704" {
		return fmt.Errorf("agent %q has no role %s (is it in config.json? choird creates it at start): %w", agentID, n.bare, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("set role %s: %w", n.bare, err)
	}
	return nil
}

// schemaErr turns "schema does not exist" into a message naming the agent.
func schemaErr(agentID string, n names, err error) error {
	if IsMissingSchema(err) {
		return fmt.Errorf("agent %q has no memory schema %s (is it in config.json? choird creates the schema at start): %w", agentID, n.bare, ErrNotFound)
	}
	return err
}

// checkText refuses a text Postgres cannot hold or the store will not.
func checkText(what, text string) error {
	switch {
	case text == "":
		return fmt.Errorf("%s: empty text", what)
	case len(text) > MaxChunkBytes:
		return fmt.Errorf("%s: text of %d bytes; at most %d", what, len(text), MaxChunkBytes)
	case !utf8.ValidString(text):
		return fmt.Errorf("%s: text is not valid UTF-8", what)
	}
	for i := 0; i < len(text); i++ {
		if text[i] == 0 {
			return fmt.Errorf("%s: text holds a NUL byte at offset %d, which Postgres text cannot store", what, i)
		}
	}
	return nil
}

// checkVector refuses vectors that cosine search cannot use.
func checkVector(what string, v []float32) error {
	if len(v) == 0 {
		return fmt.Errorf("%s: empty vector", what)
	}
	if len(v) > MaxEmbeddingDims {
		return fmt.Errorf("%s: vector of %d dimensions; at most %d", what, len(v), MaxEmbeddingDims)
	}
	zero := true
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("%s: vector element %d is %v; want a finite number", what, i, x)
		}
		if x != 0 {
			zero = false
		}
	}
	if zero {
		return fmt.Errorf("%s: vector is all zeros, which has no direction for cosine search", what)
	}
	return nil
}

// vectorErr explains a vector Postgres refused (dimension mismatch).
func vectorErr(what string, v []float32, err error) error {
	if code, _ := pgCode(err); code == "22000" {
		return fmt.Errorf("%s: a vector of %d dimensions does not fit the agent's embedding column (embedding.dimensions in config.json): %w", what, len(v), err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// buildMeta checks the caller's metadata object and adds the store's keys.
func buildMeta(what string, raw json.RawMessage, add map[string]any) ([]byte, error) {
	obj := map[string]any{}
	if len(raw) > 0 {
		if len(raw) > MaxMetadataSize {
			return nil, fmt.Errorf("%s: metadata of %d bytes; at most %d", what, len(raw), MaxMetadataSize)
		}
		if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("%s: metadata is not a JSON object", what)
		}
		for _, k := range reservedMeta {
			if _, ok := obj[k]; ok {
				return nil, fmt.Errorf("%s: metadata key %q is the store's own (provenance); remove it", what, k)
			}
		}
	}
	for k, v := range add {
		obj[k] = v
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: metadata: %w", what, err)
	}
	return b, nil
}

func checkDoc(i int, d *MemoryDoc) error {
	what := fmt.Sprintf("memory chunk %d", i)
	if d.SessionID == "" || len(d.SessionID) > MaxSessionIDLen || !utf8.ValidString(d.SessionID) {
		return fmt.Errorf("%s: session id %q: want 1 to %d bytes of UTF-8", what, d.SessionID, MaxSessionIDLen)
	}
	what = fmt.Sprintf("memory chunk %d of session %s", i, d.SessionID)
	if d.Tier == "" {
		d.Tier = TierMidTerm
	}
	switch d.Tier {
	case TierMidTerm, TierLongTermSummary, TierLongTermDetail:
	default:
		return fmt.Errorf("%s: tier %q: want %s, %s or %s", what, d.Tier, TierMidTerm, TierLongTermSummary, TierLongTermDetail)
	}
	if d.Kind == "" {
		d.Kind = KindEvents
	}
	if d.Kind != KindEvents && d.Kind != KindSummary {
		return fmt.Errorf("%s: kind %q: want %s or %s", what, d.Kind, KindEvents, KindSummary)
	}
	if d.ChunkIndex < 0 {
		return fmt.Errorf("%s: chunk index %d is negative", what, d.ChunkIndex)
	}
	for _, r := range d.Revisions {
		if r < 1 {
			return fmt.Errorf("%s: event revision %d: revisions start at 1", what, r)
		}
	}
	if err := checkText(what, d.Text); err != nil {
		return err
	}
	if d.Vector != nil {
		if d.Tier == TierLongTermDetail {
			return fmt.Errorf("%s: long_term_detail chunks carry no vector (spec 11.5)", what)
		}
		if err := checkVector(what, d.Vector); err != nil {
			return err
		}
	}
	return nil
}

// AddMemory stores a session's chunks in the agent's memory, all in one
// transaction under the agent's role, and returns their ids in order.
// Each chunk's metadata records its provenance: kind, the event revisions
// it was cut from and the content hash of its text. A chunk without a
// vector is stored all the same and found by text search until
// SetMemoryVector gives it one.
func (s *Store) AddMemory(ctx context.Context, agentID string, docs []MemoryDoc) ([]string, error) {
	if len(docs) == 0 || len(docs) > MaxDocsPerAdd {
		return nil, fmt.Errorf("add memory of agent %q: %d chunks; want 1 to %d", agentID, len(docs), MaxDocsPerAdd)
	}
	metas := make([][]byte, len(docs))
	docs = append([]MemoryDoc(nil), docs...)
	for i := range docs {
		d := &docs[i]
		if err := checkDoc(i, d); err != nil {
			return nil, fmt.Errorf("add memory of agent %q: %w", agentID, err)
		}
		revs := d.Revisions
		if revs == nil {
			revs = []int64{}
		}
		m, err := buildMeta(fmt.Sprintf("memory chunk %d", i), d.Metadata, map[string]any{
			"kind": d.Kind, "revisions": revs, "content_hash": ContentHash(d.Text),
		})
		if err != nil {
			return nil, fmt.Errorf("add memory of agent %q: %w", agentID, err)
		}
		metas[i] = m
	}
	ids := make([]string, len(docs))
	err := s.agentWrite(ctx, agentID, func(tx pgx.Tx, n names) error {
		for i, d := range docs {
			if err := tx.QueryRow(ctx, `INSERT INTO `+n.Schema+`.memory_documents (session_id, tier, chunk_index, text, metadata)
				VALUES ($1, $2, $3, $4, $5) RETURNING id::text`, d.SessionID, d.Tier, d.ChunkIndex, d.Text, metas[i]).Scan(&ids[i]); err != nil {
				return schemaErr(agentID, n, err)
			}
			if d.Vector != nil {
				if _, err := tx.Exec(ctx, `INSERT INTO `+n.Schema+`.memory_embeddings (document_id, embedding) VALUES ($1, $2)`,
					ids[i], pgvector.NewVector(d.Vector)); err != nil {
					return vectorErr(fmt.Sprintf("memory chunk %d of session %s", i, d.SessionID), d.Vector, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("add memory of agent %q: %w", agentID, err)
	}
	return ids, nil
}

// SetMemoryVector gives a chunk its embedding (or replaces it), for the
// embedding queue that computes vectors after the chunks are stored. A
// long_term_detail chunk takes none; a chunk the agent does not have is
// ErrNotFound.
func (s *Store) SetMemoryVector(ctx context.Context, agentID, docID string, vec []float32) error {
	what := fmt.Sprintf("set vector of memory chunk %s of agent %q", docID, agentID)
	if !uuidRE.MatchString(docID) {
		return fmt.Errorf("%s: the id is not a UUID", what)
	}
	if err := checkVector(what, vec); err != nil {
		return err
	}
	return s.agentWrite(ctx, agentID, func(tx pgx.Tx, n names) error {
		var tier string
		err := tx.QueryRow(ctx, `SELECT tier FROM `+n.Schema+`.memory_documents WHERE id = $1 FOR UPDATE`, docID).Scan(&tier)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%s: %w", what, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", what, schemaErr(agentID, n, err))
		}
		if tier == TierLongTermDetail {
			return fmt.Errorf("%s: the chunk is long_term_detail, which carries no vector (spec 11.5)", what)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+n.Schema+`.memory_embeddings (document_id, embedding) VALUES ($1, $2)
			ON CONFLICT (document_id) DO UPDATE SET embedding = EXCLUDED.embedding`, docID, pgvector.NewVector(vec)); err != nil {
			return vectorErr(what, vec, err)
		}
		return nil
	})
}

// SessionChunked says whether the agent's memory holds chunks of the
// session, so the session-close pipeline can skip a session it already
// chunked (each AddMemory call is one transaction: all its chunks or
// none; ChunkedThrough says how far).
func (s *Store) SessionChunked(ctx context.Context, agentID, sessionID string) (bool, error) {
	var ok bool
	err := s.agentWrite(ctx, agentID, func(tx pgx.Tx, n names) error {
		err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM `+n.Schema+`.memory_documents WHERE session_id = $1)`, sessionID).Scan(&ok)
		return schemaErr(agentID, n, err)
	})
	if err != nil {
		return false, fmt.Errorf("session %s of agent %q chunked: %w", sessionID, agentID, err)
	}
	return ok, nil
}

// PromoteOldSessions ages the agent's memory (spec 11.5, 11.8 step 7):
// while more than keep sessions have mid_term chunks, the oldest of them
// (by its first chunk's created_at, then session id) is promoted: its
// summary chunks become long_term_summary, keeping their vectors, its
// event chunks long_term_detail, their vectors deleted. Each session is
// one transaction under the agent's role, serialised per agent by an
// advisory lock, so a choird that dies half way and runs it again ends in
// the same state. It returns the promoted sessions, oldest first.
func (s *Store) PromoteOldSessions(ctx context.Context, agentID string, keep int) ([]string, error) {
	if keep < 0 {
		return nil, fmt.Errorf("promote memory of agent %q: keep %d sessions: want 0 or more (mid_term_sessions in config.json)", agentID, keep)
	}
	var promoted []string
	for {
		var done bool
		err := s.agentWrite(ctx, agentID, func(tx pgx.Tx, n names) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, n.bare+" promote"); err != nil {
				return err
			}
			var sessions int
			var oldest string
			err := tx.QueryRow(ctx, `SELECT count(*) OVER (), session_id FROM `+n.Schema+`.memory_documents
				WHERE tier = 'mid_term' GROUP BY session_id ORDER BY min(created_at), session_id LIMIT 1`).Scan(&sessions, &oldest)
			if errors.Is(err, pgx.ErrNoRows) || (err == nil && sessions <= keep) {
				done = true
				return nil
			}
			if err != nil {
				return schemaErr(agentID, n, err)
			}
			if _, err := tx.Exec(ctx, `UPDATE `+n.Schema+`.memory_documents
				SET tier = CASE WHEN metadata->>'kind' = 'summary' THEN 'long_term_summary' ELSE 'long_term_detail' END
				WHERE session_id = $1 AND tier = 'mid_term'`, oldest); err != nil {
				return fmt.Errorf("session %s: %w", oldest, err)
			}
			if _, err := tx.Exec(ctx, `DELETE FROM `+n.Schema+`.memory_embeddings e USING `+n.Schema+`.memory_documents d
				WHERE e.document_id = d.id AND d.session_id = $1 AND d.tier = 'long_term_detail'`, oldest); err != nil {
				return fmt.Errorf("session %s: drop detail vectors: %w", oldest, err)
			}
			promoted = append(promoted, oldest)
			return nil
		})
		if err != nil {
			return promoted, fmt.Errorf("promote memory of agent %q: %w", agentID, err)
		}
		if done {
			return promoted, nil
		}
	}
}
