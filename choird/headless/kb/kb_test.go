package kb

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"choir/choird/headless"
	"choir/choird/headless/objects"
	"choir/choird/store"
	"choir/internal/embed"
	"choir/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const testDims = 64

// flaky is the hashing embedder that fails while down is set.
type flaky struct {
	embed.Hashing
	down  atomic.Bool
	calls atomic.Int64
}

func (f *flaky) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	f.calls.Add(1)
	if f.down.Load() {
		return nil, errors.New("embeddings endpoint down")
	}
	return f.Hashing.Embed(ctx, texts)
}

// newTestStore opens a store in a namespace of its own with the agents
// bootstrapped; it is dropped at cleanup.
func newTestStore(t testing.TB, dims int, agents ...string) *store.Store {
	t.Helper()
	db := pgtest.DB(t)
	ctx := context.Background()
	s, err := store.Open(ctx, store.Config{DSN: db.DSN, Namespace: db.Namespace})
	if err != nil {
		t.Fatalf("store.Open(%s) = %v", db.Backend, err)
	}
	t.Cleanup(func() { s.Drop(ctx); s.Close() })
	if err := s.Bootstrap(ctx, agents, dims); err != nil {
		t.Fatal(err)
	}
	return s
}

func newTestKB(t testing.TB, st Store, objs *objects.Store, emb embed.Embedder) *KB {
	t.Helper()
	k, err := New(Config{Store: st, Objects: objs, Embedder: emb,
		Queue: embed.QueueConfig{Retries: -1, Sleep: func(context.Context, time.Duration) error { return nil }}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close(context.Background()) })
	return k
}

// startRun makes a running run of agent.
func startRun(t testing.TB, d *headless.Director, agent string) string {
	t.Helper()
	ctx := context.Background()
	it, err := d.AddWorkItem(ctx, headless.NewWorkItem{Agent: agent, Description: "learn", Acceptance: []string{"a"}, Risk: headless.RiskLow})
	if err != nil {
		t.Fatal(err)
	}
	r, err := d.StartRun(ctx, headless.NewRun{WorkItem: it.ID, Trigger: "manual"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.MarkRunning(ctx, r.ID, strings.Repeat("a", 40), "/tmp/wt/"+r.ID, ""); err != nil {
		t.Fatal(err)
	}
	return r.ID
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The index follows the receipts: a run's notes and verifier results are
// stored as objects and indexed once, also by a KB started again over the
// same database; while the embedder fails they are found by text (the
// search says so), and once it answers again the objects queued again get
// their vectors and the search is hybrid. Pointers carry a snippet and a
// citation that CheckCites accepts, never the object's content.
func TestIndexFollowsReceipts(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t, testDims, "kb-1", "kb-2")
	objs, err := objects.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d := headless.New(st.Headless())
	emb := &flaky{Hashing: embed.Hashing{Dims: testDims}}
	emb.down.Store(true)
	k := newTestKB(t, st, objs, emb)

	run := startRun(t, d, "kb-1")
	conj := headless.Note{Type: headless.NoteConjecture, Claim: "prefetching halves cold start latency", Test: "bench cold start with and without prefetch",
		Edge: "datasets over memory", DeltaO: "ship prefetch", Scope: "the loader"}
	for _, n := range []headless.Note{conj,
		{Type: headless.NoteHyperthesis, Text: "no verifier runs on ARM", Bound: "quarantine ARM builds"},
		{Type: headless.NoteObservation, Text: "the loader reads every file twice"},
		{Type: headless.NoteRequestHelp, Text: "which dataset?"},
	} {
		if _, _, err := d.AddNote(ctx, run, n, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := d.Attest(ctx, run, headless.Attestation{Verifier: "unit", Passed: true, Summary: "12 passed, 0 failed"}, ""); err != nil {
		t.Fatal(err)
	}
	other := startRun(t, d, "kb-2")
	if _, _, err := d.AddNote(ctx, other, headless.Note{Type: headless.NoteObservation, Text: "kb-2 also saw the loader read twice"}, ""); err != nil {
		t.Fatal(err)
	}

	n, err := k.CatchUp(ctx)
	if err != nil || n != 5 {
		t.Fatalf("CatchUp = %d, %v; want 5 objects (3 notes, 1 attestation, kb-2's note; not the request)", n, err)
	}
	if n, err := k.CatchUp(ctx); err != nil || n != 0 {
		t.Fatalf("CatchUp again = %d, %v; want 0", n, err)
	}
	k2 := newTestKB(t, st, objs, emb) // a restart
	if n, err := k2.CatchUp(ctx); err != nil || n != 0 {
		t.Fatalf("CatchUp after a restart = %d, %v; want 0 (never twice)", n, err)
	}

	// The embedder is down: the queue's one try failed for each object,
	// and the query cannot be embedded either.
	waitFor(t, "the failed embeddings delivered", func() bool { return k.queue.Outstanding() == 0 })
	f, err := k.Search(ctx, Query{Text: "prefetch cold start"})
	if err != nil {
		t.Fatal(err)
	}
	if f.Mode != "text" || !strings.Contains(f.Note, "text only") || len(f.Pointers) == 0 || f.Pointers[0].Kind != KindConjecture {
		t.Fatalf("Search while the embedder is down = %+v; want the conjecture by text, with a note", f)
	}
	p := f.Pointers[0]
	body, err := objs.Get(p.Object)
	if err != nil {
		t.Fatalf("the conjecture's object: %v", err)
	}
	if !strings.Contains(string(body), `"claim":"prefetching halves cold start latency"`) {
		t.Fatalf("object %s = %s; want the note's body", p.Object, body)
	}
	if len(p.Snippet) > MaxSnippet || !strings.HasPrefix(p.Snippet, "conjecture: claim: prefetching") {
		t.Fatalf("snippet = %q; want the typed text, at most %d bytes", p.Snippet, MaxSnippet)
	}
	if err := k.CheckCites(ctx, []string{p.Cite()}); err != nil {
		t.Fatalf("CheckCites(%s) = %v", p.Cite(), err)
	}

	// The embedder is back: the objects queued again get their vectors.
	emb.down.Store(false)
	if n := k.Requeue(ctx); n != 5 {
		t.Fatalf("Requeue = %d; want 5", n)
	}
	waitFor(t, "every object embedded", func() bool {
		miss, err := st.KBWithoutVectors(ctx, emb.Model(), 10)
		return err == nil && len(miss) == 0
	})
	f, err = k.Search(ctx, Query{Text: "loader reads files twice", Agent: "kb-1"})
	if err != nil || f.Mode != "hybrid" || f.Note != "" {
		t.Fatalf("Search = %+v, %v; want hybrid without a note", f, err)
	}
	if len(f.Pointers) == 0 || f.Pointers[0].Kind != KindClaim || !strings.Contains(f.Pointers[0].Snippet, "reads every file twice") {
		t.Fatalf("Search(loader, kb-1) = %+v; want kb-1's claim first", f.Pointers)
	}
	for _, p := range f.Pointers {
		if strings.Contains(p.Snippet, "kb-2 also") {
			t.Errorf("Search(agent kb-1) found kb-2's %+v", p)
		}
	}
	f, _ = k.Search(ctx, Query{Text: "verifier passed", Kind: KindAttestation})
	if len(f.Pointers) != 1 || !strings.Contains(f.Pointers[0].Snippet, "verifier unit passed") {
		t.Fatalf("Search(kind attestation) = %+v; want the attestation", f.Pointers)
	}

	// The context pack's evidence: a work item's long text finds what
	// shares any of its words, of its agent only.
	ps, err := k.Evidence(ctx, "kb-1", "Make the loader faster.\nAcceptance: each file is read once; cold start under a second", 5)
	if err != nil || len(ps) < 2 || len(ps) > 5 || ps[0].Kind == ps[1].Kind ||
		!strings.Contains(ps[0].Snippet+ps[1].Snippet, "the loader reads every file twice") || !strings.Contains(ps[0].Snippet+ps[1].Snippet, "cold start") {
		t.Fatalf("Evidence(kb-1) = %+v, %v; want up to 5 pointers, the claim and the conjecture about the loader first", ps, err)
	}
	for _, p := range ps {
		if strings.Contains(p.Snippet, "kb-2") {
			t.Errorf("Evidence(kb-1) has kb-2's %+v", p)
		}
	}
	if got := orQuery("A loader, the LOADER; reads: or x1 ünïcode"); got != "loader or the or reads or ünïcode" {
		t.Errorf("orQuery = %q", got)
	}

	// A note citing an indexed object passes the director's check; one
	// citing an object never stored is refused with the citation named.
	d.CheckCites = k.CheckCites
	if _, _, err := d.AddNote(ctx, run, headless.Note{Type: headless.NoteObservation, Text: "as the conjecture says", Cites: []string{p.Cite()}}, ""); err != nil {
		t.Fatalf("AddNote citing %s = %v", p.Cite(), err)
	}
	bad := "sha256:" + objects.Sum([]byte("never stored"))
	_, _, err = d.AddNote(ctx, run, headless.Note{Type: headless.NoteObservation, Text: "made up", Cites: []string{bad}}, "")
	if !errors.Is(err, headless.ErrInvalidInput) || !strings.Contains(err.Error(), bad) {
		t.Fatalf("AddNote citing a missing object = %v; want it refused, naming %s", err, bad)
	}
}

// Search refuses what it cannot answer with a Refusal saying why.
func TestSearchRefusals(t *testing.T) {
	objs, _ := objects.Open(t.TempDir())
	k := newTestKB(t, nopStore{}, objs, embed.Hashing{Dims: testDims})
	for _, q := range []Query{
		{Text: "  "},
		{Text: strings.Repeat("x", store.MaxQueryBytes+1)},
		{Text: "a", Kind: "secrets"},
		{Text: "a", Agent: "../kb-1"},
		{Text: "a", Limit: 101},
		{Text: "a", Limit: -1},
	} {
		_, err := k.Search(context.Background(), q)
		var r *Refusal
		if !errors.As(err, &r) {
			t.Errorf("Search(%.60v) = %v; want a Refusal", q, err)
		}
	}
}

// nopStore finds nothing.
type nopStore struct{}

func (nopStore) KBCursor(context.Context) (int64, error) { return 0, nil }
func (nopStore) KBReceipts(context.Context, int64, int) ([]store.KBReceipt, error) {
	return nil, nil
}
func (nopStore) KBIndex(context.Context, int64, []store.KBObject) ([]string, error) { return nil, nil }
func (nopStore) KBSetVector(context.Context, string, string, []float32) error       { return nil }
func (nopStore) KBWithoutVectors(context.Context, string, int) ([]store.KBObject, error) {
	return nil, nil
}
func (nopStore) KBDropOtherModels(context.Context, string) (int64, error) { return 0, nil }
func (nopStore) KBSearch(context.Context, store.KBSearchReq) ([]store.KBHit, error) {
	return nil, nil
}

var _ Store = nopStore{}
