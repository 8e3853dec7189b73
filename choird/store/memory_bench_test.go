package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"choir/testkit/pgtest"
)

// The memory benchmarks run on a generated corpus of session chunks:
// CHOIR_BENCH_MEMORY_CHUNKS of them (default 10,000) with vectors of
// CHOIR_BENCH_MEMORY_DIMS dimensions (default 256), clustered as real
// embeddings are (200 topics, each chunk its topic's centre, a unit
// vector's worth of N(0,1) coordinates, plus noise, normalised; CHOIR_BENCH_MEMORY_NOISE, default 0.2, is the noise's
// deviation per coordinate: at 0.1 the topics stand apart and every
// ef_search finds the true neighbours; at 0.2, the default, they overlap
// (a chunk's noise outweighs its topic), close to random vectors, the
// hard case for HNSW) and texts of 40 words drawn from a Zipf vocabulary of 5,000
// plus two words of its topic. They are inserted 1,000 a statement and the HNSW
// index built after (choird writes chunk by chunk; the corpus is what is
// measured here, not its loading).
//
//	go test -run '^$' -bench BenchmarkMemory -benchtime 200x -timeout 60m ./choird/store/
//	CHOIR_BENCH_MEMORY_CHUNKS=100000 go test -run '^$' -bench BenchmarkMemory -benchtime 200x -timeout 60m ./choird/store/
//
// BenchmarkMemory reports recall@10 of the HNSW search against exact
// search over 100 queries at several hnsw.ef_search (recall-ef<N>, with
// the p50 latency of those queries, p50-ms-ef<N>), p50 and p99 latency of
// each mode (the semantic, text and hybrid sub-benchmarks; hybrid with
// both a query and a vector) and the size on disk of the agent's session
// memory per 10,000 chunks (MiB-per-10k).

type corpus struct {
	dims    int
	noise   float64 // deviation of each coordinate around its topic's centre
	centres [][]float32
	vocab   []string
	rng     *mrand.Rand
}

func newCorpus(dims int, noise float64) *corpus {
	c := &corpus{dims: dims, noise: noise, rng: mrand.New(mrand.NewPCG(1, 2))}
	for range 200 {
		c.centres = append(c.centres, c.gauss(nil, 1))
	}
	for i := range 5000 {
		c.vocab = append(c.vocab, "w"+strconv.Itoa(i))
	}
	return c
}

// gauss adds noise of deviation sd to base (a zero vector when nil).
func (c *corpus) gauss(base []float32, sd float64) []float32 {
	v := make([]float32, c.dims)
	for i := range v {
		v[i] = float32(c.rng.NormFloat64() * sd)
		if base != nil {
			v[i] += base[i]
		}
	}
	return normalise(v)
}

func normalise(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	n = math.Sqrt(n)
	for i := range v {
		v[i] = float32(float64(v[i]) / n)
	}
	return v
}

// word draws a vocabulary word, Zipf-distributed.
func (c *corpus) word() string {
	return c.vocab[min(int(math.Exp(c.rng.Float64()*math.Log(float64(len(c.vocab)))))-1, len(c.vocab)-1)]
}

func (c *corpus) text(topic int) string {
	words := []string{"topic" + strconv.Itoa(topic), "area" + strconv.Itoa(topic%37)}
	for range 40 {
		words = append(words, c.word())
	}
	c.rng.Shuffle(len(words), func(i, j int) { words[i], words[j] = words[j], words[i] })
	return strings.Join(words, " ")
}

func (c *corpus) query() ([]float32, string) {
	t := c.rng.IntN(len(c.centres))
	return c.gauss(c.centres[t], c.noise), "topic" + strconv.Itoa(t) + " area" + strconv.Itoa(t%37)
}

func uuid4() string {
	var b [16]byte
	rand.Read(b[:])
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// loadCorpus writes n chunks of 100 sessions into the agent's memory and
// builds the HNSW index.
func loadCorpus(b *testing.B, s *Store, agent string, c *corpus, n int) {
	ctx := context.Background()
	nm, _ := s.agentNames(agent)
	start := time.Now()
	err := s.memConn(ctx, func(conn *pgx.Conn) error {
		if _, err := conn.Exec(ctx, `DROP INDEX `+nm.Schema+`.memory_embeddings_hnsw`); err != nil {
			return err
		}
		const batch = 1000
		for done := 0; done < n; done += batch {
			var ids, sessions, texts, metas []string
			var idx []int32
			var vecs []pgvector.Vector
			for i := done; i < min(done+batch, n); i++ {
				id, topic := uuid4(), c.rng.IntN(len(c.centres))
				text := c.text(topic)
				ids, sessions, texts, idx = append(ids, id), append(sessions, "bench-"+strconv.Itoa(i%100)), append(texts, text), append(idx, int32(i))
				metas = append(metas, fmt.Sprintf(`{"kind": "events", "revisions": [%d], "content_hash": %q}`, i+1, ContentHash(text)))
				vecs = append(vecs, pgvector.NewVector(c.gauss(c.centres[topic], c.noise)))
			}
			if _, err := conn.Exec(ctx, `INSERT INTO `+nm.Schema+`.memory_documents (id, session_id, tier, chunk_index, text, metadata)
				SELECT id, s, 'mid_term', i, t, m::jsonb FROM unnest($1::uuid[], $2::text[], $3::int[], $4::text[], $5::text[]) AS u (id, s, i, t, m)`,
				ids, sessions, idx, texts, metas); err != nil {
				return err
			}
			if _, err := conn.Exec(ctx, `INSERT INTO `+nm.Schema+`.memory_embeddings (document_id, embedding)
				SELECT * FROM unnest($1::uuid[], $2::vector[])`, ids, vecs); err != nil {
				return err
			}
		}
		loaded := time.Since(start)
		b.Logf("INSERT of %d chunks: %v", n, loaded.Round(time.Millisecond))
		start = time.Now()
		if _, err := conn.Exec(ctx, `SET maintenance_work_mem = '256MB'`); err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, `CREATE INDEX memory_embeddings_hnsw ON `+nm.Schema+`.memory_embeddings USING hnsw (embedding vector_cosine_ops)`); err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, `RESET maintenance_work_mem`); err != nil {
			return err
		}
		_, err := conn.Exec(ctx, `ANALYZE `+nm.Schema+`.memory_documents; ANALYZE `+nm.Schema+`.memory_embeddings`)
		b.Logf("%d chunks of %d dimensions: INSERT %v, HNSW build %v", n, c.dims, loaded.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		return err
	})
	if err != nil {
		b.Fatalf("load corpus: %v", err)
	}
}

// exactTop10 is the true 10 nearest chunks, by a sequential scan: the
// index is disabled, and the "+ 0" makes the order one it cannot serve
// anyway (enable_indexscan = off alone still let PGlite use it).
func exactTop10(b *testing.B, s *Store, agent string, q []float32) []string {
	ctx := context.Background()
	var ids []string
	err := s.agentWrite(ctx, agent, func(tx pgx.Tx, n names) error {
		if _, err := tx.Exec(ctx, `SET LOCAL enable_indexscan = off`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT document_id::text FROM `+n.Schema+`.memory_embeddings ORDER BY (embedding <=> $1) + 0 LIMIT 10`, pgvector.NewVector(q))
		if err != nil {
			return err
		}
		ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return ids
}

func BenchmarkMemory(b *testing.B) {
	n := envInt(b, "CHOIR_BENCH_MEMORY_CHUNKS", 10000)
	d := envInt(b, "CHOIR_BENCH_MEMORY_DIMS", 256)
	db := pgtest.DB(b)
	ctx := context.Background()
	s, err := Open(ctx, Config{DSN: db.DSN, Namespace: db.Namespace})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Drop(ctx); s.Close() })
	if err := s.Bootstrap(ctx, []string{"bench"}, d); err != nil {
		b.Fatal(err)
	}
	noise := 0.2
	if v := os.Getenv("CHOIR_BENCH_MEMORY_NOISE"); v != "" {
		if noise, err = strconv.ParseFloat(v, 64); err != nil || noise <= 0 {
			b.Fatalf("CHOIR_BENCH_MEMORY_NOISE=%q: want a positive number", v)
		}
	}
	c := newCorpus(d, noise)
	loadCorpus(b, s, "bench", c, n)

	var size int64
	nm, _ := s.agentNames("bench")
	if err := s.pool.QueryRow(ctx, `SELECT pg_total_relation_size($1) + pg_total_relation_size($2)`,
		nm.Schema+".memory_documents", nm.Schema+".memory_embeddings").Scan(&size); err != nil {
		b.Fatal(err)
	}

	// Recall@10 against exact search, at three ef_search values.
	const queries = 100
	recall, efP50 := map[int]float64{}, map[int]float64{}
	var qs [][]float32
	var exact [][]string
	for range queries {
		v, _ := c.query()
		qs, exact = append(qs, v), append(exact, exactTop10(b, s, "bench", v))
	}
	for _, ef := range []int{40, 100, 200, DefaultEfSearch} {
		found := 0
		var lat []time.Duration
		for i, v := range qs {
			t0 := time.Now()
			hits, err := s.SearchMemory(ctx, SearchReq{Caller: "bench", Agent: "bench", Store: StoreSession, Mode: ModeSemantic, Vector: v, EfSearch: ef})
			lat = append(lat, time.Since(t0))
			if err != nil {
				b.Fatal(err)
			}
			for _, h := range hits {
				if slices.Contains(exact[i], h.DocumentID) {
					found++
				}
			}
		}
		recall[ef] = float64(found) / float64(10*queries)
		slices.Sort(lat)
		efP50[ef] = float64(lat[len(lat)/2].Microseconds()) / 1000
	}
	b.Run("recall", func(b *testing.B) {
		for b.Loop() {
		}
		for ef, r := range recall {
			b.ReportMetric(r, "recall-ef"+strconv.Itoa(ef))
			b.ReportMetric(efP50[ef], "p50-ms-ef"+strconv.Itoa(ef))
		}
		b.ReportMetric(float64(size)/float64(n)*10000/(1<<20), "MiB-per-10k")
	})
	for _, mode := range []string{ModeSemantic, ModeText, ModeHybrid} {
		b.Run(mode, func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				v, text := c.query()
				req := SearchReq{Caller: "bench", Agent: "bench", Store: StoreSession, Mode: mode, Vector: v, Query: text}
				if mode == ModeText {
					req.Vector = nil
				}
				if mode == ModeSemantic {
					req.Query = ""
				}
				t0 := time.Now()
				hits, err := s.SearchMemory(ctx, req)
				lat = append(lat, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
				if len(hits) == 0 {
					b.Fatalf("%s search found nothing", mode)
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000, "p99-ms")
		})
	}
}
