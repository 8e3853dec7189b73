package kb

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"choir/choird/headless"
	"choir/choird/headless/objects"
	"choir/choird/store"
	"choir/internal/embed"
)

// BenchmarkKBSearch10k measures the knowledge base at 10,000 objects
// (CHOIR_BENCH_KB_OBJECTS) on the test server (PGlite), with the offline
// hashing embedder at choird's default 1,536 dimensions
// (CHOIR_BENCH_KB_DIMS):
//
//	go test -run '^$' -bench BenchmarkKBSearch10k -benchtime 200x -timeout 30m ./choird/headless/kb/
//
// The corpus is one run's notes (claims, hypotheses, conjectures,
// hypertheses), each of 12 words from a vocabulary of 2,000 plus two
// words of one of 200 topics, appended through the director. Reported:
// index-objects/s (CatchUp: receipts read, each note stored in the object
// store with its fsyncs, rows and cursor written), embed-objects/s (the
// queue: embedding and storing each vector into the HNSW index), and for
// each search its p50 as ns/op (and p50-ms, p99-ms): hybrid is KB.Search as choirctl
// and the context pack call it (the query embedded, text and vector
// searched, fused), text the store's text search alone.
func BenchmarkKBSearch10k(b *testing.B) {
	n := benchEnv(b, "CHOIR_BENCH_KB_OBJECTS", 10000)
	dims := benchEnv(b, "CHOIR_BENCH_KB_DIMS", embed.DefaultDimensions)
	ctx := context.Background()
	st := newTestStore(b, dims, "bench")
	objs, err := objects.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	emb := embed.Hashing{Dims: dims}
	k := newTestKB(b, st, objs, emb)
	d := headless.New(st.Headless())
	run := startRun(b, d, "bench")

	rng := mrand.New(mrand.NewPCG(1, 2))
	vocab := make([]string, 2000)
	for i := range vocab {
		vocab[i] = "w" + strconv.Itoa(i)
	}
	words := func(m int) string {
		ws := make([]string, m)
		for i := range ws {
			ws[i] = vocab[rng.IntN(len(vocab))]
		}
		return strings.Join(ws, " ")
	}
	topic := func(t int) string { return fmt.Sprintf("topic%da topic%db", t, t) }
	t0 := time.Now()
	for i := range n {
		text := topic(i%200) + " " + words(12)
		var note headless.Note
		switch i % 4 {
		case 0:
			note = headless.Note{Type: headless.NoteObservation, Text: text}
		case 1:
			note = headless.Note{Type: headless.NoteHypothesis, Text: text, Test: words(4), Budget: &headless.Budgets{ToolCalls: 3}}
		case 2:
			note = headless.Note{Type: headless.NoteConjecture, Claim: text, Test: words(4), Edge: words(3), DeltaO: words(3), Scope: words(2)}
		case 3:
			note = headless.Note{Type: headless.NoteHyperthesis, Text: text, Bound: words(4)}
		}
		if _, _, err := d.AddNote(ctx, run, note, ""); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("%d notes appended in %s", n, time.Since(t0).Round(time.Millisecond))

	t0 = time.Now()
	got, err := k.CatchUp(ctx)
	if err != nil || got != n {
		b.Fatalf("CatchUp = %d, %v; want %d", got, err, n)
	}
	indexRate := float64(n) / time.Since(t0).Seconds()
	t0 = time.Now()
	k.Flush()
	for {
		miss, err := st.KBWithoutVectors(ctx, emb.Model(), 1)
		if err != nil {
			b.Fatal(err)
		}
		if k.queue.Outstanding() == 0 {
			if len(miss) == 0 {
				break
			}
			k.Requeue(ctx) // refused while the queue was full
		}
		if time.Since(t0) > 20*time.Minute {
			b.Fatal("the vectors were not all stored within 20 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
	embedRate := float64(n) / time.Since(t0).Seconds()
	b.Logf("indexed %.0f objects/s, embedded %.0f objects/s", indexRate, embedRate)

	query := func() string {
		t := rng.IntN(200)
		return fmt.Sprintf("topic%da %s", t, vocab[rng.IntN(len(vocab))])
	}
	b.Run("index", func(b *testing.B) {
		for b.Loop() {
		}
		b.ReportMetric(indexRate, "index-objects/s")
		b.ReportMetric(embedRate, "embed-objects/s")
	})
	measure := func(b *testing.B, search func(q string) (int, error)) {
		var lat []time.Duration
		for b.Loop() {
			q := query()
			t0 := time.Now()
			found, err := search(q)
			lat = append(lat, time.Since(t0))
			if err != nil {
				b.Fatal(err)
			}
			if found == 0 {
				b.Fatalf("search %q found nothing", q)
			}
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "ns/op") // the p50, not the mean
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000, "p99-ms")
	}
	b.Run("hybrid", func(b *testing.B) {
		measure(b, func(q string) (int, error) {
			f, err := k.Search(ctx, Query{Text: q})
			if err == nil && f.Mode != "hybrid" {
				return 0, fmt.Errorf("search fell back to %s: %s", f.Mode, f.Note)
			}
			return len(f.Pointers), err
		})
	})
	b.Run("text", func(b *testing.B) {
		measure(b, func(q string) (int, error) {
			// A topic's word: websearch_to_tsquery needs every word.
			hits, err := st.KBSearch(ctx, store.KBSearchReq{Query: strings.Fields(q)[0]})
			return len(hits), err
		})
	})
}

func benchEnv(b *testing.B, name string, def int) int {
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
