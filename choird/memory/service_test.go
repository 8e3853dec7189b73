package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"choir/choird/store"
	"choir/internal/chain"
	"choir/internal/embed"
	"choir/testkit/pgtest"
)

const testDims = 64

// env is a real store (PGlite or CHOIR_TEST_DATABASE_URL) with one agent
// and a Service on it.
type env struct {
	t    *testing.T
	ctx  context.Context
	st   *store.Store
	svc  *Service
	keep atomic.Int64
	emb  embed.Embedder
	rev  map[string]int64  // the head of each session's log
	hash map[string]string // and its hash
}

func newEnv(t *testing.T, emb embed.Embedder) *env {
	t.Helper()
	db := pgtest.DB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	st, err := store.Open(ctx, store.Config{DSN: db.DSN, Namespace: db.Namespace})
	if err != nil {
		t.Fatalf("store.Open(%s) = %v", db.Backend, err)
	}
	t.Cleanup(func() { st.Drop(context.Background()); st.Close() })
	if err := st.Bootstrap(ctx, []string{"alpha"}, testDims); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: ctx, st: st, emb: emb, rev: map[string]int64{}, hash: map[string]string{}}
	e.keep.Store(10)
	svc, err := New(Config{Store: st, Embedder: emb, MidTermSessions: func() int { return int(e.keep.Load()) },
		Queue: embed.QueueConfig{Sleep: func(context.Context, time.Duration) error { return nil }}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background()) })
	e.svc = svc
	return e
}

// session starts (or resumes) a session, commits the events (type and
// JSON payload pairs), stores the summary if any, and ends it.
func (e *env) session(id string, resume bool, summary string, events ...string) {
	e.t.Helper()
	if _, err := e.st.CreateSession(e.ctx, store.NewSession{SessionID: id, AgentID: "alpha", LeaseID: "l-" + id,
		StartedAt: time.Now(), Resume: resume}); err != nil {
		e.t.Fatalf("CreateSession(%s) = %v", id, err)
	}
	var b store.Batch
	for i := 0; i+1 < len(events); i += 2 {
		rev := e.rev[id] + 1
		ev := store.Event{Rev: rev, Type: events[i], Lane: "edge", Payload: json.RawMessage(events[i+1]),
			Time: time.Now().UTC().Truncate(time.Microsecond)}
		h, err := chain.Hash(e.hash[id], chain.Event{Rev: ev.Rev, Type: ev.Type, Lane: ev.Lane, Payload: ev.Payload, Time: ev.Time})
		if err != nil {
			e.t.Fatal(err)
		}
		ev.Hash, e.rev[id], e.hash[id] = h, rev, h
		b.Events = append(b.Events, ev)
	}
	if summary != "" {
		b.Summary = json.RawMessage(summary)
	}
	if _, err := e.st.Replicate(e.ctx, id, b); err != nil {
		e.t.Fatalf("Replicate(%s) = %v", id, err)
	}
	if err := e.st.EndSession(e.ctx, id, store.SessionStopped, time.Now()); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) close(id string) {
	e.t.Helper()
	if err := e.svc.CloseSession(e.ctx, "alpha", id); err != nil {
		e.t.Fatalf("CloseSession(alpha, %s) = %v", id, err)
	}
}

// chunks is everything memory holds of a session: its event chunks in
// order (session_detail), then its summary chunks (by text search for
// "Session").
func (e *env) chunks(id string) []store.Hit {
	e.t.Helper()
	hits, err := e.st.SearchMemory(e.ctx, store.SearchReq{Caller: "alpha", Agent: "alpha", Store: store.StoreSession,
		Mode: store.ModeSessionDetail, SessionID: id, Limit: store.MaxSearchLimit})
	if err != nil {
		e.t.Fatal(err)
	}
	sum, err := e.st.SearchMemory(e.ctx, store.SearchReq{Caller: "alpha", Agent: "alpha", Store: store.StoreSession,
		Mode: store.ModeText, Query: "Session", Limit: store.MaxSearchLimit})
	if err != nil {
		e.t.Fatal(err)
	}
	var sums []store.Hit
	for _, h := range sum {
		if h.SessionID == id && h.Kind == store.KindSummary {
			sums = append(sums, h)
		}
	}
	slices.SortFunc(sums, func(a, b store.Hit) int { return a.ChunkIndex - b.ChunkIndex })
	return append(hits, sums...)
}

// waitVectors flushes the queue and waits until no chunk lacks a vector.
func (e *env) waitVectors() {
	e.t.Helper()
	e.svc.Flush()
	deadline := time.Now().Add(time.Minute)
	for {
		docs, err := e.st.MemoryWithoutVectors(e.ctx, "alpha", 100)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(docs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("after a minute, %d chunks still have no vector: %+v", len(docs), docs)
		}
		e.svc.Flush()
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
}

// nearest is the chunk whose vector is nearest to the embedding of text.
func (e *env) nearest(text string) store.Hit {
	e.t.Helper()
	vecs, err := e.emb.Embed(e.ctx, []string{text})
	if err != nil {
		e.t.Fatal(err)
	}
	hits, err := e.st.SearchMemory(e.ctx, store.SearchReq{Caller: "alpha", Agent: "alpha", Store: store.StoreSession,
		Mode: store.ModeSemantic, Vector: vecs[0], Limit: 1})
	if err != nil || len(hits) != 1 {
		e.t.Fatalf("semantic search for %q = %v, %v", text, hits, err)
	}
	return hits[0]
}

func userTurn(text, reply string) []string {
	return []string{"UserMsg", fmt.Sprintf(`{"id":"m","text":%q}`, text), "ModelOutput", fmt.Sprintf(`{"text":%q}`, reply)}
}

func turns(ts ...[]string) []string { return slices.Concat(ts...) }

const adaSummary = `{"title":"Pets","summary":"The user told us about the cat.","decisions":[],"open_items":[],"facts":["the cat is called Ada"]}`

// A session that ends becomes mid_term chunks, one per turn, each citing
// the revisions it covers and the hash of its text, plus its summary
// chunk; the queue gives every one its vector after a flush; ending it
// again adds nothing.
func TestCloseSessionChunksEmbedsAndIsIdempotent(t *testing.T) {
	e := newEnv(t, embed.Hashing{Dims: testDims})
	e.session("s1", false, adaSummary, turns(
		userTurn("My cat is called Ada.", "Noted: Ada."),
		[]string{"ToolCallRequested", `{"id":"c1","tool":"choir.fs.read","input":{}}`},
		userTurn("I live in Lisbon.", "Lisbon it is."))...)
	e.close("s1")
	got := e.chunks("s1")
	if len(got) != 3 {
		t.Fatalf("chunks of s1 = %d %+v; want 2 turns and the summary", len(got), got)
	}
	want := []struct {
		kind string
		revs []int64
		text string
	}{
		{store.KindEvents, []int64{1, 2}, "User: My cat is called Ada.\nAssistant (edge): Noted: Ada."},
		{store.KindEvents, []int64{4, 5}, "User: I live in Lisbon.\nAssistant (edge): Lisbon it is."},
		{store.KindSummary, []int64{}, "Session: Pets\nThe user told us about the cat.\nFacts:\n- the cat is called Ada"},
	}
	for i, w := range want {
		h := got[i]
		if h.Kind != w.kind || !slices.Equal(h.Revisions, w.revs) || h.Text != w.text || h.Tier != store.TierMidTerm ||
			h.ContentHash != store.ContentHash(w.text) || h.ChunkIndex != i {
			t.Errorf("chunk %d = %+v; want %s chunk %d of revisions %v, text %q, its hash, mid_term", i, h, w.kind, i, w.revs, w.text)
		}
	}
	var meta struct {
		ToRev int64    `json:"to_rev"`
		Lanes []string `json:"lanes"`
	}
	if json.Unmarshal(got[1].Metadata, &meta) != nil || meta.ToRev != 5 || !slices.Equal(meta.Lanes, []string{"edge"}) {
		t.Errorf("metadata of chunk 1 = %s; want to_rev 5 and lanes [edge]", got[1].Metadata)
	}

	e.waitVectors()
	for _, w := range want {
		if h := e.nearest(w.text); h.Text != w.text || h.Score < 0.999 {
			t.Errorf("nearest to %q = %q (score %v); want that chunk, by its own vector", w.text, h.Text, h.Score)
		}
	}

	e.close("s1")
	e.close("s1")
	if again := e.chunks("s1"); len(again) != len(got) {
		t.Errorf("after ending s1 twice more: %d chunks; want still %d", len(again), len(got))
	}
}

// A resumed session is chunked again from where its memory stopped: the
// new events only, numbered after the old chunks; a new summary is added,
// the same summary is not.
func TestCloseSessionResumedChunksOnlyTheNewEvents(t *testing.T) {
	e := newEnv(t, embed.Hashing{Dims: testDims})
	e.session("s1", false, adaSummary, userTurn("My cat is called Ada.", "Noted.")...)
	e.close("s1")
	e.session("s1", true, "", userTurn("The dog is Rex.", "Rex, noted.")...)
	e.close("s1")
	got := e.chunks("s1")
	var texts []string
	for _, h := range got {
		texts = append(texts, fmt.Sprintf("%d:%s:%v", h.ChunkIndex, h.Kind, h.Revisions))
	}
	if w := []string{"0:events:[1 2]", "2:events:[3 4]", "1:summary:[]"}; !slices.Equal(texts, w) {
		t.Errorf("chunks after the resume = %v; want %v", texts, w)
	}
	e.session("s1", true, `{"title":"Pets again","summary":"Cat and dog.","facts":["the dog is Rex"]}`, userTurn("Bye.", "Bye!")...)
	e.close("s1")
	e.close("s1")
	got = e.chunks("s1")
	if len(got) != 5 || got[2].Text != "User: Bye.\nAssistant (edge): Bye!" || !strings.Contains(got[4].Text, "Pets again") {
		t.Errorf("chunks after the second resume = %+v; want 3 event chunks and 2 summaries, the new one last", got)
	}
}

// A session of more events than one page is chunked as if read whole: no
// turn is cut at a page boundary.
func TestCloseSessionAcrossPages(t *testing.T) {
	e := newEnv(t, embed.Hashing{Dims: testDims})
	var evs []string
	for i := range pageSize/2 + 7 { // two events a turn: more than a page
		evs = append(evs, userTurn(fmt.Sprintf("question %d", i), fmt.Sprintf("answer %d", i))...)
	}
	e.session("s1", false, "", evs...)
	e.close("s1")
	got, err := e.st.ChunkedThrough(e.ctx, "alpha", "s1")
	if err != nil {
		t.Fatal(err)
	}
	want := pageSize/2 + 7
	if got.ThroughRev != int64(2*want) || got.NextIndex != want {
		t.Errorf("ChunkedThrough(s1) = %+v; want through revision %d in %d chunks, one a turn", got, 2*want, want)
	}
	for i := 0; i < want; i++ {
		q := fmt.Sprintf(`"question %d"`, i)
		hits, err := e.st.SearchMemory(e.ctx, store.SearchReq{Caller: "alpha", Agent: "alpha", Store: store.StoreSession,
			Mode: store.ModeText, Query: q, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		found := 0
		for _, h := range hits {
			if strings.Contains(h.Text, fmt.Sprintf("User: question %d\nAssistant (edge): answer %d", i, i)) {
				found++
			}
		}
		if found != 1 {
			t.Fatalf("turn %d is in %d chunks whole; want exactly 1 (%+v)", i, found, hits)
		}
	}
}

// Past mid_term_sessions sessions, closing one more promotes the oldest:
// its summary stays searchable as long_term_summary, its event chunks
// become long_term_detail without vectors, found by session_detail only.
func TestCloseSessionPromotesTheOldest(t *testing.T) {
	e := newEnv(t, embed.Hashing{Dims: testDims})
	e.keep.Store(2)
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("s%d", i)
		e.session(id, false, fmt.Sprintf(`{"title":"Day %d","summary":"Work of day %d."}`, i, i),
			userTurn(fmt.Sprintf("remember day%d", i), "ok")...)
		e.close(id)
		e.waitVectors()
	}
	tiers := func(id string) []string {
		var out []string
		for _, h := range e.chunks(id) {
			out = append(out, h.Kind+":"+h.Tier)
		}
		return out
	}
	if got, want := tiers("s1"), []string{"events:long_term_detail", "summary:long_term_summary"}; !slices.Equal(got, want) {
		t.Errorf("s1 after the 3rd session with mid_term_sessions 2 = %v; want %v", got, want)
	}
	for _, id := range []string{"s2", "s3"} {
		if got, want := tiers(id), []string{"events:mid_term", "summary:mid_term"}; !slices.Equal(got, want) {
			t.Errorf("%s = %v; want %v", id, got, want)
		}
	}
	if h := e.nearest("Session: Day 1\nWork of day 1."); h.SessionID != "s1" || h.Tier != store.TierLongTermSummary {
		t.Errorf("nearest to s1's summary = %+v; want it, long_term_summary, still by its vector", h)
	}
	hits, err := e.st.SearchMemory(e.ctx, store.SearchReq{Caller: "alpha", Agent: "alpha", Store: store.StoreSession, Mode: store.ModeText, Query: "day1"})
	if err != nil || len(hits) != 0 {
		t.Errorf("text search for s1's detail = %+v, %v; want nothing outside session_detail", hits, err)
	}
}

// failing is an embeddings endpoint that never answers well.
type failing struct{ calls atomic.Int64 }

func (f *failing) Embed(context.Context, []string) ([][]float32, error) {
	f.calls.Add(1)
	return nil, errors.New("embeddings endpoint down")
}
func (f *failing) Dimensions() int { return testDims }
func (f *failing) Model() string   { return "failing" }

var _ embed.Embedder = (*failing)(nil)

// When every embedding call fails, the chunks are stored all the same,
// without vectors, and text search finds them; the session close does not
// fail for it.
func TestCloseSessionWithoutEmbeddingsStillSearchable(t *testing.T) {
	f := &failing{}
	e := newEnv(t, f)
	e.session("s1", false, adaSummary, userTurn("My cat is called Ada.", "Noted.")...)
	e.close("s1")
	// Close waits until the queue has delivered every item (here: its
	// failure).
	if err := e.svc.Close(e.ctx); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if f.calls.Load() == 0 {
		t.Fatal("the queue never called the embedder")
	}
	hits, err := e.st.SearchMemory(e.ctx, store.SearchReq{Caller: "alpha", Agent: "alpha", Store: store.StoreSession, Mode: store.ModeText, Query: "Ada"})
	if err != nil || len(hits) != 2 {
		t.Fatalf("text search for Ada = %+v, %v; want the turn and the summary", hits, err)
	}
	docs, err := e.st.MemoryWithoutVectors(e.ctx, "alpha", 10)
	if err != nil || len(docs) != 2 {
		t.Errorf("MemoryWithoutVectors = %+v, %v; want both chunks, to queue again at the next start", docs, err)
	}
}

// The start's sweep closes ended sessions nobody closed (choird died
// first) and queues again the chunks left without vectors.
func TestSweepFinishesWhatAnEarlierRunLeft(t *testing.T) {
	e := newEnv(t, embed.Hashing{Dims: testDims})
	e.session("s1", false, adaSummary, userTurn("My cat is called Ada.", "Noted.")...)
	// A chunk stored by a run that died before its vector came back.
	if _, err := e.st.AddMemory(e.ctx, "alpha", []store.MemoryDoc{{SessionID: "s0", Text: "an old chunk about tea", Revisions: []int64{1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.CreateSession(e.ctx, store.NewSession{SessionID: "live", AgentID: "alpha", LeaseID: "l", StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	e.svc.Sweep(e.ctx, []string{"alpha"})
	if got := e.chunks("s1"); len(got) != 2 {
		t.Errorf("chunks of s1 after the sweep = %+v; want its turn and summary", got)
	}
	if got := e.chunks("live"); len(got) != 0 {
		t.Errorf("chunks of the active session = %+v; want none until it ends", got)
	}
	e.waitVectors()
}
