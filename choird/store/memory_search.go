package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"
)

// Memory stores a search reads (spec 11.7).
const (
	StoreSession   = "session"   // tiers 2-3: memory_documents
	StoreKnowledge = "knowledge" // tier 4: knowledge_documents
)

// Search modes (spec 11.7, 23.4).
const (
	// ModeSemantic ranks by cosine distance to Vector on the HNSW index.
	ModeSemantic = "semantic"
	// ModeText ranks websearch_to_tsquery('simple', Query) matches by
	// ts_rank_cd.
	ModeText = "text"
	// ModeHybrid fuses the text and the semantic lists by reciprocal rank
	// fusion (RRFK); a document without a vector is still found by text.
	ModeHybrid = "hybrid"
	// ModeSessionDetail reads one session's event chunks (SessionID),
	// whichever tier they are in now, in chunk order or, with a Query,
	// its text matches by rank.
	ModeSessionDetail = "session_detail"
)

// Search bounds and defaults.
const (
	DefaultSearchLimit = 10
	MaxSearchLimit     = 100
	MaxQueryBytes      = 4096
	// DefaultEfSearch is hnsw.ef_search for semantic and hybrid searches:
	// the size of the HNSW candidate list (pgvector's default is 40).
	// BenchmarkMemory measures the recall it buys (DESIGN.md has the
	// figures): on near-random vectors, 10,000 chunks, recall@10 0.47 at
	// 40, 0.70 at 100, 0.97 at 400, for a few ms more a query on PGlite;
	// a memory query is a tool call waiting on a model, so recall wins.
	DefaultEfSearch = 400
	MaxEfSearch     = 1000 // pgvector's limit
	// RRFK is the k of reciprocal rank fusion: a document's hybrid score
	// is the sum over the lists it is in of 1/(RRFK + rank), ranks from 1
	// (Cormack et al. 2009 use 60).
	RRFK = 60
)

// SearchReq is one memory search.
type SearchReq struct {
	// Caller is the agent asking, "" for the operator. Agent is whose
	// memory is read (spec 11.2: any agent's). The agent's own role reads
	// when they are the same, choird's role otherwise.
	Caller, Agent string
	Store         string // StoreSession or StoreKnowledge
	Mode          string // ModeSemantic, ModeText, ModeHybrid, ModeSessionDetail
	Query         string // the text query (text, hybrid, session_detail)
	Vector        []float32
	SessionID     string // session_detail only
	Limit         int    // 0 means DefaultSearchLimit; at most MaxSearchLimit
	EfSearch      int    // 0 means DefaultEfSearch
}

// Hit is one search result with its provenance, so a reply can cite
// where a fact came from.
type Hit struct {
	Agent       string
	Store       string
	DocumentID  string
	SessionID   string  // session store
	Tier        string  // session store
	ChunkIndex  int     // session store
	Kind        string  // session store: events or summary
	Revisions   []int64 // session store: the events the chunk was cut from
	Key         string  // knowledge store
	ContentHash string
	Text        string
	Metadata    json.RawMessage
	// Score orders the hits, higher first: 1 - cosine distance
	// (semantic), ts_rank_cd (text, session_detail with a query; 0
	// without), or the RRF sum (hybrid).
	Score float64
}

func (r *SearchReq) check() error {
	if r.Limit == 0 {
		r.Limit = DefaultSearchLimit
	}
	if r.Limit < 1 || r.Limit > MaxSearchLimit {
		return fmt.Errorf("limit %d: want 1 to %d", r.Limit, MaxSearchLimit)
	}
	if r.EfSearch == 0 {
		r.EfSearch = DefaultEfSearch
	}
	if r.EfSearch < 1 || r.EfSearch > MaxEfSearch {
		return fmt.Errorf("ef_search %d: want 1 to %d", r.EfSearch, MaxEfSearch)
	}
	if len(r.Query) > MaxQueryBytes || !utf8.ValidString(r.Query) {
		return fmt.Errorf("query: want at most %d bytes of UTF-8", MaxQueryBytes)
	}
	for i := 0; i < len(r.Query); i++ {
		if r.Query[i] == 0 {
			return fmt.Errorf("query: holds a NUL byte at offset %d", i)
		}
	}
	switch r.Store {
	case StoreSession, StoreKnowledge:
	default:
		return fmt.Errorf("store %q: want %s or %s", r.Store, StoreSession, StoreKnowledge)
	}
	if r.SessionID != "" && r.Mode != ModeSessionDetail {
		return fmt.Errorf("session_id is for mode %s only", ModeSessionDetail)
	}
	switch r.Mode {
	case ModeText:
		if r.Query == "" {
			return fmt.Errorf("mode text needs a query")
		}
	case ModeSemantic:
		if r.Vector == nil {
			return fmt.Errorf("mode semantic needs a query vector")
		}
	case ModeHybrid:
		if r.Query == "" && r.Vector == nil {
			return fmt.Errorf("mode hybrid needs a query, a vector or both")
		}
	case ModeSessionDetail:
		if r.Store != StoreSession {
			return fmt.Errorf("mode session_detail is for store session only")
		}
		if r.SessionID == "" {
			return fmt.Errorf("mode session_detail needs a session_id")
		}
	default:
		return fmt.Errorf("mode %q: want %s, %s, %s or %s", r.Mode, ModeSemantic, ModeText, ModeHybrid, ModeSessionDetail)
	}
	if r.Vector != nil && r.Mode != ModeSessionDetail {
		if err := checkVector("query", r.Vector); err != nil {
			return err
		}
	}
	return nil
}

// SearchMemory searches one agent's session memory or knowledge (spec
// 11.7, 23.4) in a read-only transaction. The session store's semantic,
// text and hybrid modes read mid_term and long_term_summary chunks;
// session_detail reads one session's event chunks.
func (s *Store) SearchMemory(ctx context.Context, req SearchReq) ([]Hit, error) {
	what := fmt.Sprintf("search %s memory of agent %q", req.Store, req.Agent)
	if err := req.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	var hits []Hit
	err := s.memRead(ctx, req.Caller, req.Agent, func(tx pgx.Tx, n names) error {
		var err error
		switch req.Mode {
		case ModeText:
			hits, err = textSearch(ctx, tx, n, req, req.Limit)
		case ModeSemantic:
			hits, err = semanticSearch(ctx, tx, n, req, req.Limit)
		case ModeHybrid:
			hits, err = hybridSearch(ctx, tx, n, req)
		case ModeSessionDetail:
			hits, err = sessionDetail(ctx, tx, n, req)
		}
		return schemaErr(req.Agent, n, err)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	for i := range hits {
		hits[i].Agent, hits[i].Store = req.Agent, req.Store
	}
	return hits, nil
}

// hitColumns are the columns every search selects from d, in scanHit's
// order, for each store.
func hitColumns(store string) string {
	if store == StoreKnowledge {
		return `d.id::text, '', '', 0, coalesce(d.key, ''), d.text, d.metadata`
	}
	return `d.id::text, d.session_id, d.tier, d.chunk_index, '', d.text, d.metadata`
}

func table(n names, store string) (docs, embeddings string) {
	if store == StoreKnowledge {
		return n.Schema + ".knowledge_documents", n.Schema + ".knowledge_embeddings"
	}
	return n.Schema + ".memory_documents", n.Schema + ".memory_embeddings"
}

// searchableTiers keeps the session store's default searches to mid-term
// chunks and long-term summaries (spec 11.5).
func searchableTiers(store string) string {
	if store == StoreKnowledge {
		return "true"
	}
	return "d.tier IN ('mid_term', 'long_term_summary')"
}

func collectHits(rows pgx.Rows) ([]Hit, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Hit, error) {
		var h Hit
		if err := r.Scan(&h.DocumentID, &h.SessionID, &h.Tier, &h.ChunkIndex, &h.Key, &h.Text, &h.Metadata, &h.Score); err != nil {
			return h, err
		}
		var prov struct {
			Kind        string  `json:"kind"`
			Revisions   []int64 `json:"revisions"`
			ContentHash string  `json:"content_hash"`
		}
		if json.Unmarshal(h.Metadata, &prov) == nil {
			h.Kind, h.Revisions, h.ContentHash = prov.Kind, prov.Revisions, prov.ContentHash
		}
		return h, nil
	})
}

func textSearch(ctx context.Context, tx pgx.Tx, n names, req SearchReq, limit int) ([]Hit, error) {
	docs, _ := table(n, req.Store)
	rows, err := tx.Query(ctx, `SELECT `+hitColumns(req.Store)+`, ts_rank_cd(d.tsv, q)::float8 AS score
		FROM `+docs+` d, websearch_to_tsquery('simple', $1) q
		WHERE `+searchableTiers(req.Store)+` AND d.tsv @@ q
		ORDER BY score DESC, d.created_at DESC, d.id LIMIT $2`, req.Query, limit)
	if err != nil {
		return nil, err
	}
	return collectHits(rows)
}

func semanticSearch(ctx context.Context, tx pgx.Tx, n names, req SearchReq, limit int) ([]Hit, error) {
	docs, emb := table(n, req.Store)
	ef := max(req.EfSearch, limit)
	if _, err := tx.Exec(ctx, `SELECT set_config('hnsw.ef_search', $1, true)`, strconv.Itoa(ef)); err != nil {
		return nil, fmt.Errorf("set hnsw.ef_search: %w", err)
	}
	// The nearest neighbours come from the HNSW index alone (no filter
	// to defeat it: only searchable tiers have vectors, which AddMemory,
	// SetMemoryVector and promotion keep true); the tier test is a guard.
	vec := pgvector.NewVector(req.Vector)
	rows, err := tx.Query(ctx, `WITH nn AS (
			SELECT e.document_id, e.embedding <=> $1 AS dist FROM `+emb+` e ORDER BY e.embedding <=> $1 LIMIT $2)
		SELECT `+hitColumns(req.Store)+`, (1 - nn.dist)::float8
		FROM nn JOIN `+docs+` d ON d.id = nn.document_id
		WHERE `+searchableTiers(req.Store)+`
		ORDER BY nn.dist, d.id`, vec, limit)
	if err != nil {
		return nil, vectorErr("query", req.Vector, err)
	}
	hits, err := collectHits(rows)
	if err != nil {
		return nil, vectorErr("query", req.Vector, err)
	}
	return hits, nil
}

// hybridDepth is how many hits of each list a hybrid search fuses.
func hybridDepth(limit int) int { return min(max(2*limit, 50), 2*MaxSearchLimit) }

func hybridSearch(ctx context.Context, tx pgx.Tx, n names, req SearchReq) ([]Hit, error) {
	depth := hybridDepth(req.Limit)
	var lists [][]Hit
	if req.Query != "" {
		l, err := textSearch(ctx, tx, n, req, depth)
		if err != nil {
			return nil, err
		}
		lists = append(lists, l)
	}
	if req.Vector != nil {
		l, err := semanticSearch(ctx, tx, n, req, depth)
		if err != nil {
			return nil, err
		}
		lists = append(lists, l)
	}
	return fuse(lists, req.Limit), nil
}

// fuse merges ranked lists by reciprocal rank fusion: each document
// scores the sum of 1/(RRFK + rank) over the lists it is in. Ties go to
// the better best rank, then to the document id, so the order is stable.
func fuse(lists [][]Hit, limit int) []Hit {
	type fused struct {
		hit  Hit
		best int
	}
	byID := map[string]*fused{}
	var order []*fused
	for _, l := range lists {
		for i, h := range l {
			rank := i + 1
			f, ok := byID[h.DocumentID]
			if !ok {
				f = &fused{hit: h, best: rank}
				f.hit.Score = 0
				byID[h.DocumentID] = f
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
		return a.hit.DocumentID < b.hit.DocumentID
	})
	out := make([]Hit, 0, min(limit, len(order)))
	for _, f := range order[:min(limit, len(order))] {
		out = append(out, f.hit)
	}
	return out
}

func sessionDetail(ctx context.Context, tx pgx.Tx, n names, req SearchReq) ([]Hit, error) {
	rows, err := tx.Query(ctx, `SELECT `+hitColumns(StoreSession)+`,
			CASE WHEN $2::text = '' THEN 0 ELSE ts_rank_cd(d.tsv, websearch_to_tsquery('simple', $2)) END::float8 AS score
		FROM `+n.Schema+`.memory_documents d
		WHERE d.session_id = $1 AND coalesce(d.metadata->>'kind', 'events') <> 'summary'
		  AND ($2::text = '' OR d.tsv @@ websearch_to_tsquery('simple', $2))
		ORDER BY score DESC, d.chunk_index, d.id LIMIT $3`, req.SessionID, req.Query, req.Limit)
	if err != nil {
		return nil, err
	}
	return collectHits(rows)
}
