package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"choir/choird/headless"
)

// The local knowledge base of headless runs (seed 002 §2.4; the rules
// are choird/headless/kb's): kb_objects, kb_embeddings and kb_cursor in
// the control schema.

// KB bounds.
const (
	// MaxKBText bounds the text kept (and embedded) for one object.
	MaxKBText = 2048
	// MaxKBBatch bounds the objects KBIndex stores in one transaction.
	MaxKBBatch = 1000
)

// kbCursorName is the indexer's row in kb_cursor.
const kbCursorName = "receipts"

// KBObject is one indexed object.
type KBObject struct {
	Object    string // SHA-256 hex
	Agent     string
	Run       string
	ReceiptID int64 // the run_receipts.id that named it
	Kind      string
	Text      string // what is embedded and shown as the snippet
	Created   time.Time
}

// KBReceipt is a receipt as the indexer reads it: with its global id
// (the order of appends) and its run's agent.
type KBReceipt struct {
	ID    int64
	Agent string
	headless.Receipt
}

func checkKBObject(o KBObject) error {
	what := fmt.Sprintf("kb object %q", o.Object)
	if !validSHA256(o.Object) {
		return fmt.Errorf("%s: not an object hash (64 lowercase hex digits)", what)
	}
	if _, err := agentIDOK(o.Agent); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if o.Kind == "" || len(o.Kind) > 40 || strings.ContainsFunc(o.Kind, func(r rune) bool { return !('a' <= r && r <= 'z' || r == '_') }) {
		return fmt.Errorf("%s: kind %q: want 1 to 40 of a-z and _", what, o.Kind)
	}
	if strings.TrimSpace(o.Text) == "" || len(o.Text) > MaxKBText || !utf8.ValidString(o.Text) || strings.ContainsRune(o.Text, 0) {
		return fmt.Errorf("%s: text: want 1 to %d bytes of UTF-8 without NUL, not blank", what, MaxKBText)
	}
	return nil
}

func validSHA256(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func agentIDOK(id string) (string, error) {
	if !agentIDRE.MatchString(id) {
		return "", fmt.Errorf("agent id %q: want [a-z0-9][a-z0-9_-]*", id)
	}
	return id, nil
}

// KBCursor is the id of the last receipt the indexer has read (0 at
// first).
func (s *Store) KBCursor(ctx context.Context) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx, s.q(`SELECT receipt_id FROM choir_control.kb_cursor WHERE name = $1`), kbCursorName).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the knowledge base's cursor: %w", err)
	}
	return id, nil
}

// KBReceipts reads at most limit receipts appended after the receipt id
// after, in append order, with their runs' agents.
func (s *Store) KBReceipts(ctx context.Context, after int64, limit int) ([]KBReceipt, error) {
	rows, err := s.pool.Query(ctx, s.q(`SELECT r.id, u.agent_id, r.seq, r.run_id, r.kind, r.body, r.objects, r.at
		FROM choir_control.run_receipts r JOIN choir_control.runs u ON u.id = r.run_id
		WHERE r.id > $1 ORDER BY r.id LIMIT $2`), after, limit)
	if err != nil {
		return nil, fmt.Errorf("read receipts after %d for the knowledge base: %w", after, err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (KBReceipt, error) {
		var k KBReceipt
		var objects []string
		err := r.Scan(&k.ID, &k.Agent, &k.Seq, &k.RunID, &k.Kind, &k.Body, &objects, &k.At)
		k.Objects = objects
		return k, err
	})
}

// KBIndex stores objs (an object already indexed keeps its first row) and
// moves the cursor to through, in one transaction: a receipt is indexed
// once, also across a restart. A cursor that moved past through meanwhile
// is left where it is. It returns the objects that were new.
func (s *Store) KBIndex(ctx context.Context, through int64, objs []KBObject) ([]string, error) {
	if len(objs) > MaxKBBatch {
		return nil, fmt.Errorf("index %d objects in the knowledge base: at most %d at once", len(objs), MaxKBBatch)
	}
	for _, o := range objs {
		if err := checkKBObject(o); err != nil {
			return nil, fmt.Errorf("index in the knowledge base: %w", err)
		}
	}
	cols := make([][]string, 5)
	ids := make([]int64, len(objs))
	for i, o := range objs {
		for j, v := range []string{o.Object, o.Agent, o.Run, o.Kind, o.Text} {
			cols[j] = append(cols[j], v)
		}
		ids[i] = o.ReceiptID
	}
	var added []string
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// One statement for the batch; the first row of an object repeated
		// in it wins, as against one already stored.
		rows, err := tx.Query(ctx, s.q(`INSERT INTO choir_control.kb_objects (object, agent_id, run_id, receipt_id, kind, text)
			SELECT DISTINCT ON (o) o, a, r, i, k, t FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[])
				WITH ORDINALITY AS x (o, a, r, i, k, t, n) ORDER BY o, n
			ON CONFLICT (object) DO NOTHING RETURNING object`), cols[0], cols[1], cols[2], ids, cols[3], cols[4])
		if err != nil {
			return err
		}
		if added, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, s.q(`INSERT INTO choir_control.kb_cursor (name, receipt_id) VALUES ($1, $2)
			ON CONFLICT (name) DO UPDATE SET receipt_id = greatest(choir_control.kb_cursor.receipt_id, EXCLUDED.receipt_id)`), kbCursorName, through)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("index in the knowledge base through receipt %d: %w", through, err)
	}
	return added, nil
}

// KBGet returns an indexed object; ErrNotFound when it is not indexed.
func (s *Store) KBGet(ctx context.Context, object string) (KBObject, error) {
	var o KBObject
	err := s.pool.QueryRow(ctx, s.q(`SELECT object, agent_id, run_id, receipt_id, kind, text, created_at
		FROM choir_control.kb_objects WHERE object = $1`), object).Scan(&o.Object, &o.Agent, &o.Run, &o.ReceiptID, &o.Kind, &o.Text, &o.Created)
	if errors.Is(err, pgx.ErrNoRows) {
		return KBObject{}, fmt.Errorf("kb object %q: %w", object, ErrNotFound)
	}
	if err != nil {
		return KBObject{}, fmt.Errorf("kb object %q: %w", object, err)
	}
	return o, nil
}

// KBSetVector stores an object's vector and the model that made it,
// replacing one it had.
func (s *Store) KBSetVector(ctx context.Context, object, model string, vec []float32) error {
	what := fmt.Sprintf("set the vector of kb object %s", object)
	if err := checkVector(what, vec); err != nil {
		return err
	}
	return s.memConn(ctx, func(c *pgx.Conn) error {
		tag, err := c.Exec(ctx, s.q(`INSERT INTO choir_control.kb_embeddings (object, model, embedding)
			SELECT object, $2, $3 FROM choir_control.kb_objects WHERE object = $1
			ON CONFLICT (object) DO UPDATE SET model = EXCLUDED.model, embedding = EXCLUDED.embedding`), object, model, pgvector.NewVector(vec))
		if err != nil {
			return vectorErr(what, vec, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%s: %w", what, ErrNotFound)
		}
		return nil
	})
}

// KBWithoutVectors lists at most limit objects that have no vector of
// model, oldest first: what the indexer queues again.
func (s *Store) KBWithoutVectors(ctx context.Context, model string, limit int) ([]KBObject, error) {
	rows, err := s.pool.Query(ctx, s.q(`SELECT o.object, o.agent_id, o.run_id, o.receipt_id, o.kind, o.text, o.created_at
		FROM choir_control.kb_objects o LEFT JOIN choir_control.kb_embeddings e ON e.object = o.object AND e.model = $1
		WHERE e.object IS NULL ORDER BY o.receipt_id, o.object LIMIT $2`), model, limit)
	if err != nil {
		return nil, fmt.Errorf("kb objects without vectors: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (KBObject, error) {
		var o KBObject
		err := r.Scan(&o.Object, &o.Agent, &o.Run, &o.ReceiptID, &o.Kind, &o.Text, &o.Created)
		return o, err
	})
}

// KBDropOtherModels deletes the vectors another model made (they are
// not comparable with the configured model's) and says how many.
func (s *Store) KBDropOtherModels(ctx context.Context, model string) (int64, error) {
	tag, err := s.pool.Exec(ctx, s.q(`DELETE FROM choir_control.kb_embeddings WHERE model <> $1`), model)
	if err != nil {
		return 0, fmt.Errorf("drop kb vectors of models other than %q: %w", model, err)
	}
	return tag.RowsAffected(), nil
}

// KBSearchReq is one knowledge-base search: Query (text), Vector (of the
// configured model), or both, fused by RRF as memory's hybrid mode.
type KBSearchReq struct {
	Query  string
	Vector []float32
	Agent  string // "" for every agent
	Kind   string // "" for every kind
	Limit  int    // 0 means DefaultSearchLimit; at most MaxSearchLimit
}

// KBHit is one object found, with its text (the caller cuts the
// snippet) and its score (higher first: RRF, ts_rank_cd or 1 - cosine
// distance).
type KBHit struct {
	KBObject
	Score float64
}

func (r *KBSearchReq) check() error {
	if r.Limit == 0 {
		r.Limit = DefaultSearchLimit
	}
	if r.Limit < 1 || r.Limit > MaxSearchLimit {
		return fmt.Errorf("limit %d: want 1 to %d", r.Limit, MaxSearchLimit)
	}
	if len(r.Query) > MaxQueryBytes || !utf8.ValidString(r.Query) || strings.ContainsRune(r.Query, 0) {
		return fmt.Errorf("query: want at most %d bytes of UTF-8 without NUL", MaxQueryBytes)
	}
	if strings.TrimSpace(r.Query) == "" && r.Vector == nil {
		return fmt.Errorf("give a query")
	}
	if r.Agent != "" {
		if _, err := agentIDOK(r.Agent); err != nil {
			return err
		}
	}
	if len(r.Kind) > 40 || !utf8.ValidString(r.Kind) {
		return fmt.Errorf("kind: want at most 40 bytes")
	}
	if r.Vector != nil {
		return checkVector("query", r.Vector)
	}
	return nil
}

// KBSearch finds indexed objects by text (websearch_to_tsquery on the
// kind and text), by vector (the HNSW index; with an agent or kind filter,
// pgvector's iterative scan keeps the filtered list full), or both fused
// by reciprocal rank fusion, in a read-only transaction.
func (s *Store) KBSearch(ctx context.Context, req KBSearchReq) ([]KBHit, error) {
	if err := req.check(); err != nil {
		return nil, fmt.Errorf("search the knowledge base: %w", err)
	}
	depth := req.Limit
	both := strings.TrimSpace(req.Query) != "" && req.Vector != nil
	if both {
		depth = hybridDepth(req.Limit)
	}
	var lists [][]KBHit
	err := s.memConn(ctx, func(c *pgx.Conn) error {
		return pgx.BeginTxFunc(ctx, c, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			if strings.TrimSpace(req.Query) != "" {
				l, err := s.kbText(ctx, tx, req, depth)
				if err != nil {
					return err
				}
				lists = append(lists, l)
			}
			if req.Vector != nil {
				l, err := s.kbVector(ctx, tx, req, depth)
				if err != nil {
					return err
				}
				lists = append(lists, l)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("search the knowledge base: %w", err)
	}
	if len(lists) == 1 {
		return lists[0][:min(len(lists[0]), req.Limit)], nil
	}
	return fuseKB(lists, req.Limit), nil
}

const kbColumns = `o.object, o.agent_id, o.run_id, o.receipt_id, o.kind, o.text, o.created_at`

func collectKB(rows pgx.Rows) ([]KBHit, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (KBHit, error) {
		var h KBHit
		err := r.Scan(&h.Object, &h.Agent, &h.Run, &h.ReceiptID, &h.Kind, &h.Text, &h.Created, &h.Score)
		return h, err
	})
}

func (s *Store) kbText(ctx context.Context, tx pgx.Tx, req KBSearchReq, limit int) ([]KBHit, error) {
	rows, err := tx.Query(ctx, s.q(`SELECT `+kbColumns+`, ts_rank_cd(o.tsv, q)::float8 AS score
		FROM choir_control.kb_objects o, websearch_to_tsquery('simple', $1) q
		WHERE o.tsv @@ q AND ($2::text = '' OR o.agent_id = $2) AND ($3::text = '' OR o.kind = $3)
		ORDER BY score DESC, o.receipt_id DESC, o.object LIMIT $4`), req.Query, req.Agent, req.Kind, limit)
	if err != nil {
		return nil, err
	}
	return collectKB(rows)
}

func (s *Store) kbVector(ctx context.Context, tx pgx.Tx, req KBSearchReq, limit int) ([]KBHit, error) {
	if _, err := tx.Exec(ctx, `SELECT set_config('hnsw.ef_search', $1, true)`, strconv.Itoa(max(DefaultEfSearch, limit))); err != nil {
		return nil, fmt.Errorf("set hnsw.ef_search: %w", err)
	}
	filtered := req.Agent != "" || req.Kind != ""
	if filtered {
		// pgvector 0.8's iterative scan goes on down the index until the
		// filter has let limit rows through. An older pgvector refuses
		// the setting: in a savepoint, so the search goes on without it
		// (and may find fewer than limit when the filter is narrow).
		if sp, err := tx.Begin(ctx); err == nil {
			if _, err := sp.Exec(ctx, `SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)`); err != nil {
				sp.Rollback(ctx)
			} else if err := sp.Commit(ctx); err != nil {
				return nil, fmt.Errorf("set hnsw.iterative_scan: %w", err)
			}
		}
	}
	vec := pgvector.NewVector(req.Vector)
	rows, err := tx.Query(ctx, s.q(`WITH nn AS (
			SELECT e.object, e.embedding <=> $1 AS dist FROM choir_control.kb_embeddings e
			JOIN choir_control.kb_objects o ON o.object = e.object
			WHERE ($2::text = '' OR o.agent_id = $2) AND ($3::text = '' OR o.kind = $3)
			ORDER BY e.embedding <=> $1 LIMIT $4)
		SELECT `+kbColumns+`, (1 - nn.dist)::float8 FROM nn JOIN choir_control.kb_objects o ON o.object = nn.object
		ORDER BY nn.dist, o.object`), vec, req.Agent, req.Kind, limit)
	if err != nil {
		return nil, vectorErr("query", req.Vector, err)
	}
	hits, err := collectKB(rows)
	if err != nil {
		return nil, vectorErr("query", req.Vector, err)
	}
	return hits, nil
}

// fuseKB is fuse for kb hits: reciprocal rank fusion, ties to the better
// best rank, then to the object.
func fuseKB(lists [][]KBHit, limit int) []KBHit {
	type fused struct {
		hit  KBHit
		best int
	}
	byObj := map[string]*fused{}
	var order []*fused
	for _, l := range lists {
		for i, h := range l {
			rank := i + 1
			f, ok := byObj[h.Object]
			if !ok {
				f = &fused{hit: h, best: rank}
				f.hit.Score = 0
				byObj[h.Object] = f
				order = append(order, f)
			}
			f.hit.Score += 1 / float64(RRFK+rank)
			f.best = min(f.best, rank)
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if a.hit.Score != b.hit.Score {
			return a.hit.Score > b.hit.Score
		}
		if a.best != b.best {
			return a.best < b.best
		}
		return a.hit.Object < b.hit.Object
	})
	out := make([]KBHit, 0, min(limit, len(order)))
	for _, f := range order[:min(limit, len(order))] {
		out = append(out, f.hit)
	}
	return out
}

// fixKBDims makes kb_embeddings hold vectors of dims dimensions. Its
// vectors are derived data (the indexer makes them again from
// kb_objects), so a table made for another size is dropped and made again
// rather than refused as memory's are. Bootstrap calls it.
func (s *Store) fixKBDims(ctx context.Context, tx pgx.Tx, dims int) error {
	var have int
	err := tx.QueryRow(ctx, `SELECT a.atttypmod FROM pg_catalog.pg_attribute a
		WHERE a.attrelid = to_regclass($1) AND a.attname = 'embedding'`, s.control+".kb_embeddings").Scan(&have)
	if err != nil || have == dims {
		return err
	}
	for _, stmt := range []string{
		`DROP TABLE choir_control.kb_embeddings`,
		`CREATE TABLE choir_control.kb_embeddings (
			object    text PRIMARY KEY REFERENCES choir_control.kb_objects (object) ON DELETE CASCADE,
			model     text NOT NULL,
			embedding vector(` + strconv.Itoa(dims) + `) NOT NULL)`,
		`CREATE INDEX kb_embeddings_hnsw ON choir_control.kb_embeddings USING hnsw (embedding vector_cosine_ops)`,
	} {
		if _, err := tx.Exec(ctx, s.q(stmt)); err != nil {
			return fmt.Errorf("bootstrap: remake kb_embeddings for %d dimensions (it had %d): %w", dims, have, err)
		}
	}
	return nil
}
