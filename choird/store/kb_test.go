package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"choir/choird/headless"
)

func kbHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// kbRun makes a work item and a running run of agent through the
// director on s, so receipts can be appended to it.
func kbRun(t *testing.T, s *Store, agent string) (*headless.Director, string) {
	t.Helper()
	ctx := ctxT(t)
	d := headless.New(s.Headless())
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
	return d, r.ID
}

// Receipts are read after the cursor with their agents; objects indexed
// with the cursor are stored once (a second index of the same object
// keeps the first row), the cursor never goes back, and search finds
// objects by words, by vector, and filtered by agent and kind.
func TestKBIndexAndSearch(t *testing.T) {
	s := newStore(t, Config{}, "kb-1", "kb-2")
	ctx := ctxT(t)
	d, run := kbRun(t, s, "kb-1")
	if _, _, err := d.AddNote(ctx, run, headless.Note{Type: headless.NoteObservation, Text: "the cache misses on cold start"}, ""); err != nil {
		t.Fatal(err)
	}
	cur, err := s.KBCursor(ctx)
	if err != nil || cur != 0 {
		t.Fatalf("KBCursor() = %d, %v; want 0", cur, err)
	}
	recs, err := s.KBReceipts(ctx, 0, 10)
	if err != nil || len(recs) != 2 {
		t.Fatalf("KBReceipts(0) = %d receipts, %v; want 2", len(recs), err)
	}
	if recs[1].Agent != "kb-1" || recs[1].Kind != headless.KindNote || recs[1].RunID != run || recs[1].ID <= recs[0].ID {
		t.Fatalf("KBReceipts(0)[1] = %+v; want kb-1's note after its start", recs[1])
	}
	if more, _ := s.KBReceipts(ctx, recs[1].ID, 10); len(more) != 0 {
		t.Fatalf("KBReceipts(last) = %d receipts; want none", len(more))
	}

	a, b, c := kbHash("a"), kbHash("b"), kbHash("c")
	objs := []KBObject{
		{Object: a, Agent: "kb-1", Run: run, ReceiptID: recs[1].ID, Kind: "claim", Text: "claim: text: the cache misses on cold start"},
		{Object: b, Agent: "kb-1", Run: run, ReceiptID: recs[1].ID, Kind: "conjecture", Text: "conjecture: claim: warming the cache halves latency; test: bench cold"},
		{Object: c, Agent: "kb-2", Run: run, ReceiptID: recs[1].ID, Kind: "claim", Text: "claim: text: the cache is sized by config"},
	}
	added, err := s.KBIndex(ctx, recs[1].ID, objs)
	if err != nil || len(added) != 3 {
		t.Fatalf("KBIndex = %v, %v; want 3 added", added, err)
	}
	again := objs[0]
	again.Text = "another text"
	if added, err := s.KBIndex(ctx, recs[0].ID, []KBObject{again}); err != nil || len(added) != 0 {
		t.Fatalf("KBIndex of an indexed object = %v, %v; want none added", added, err)
	}
	if o, err := s.KBGet(ctx, a); err != nil || o.Text != objs[0].Text {
		t.Fatalf("KBGet(a) = %+v, %v; want the first text kept", o, err)
	}
	if added, err := s.KBIndex(ctx, recs[1].ID, nil); err != nil || len(added) != 0 {
		t.Fatalf("KBIndex of a page without objects = %v, %v; want the cursor moved, nothing added", added, err)
	}
	if cur, _ := s.KBCursor(ctx); cur != recs[1].ID {
		t.Fatalf("KBCursor after an older through = %d; want %d (never back)", cur, recs[1].ID)
	}

	// Text.
	hits, err := s.KBSearch(ctx, KBSearchReq{Query: "cache"})
	if err != nil || len(hits) != 3 {
		t.Fatalf("KBSearch(cache) = %d hits, %v; want 3", len(hits), err)
	}
	hits, _ = s.KBSearch(ctx, KBSearchReq{Query: "cache", Agent: "kb-1", Kind: "claim"})
	if len(hits) != 1 || hits[0].Object != a {
		t.Fatalf("KBSearch(cache, kb-1, claim) = %+v; want only a", hits)
	}
	hits, _ = s.KBSearch(ctx, KBSearchReq{Query: "conjecture"}) // the kind is searchable
	if len(hits) != 1 || hits[0].Object != b {
		t.Fatalf("KBSearch(conjecture) = %+v; want b", hits)
	}

	// Vectors (dims 3), of one model; a vector of another is dropped.
	for obj, v := range map[string][]float32{a: {1, 0, 0}, b: {0, 1, 0}, c: {0.9, 0.1, 0}} {
		if err := s.KBSetVector(ctx, obj, "m1", v); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.KBSetVector(ctx, kbHash("nothing"), "m1", []float32{1, 0, 0}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("KBSetVector(not indexed) = %v; want ErrNotFound", err)
	}
	hits, err = s.KBSearch(ctx, KBSearchReq{Vector: []float32{1, 0, 0}, Limit: 2})
	if err != nil || len(hits) != 2 || hits[0].Object != a || hits[1].Object != c {
		t.Fatalf("KBSearch(vector) = %+v, %v; want a then c", hits, err)
	}
	hits, _ = s.KBSearch(ctx, KBSearchReq{Vector: []float32{1, 0, 0}, Agent: "kb-2"})
	if len(hits) != 1 || hits[0].Object != c {
		t.Fatalf("KBSearch(vector, kb-2) = %+v; want c", hits)
	}
	// Hybrid: "latency" matches b by text only; the vector points at a.
	hits, _ = s.KBSearch(ctx, KBSearchReq{Query: "warming latency", Vector: []float32{0, 1, 0}})
	if len(hits) == 0 || hits[0].Object != b {
		t.Fatalf("KBSearch(hybrid) = %+v; want b first (text and vector)", hits)
	}
	if miss, err := s.KBWithoutVectors(ctx, "m1", 10); err != nil || len(miss) != 0 {
		t.Fatalf("KBWithoutVectors(m1) = %v, %v; want none", miss, err)
	}
	if n, err := s.KBDropOtherModels(ctx, "m2"); err != nil || n != 3 {
		t.Fatalf("KBDropOtherModels(m2) = %d, %v; want 3", n, err)
	}
	if miss, _ := s.KBWithoutVectors(ctx, "m2", 10); len(miss) != 3 {
		t.Fatalf("KBWithoutVectors(m2) = %d; want 3", len(miss))
	}
	// Without vectors, text still finds them.
	if hits, _ := s.KBSearch(ctx, KBSearchReq{Query: "cache", Vector: []float32{1, 0, 0}}); len(hits) != 3 {
		t.Fatalf("KBSearch(hybrid, no vectors) = %d hits; want 3 by text", len(hits))
	}
}

// Hostile inputs are refused with what is wrong, or match only what they
// say: SQL and LIKE metacharacters are words, never syntax.
func TestKBHostileInputs(t *testing.T) {
	s := newStore(t, Config{}, "kb-1")
	ctx := ctxT(t)
	_, run := kbRun(t, s, "kb-1")
	if _, err := s.KBIndex(ctx, 1, []KBObject{
		{Object: kbHash("x"), Agent: "kb-1", Run: run, ReceiptID: 1, Kind: "claim", Text: "claim: text: 100% of builds pass; O'Brien's_test"},
		{Object: kbHash("y"), Agent: "kb-1", Run: run, ReceiptID: 1, Kind: "claim", Text: "claim: text: nothing alike"},
	}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"%", "_", "%%", `\`, "'; DROP TABLE choir_control.kb_objects; --", `" OR 1=1 --`, "a & b | !c", "(((", ":*", "-"} {
		hits, err := s.KBSearch(ctx, KBSearchReq{Query: q})
		if err != nil {
			t.Errorf("KBSearch(%q) = %v; want no error", q, err)
			continue
		}
		if len(hits) > 1 {
			t.Errorf("KBSearch(%q) = %d hits; want at most the one that holds those words", q, len(hits))
		}
	}
	if hits, _ := s.KBSearch(ctx, KBSearchReq{Query: "O'Brien's_test"}); len(hits) != 1 {
		t.Errorf("KBSearch(O'Brien's_test) = %d hits; want 1", len(hits))
	}
	if _, err := s.KBGet(ctx, kbHash("x")); err != nil {
		t.Fatalf("the table survived the queries: %v", err)
	}
	refused := []struct {
		name string
		req  KBSearchReq
		want string
	}{
		{"huge", KBSearchReq{Query: strings.Repeat("a ", MaxQueryBytes)}, "at most 4096 bytes"},
		{"NUL", KBSearchReq{Query: "a\x00b"}, "without NUL"},
		{"not UTF-8", KBSearchReq{Query: "\xff\xfe"}, "UTF-8"},
		{"empty", KBSearchReq{Query: "  "}, "give a query"},
		{"limit", KBSearchReq{Query: "a", Limit: 101}, "limit 101"},
		{"agent", KBSearchReq{Query: "a", Agent: "KB;--"}, "agent id"},
		{"NaN", KBSearchReq{Vector: []float32{0, 0, 0}}, "zero"},
	}
	for _, c := range refused {
		if _, err := s.KBSearch(ctx, c.req); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: KBSearch = %v; want an error with %q", c.name, err, c.want)
		}
	}
	bad := []KBObject{
		{Object: "../../etc/passwd", Agent: "kb-1", Kind: "claim", Text: "t"},
		{Object: strings.ToUpper(kbHash("z")), Agent: "kb-1", Kind: "claim", Text: "t"},
		{Object: kbHash("z"), Agent: "KB 1", Kind: "claim", Text: "t"},
		{Object: kbHash("z"), Agent: "kb-1", Kind: "Claim;", Text: "t"},
		{Object: kbHash("z"), Agent: "kb-1", Kind: "claim", Text: " "},
		{Object: kbHash("z"), Agent: "kb-1", Kind: "claim", Text: strings.Repeat("x", MaxKBText+1)},
	}
	for i, o := range bad {
		if _, err := s.KBIndex(ctx, 2, []KBObject{o}); err == nil {
			t.Errorf("KBIndex(bad[%d] %+.40v) = nil; want refused", i, o)
		}
	}
	if cur, _ := s.KBCursor(ctx); cur != 1 {
		t.Errorf("KBCursor after refusals = %d; want 1 (nothing moved)", cur)
	}
}

// A database whose kb_embeddings was made for other dimensions gets the
// table made again at Bootstrap (its vectors are derived data), while the
// indexed objects stay.
func TestKBDimsChangeRemakesVectors(t *testing.T) {
	s := newStore(t, Config{}, "kb-1")
	ctx := context.Background()
	_, run := kbRun(t, s, "kb-1")
	a := kbHash("a")
	if _, err := s.KBIndex(ctx, 1, []KBObject{{Object: a, Agent: "kb-1", Run: run, ReceiptID: 1, Kind: "claim", Text: "claim: x"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.KBSetVector(ctx, a, "m", []float32{1, 0, 0}); err != nil {
		t.Fatal(err)
	}
	// The agent tables keep 3 dimensions (memory refuses a change), so
	// only the control schema is bootstrapped again here.
	if err := s.Bootstrap(ctx, nil, 5); err != nil {
		t.Fatalf("Bootstrap with 5 dimensions = %v", err)
	}
	if miss, _ := s.KBWithoutVectors(ctx, "m", 10); len(miss) != 1 {
		t.Fatalf("after the change, %d objects without vectors; want 1 (the old vector went)", len(miss))
	}
	if err := s.KBSetVector(ctx, a, "m", []float32{1, 0, 0, 0, 0}); err != nil {
		t.Fatalf("KBSetVector(5 dims) = %v", err)
	}
}
