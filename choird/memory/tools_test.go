package memory

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"choir/choird/store"
	"choir/internal/embed"
	"choir/internal/rpc"
	"choir/testkit/pgtest"
)

const toolDims = 64

// syncIndex embeds an upserted document at once (the queue's work, done
// in line so a test can search by meaning right after the upsert).
type syncIndex struct {
	t   testing.TB
	st  *store.Store
	emb embed.Embedder
}

var _ Indexer = syncIndex{}

func (x syncIndex) EnqueueKnowledge(agentID, docID, text string) {
	vecs, err := x.emb.Embed(context.Background(), []string{text})
	if err == nil {
		err = x.st.SetKnowledgeVector(context.Background(), agentID, docID, store.ContentHash(text), vecs[0])
	}
	if err != nil {
		x.t.Errorf("index %s of %s: %v", docID, agentID, err)
	}
}

// failingEmbedder stands for an embeddings endpoint that is down.
type failingEmbedder struct{}

func (failingEmbedder) Embed(context.Context, []string) ([][]float32, error) {
	return nil, errors.New("POST /v1/embeddings: 503 Service Unavailable")
}
func (failingEmbedder) Dimensions() int { return toolDims }
func (failingEmbedder) Model() string   { return "down" }

var _ embed.Embedder = failingEmbedder{}

// toolsDB is a store with agents alpha and beta bootstrapped and Tools on
// it with the offline hashing embedder.
func toolsDB(t *testing.T) (*Tools, *store.Store, context.Context) {
	t.Helper()
	db := pgtest.DB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	st, err := store.Open(ctx, store.Config{DSN: db.DSN, Namespace: db.Namespace})
	if err != nil {
		t.Fatalf("store.Open(%s) = %v", db.Backend, err)
	}
	t.Cleanup(func() { st.Drop(context.Background()); st.Close() })
	if err := st.Bootstrap(ctx, []string{"alpha", "beta"}, toolDims); err != nil {
		t.Fatal(err)
	}
	emb := embed.Hashing{Dims: toolDims}
	return &Tools{Store: st, Embedder: emb, Index: syncIndex{t, st, emb}}, st, ctx
}

// must reads a tool's success answer, failing t on an error.
func must(t *testing.T) func(json.RawMessage, error) rpc.MemoryAnswer {
	return func(raw json.RawMessage, err error) rpc.MemoryAnswer {
		t.Helper()
		return answer(t, raw, err)
	}
}

func answer(t *testing.T, raw json.RawMessage, err error) rpc.MemoryAnswer {
	t.Helper()
	if err != nil {
		t.Fatalf("tool error: %v", err)
	}
	var a rpc.MemoryAnswer
	if err := json.Unmarshal(raw, &a); err != nil || a.Status != "success" || a.Summary == "" {
		t.Fatalf("tool answer %s: want a success result with a summary (%v)", raw, err)
	}
	return a
}

// addSession stores a session's chunks for agent with their vectors.
func addSession(t *testing.T, tl *Tools, st *store.Store, ctx context.Context, agent, session string, texts ...string) {
	t.Helper()
	var docs []store.MemoryDoc
	for i, text := range texts {
		v, _ := tl.Embedder.Embed(ctx, []string{text})
		docs = append(docs, store.MemoryDoc{SessionID: session, ChunkIndex: i, Text: text, Revisions: []int64{int64(2*i + 1), int64(2*i + 2)}, Vector: v[0]})
	}
	if _, err := st.AddMemory(ctx, agent, docs); err != nil {
		t.Fatal(err)
	}
}

func upsert(t *testing.T, tl *Tools, ctx context.Context, agent, input string) rpc.MemoryAnswer {
	t.Helper()
	out, err := tl.Upsert(ctx, agent, "s-now", json.RawMessage(input))
	return answer(t, out, err)
}

// Every store and mode answers with the hit a user would expect first, and
// every hit carries its provenance: agent, store, document id, content hash
// of its text, and for session memory the session, tier and revisions.
func TestMemoryQueryStoresAndModes(t *testing.T) {
	tl, st, ctx := toolsDB(t)
	addSession(t, tl, st, ctx, "alpha", "s-1",
		"the user booked a flight to Lisbon for the conference",
		"we debugged the flaky postgres migration together",
		"the user prefers green tea in the morning")
	addSession(t, tl, st, ctx, "beta", "s-b", "beta watched the lighthouse keeper paint the tower")
	upsert(t, tl, ctx, "alpha", `{"op":"insert","key":"user.city","text":"the user lives in Porto near the river"}`)
	upsert(t, tl, ctx, "alpha", `{"op":"insert","text":"the user's cat is called Miso","metadata":{"topic":"pets"}}`)
	upsert(t, tl, ctx, "beta", `{"op":"insert","key":"tower","text":"the lighthouse tower is painted red"}`)

	for _, c := range []struct {
		caller, input, first string
		n                    int // hits wanted; 0: at least one
	}{
		{"alpha", `{"store":"session","mode":"semantic","query":"flight to Lisbon conference"}`, "flight to Lisbon", 0},
		{"alpha", `{"store":"session","mode":"text","query":"postgres migration"}`, "flaky postgres", 1},
		{"alpha", `{"store":"session","mode":"hybrid","query":"green tea morning"}`, "green tea", 0},
		{"alpha", `{"store":"session","query":"green tea morning"}`, "green tea", 0}, // hybrid is the default
		{"alpha", `{"store":"session","mode":"session_detail","session_id":"s-1"}`, "flight to Lisbon", 3},
		{"alpha", `{"store":"session","mode":"session_detail","session_id":"s-1","query":"tea"}`, "green tea", 1},
		{"alpha", `{"store":"knowledge","mode":"semantic","query":"where does the user live, Porto"}`, "Porto", 0},
		{"alpha", `{"store":"knowledge","mode":"text","query":"Miso"}`, "Miso", 1},
		{"alpha", `{"store":"knowledge","mode":"hybrid","query":"cat called Miso","limit":1}`, "Miso", 1},
		// Reads of another agent's memory when it is named (spec 11.2).
		{"alpha", `{"store":"session","mode":"text","query":"lighthouse","target_agent":"beta"}`, "lighthouse keeper", 1},
		{"alpha", `{"store":"knowledge","mode":"hybrid","query":"lighthouse tower","target_agent":"beta"}`, "painted red", 0},
	} {
		t.Run(c.input, func(t *testing.T) {
			a := must(t)(tl.Query(ctx, c.caller, "s-now", json.RawMessage(c.input)))
			if len(a.Hits) == 0 || (c.n > 0 && len(a.Hits) != c.n) || !strings.Contains(a.Hits[0].Text, c.first) {
				t.Fatalf("Query(%s) = %d hits %+v; want %q first (%d hits)", c.input, len(a.Hits), a.Hits, c.first, c.n)
			}
			var in rpc.MemoryQuery
			json.Unmarshal([]byte(c.input), &in)
			wantAgent := cmp(in.TargetAgent, c.caller)
			for _, h := range a.Hits {
				if h.Agent != wantAgent || h.Store != in.Store || h.DocumentID == "" || h.ContentHash != store.ContentHash(h.Text) {
					t.Errorf("hit %+v: want agent %s, store %s, a document id and the hash of its text", h, wantAgent, in.Store)
				}
				if in.Store == store.StoreSession && (h.SessionID == "" || h.Tier != store.TierMidTerm || len(h.Revisions) != 2) {
					t.Errorf("session hit %+v: want its session, tier and revisions", h)
				}
			}
		})
	}
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// When the embeddings endpoint fails, semantic search answers by text and
// says so; hybrid keeps its text half. Nothing fails for the user.
func TestMemoryQueryEmbedderDown(t *testing.T) {
	tl, _, ctx := toolsDB(t)
	upsert(t, tl, ctx, "alpha", `{"op":"insert","text":"the wifi password is on the fridge"}`)
	tl.Embedder = failingEmbedder{}
	for _, mode := range []string{"semantic", "hybrid"} {
		a := must(t)(tl.Query(ctx, "alpha", "", json.RawMessage(`{"store":"knowledge","mode":"`+mode+`","query":"wifi password"}`)))
		if len(a.Hits) != 1 || !strings.Contains(a.Note, "503") || !strings.Contains(a.Summary, "text search") {
			t.Errorf("%s with the embedder down = %+v; want the text hit and a note saying why", mode, a)
		}
	}
	tl.Embedder = nil
	a := must(t)(tl.Query(ctx, "alpha", "", json.RawMessage(`{"store":"knowledge","mode":"semantic","query":"fridge"}`)))
	if len(a.Hits) != 1 || a.Mode != store.ModeText || !strings.Contains(a.Note, "no embedder") {
		t.Errorf("semantic without an embedder = %+v", a)
	}
}

// Insert, update by key, delete by key and by id, each seen by the next
// query.
func TestMemoryUpsertLifecycle(t *testing.T) {
	tl, _, ctx := toolsDB(t)
	find := func(q string) []rpc.MemoryHit {
		return must(t)(tl.Query(ctx, "alpha", "", json.RawMessage(`{"store":"knowledge","mode":"text","query":"`+q+`"}`))).Hits
	}
	a := upsert(t, tl, ctx, "alpha", `{"op":"insert","key":"user.tz","text":"the user is in Lisbon time"}`)
	if !a.Created || a.DocumentID == "" || a.ContentHash != store.ContentHash("the user is in Lisbon time") {
		t.Fatalf("insert = %+v", a)
	}
	b := upsert(t, tl, ctx, "alpha", `{"op":"update","key":"user.tz","text":"the user moved to Tokyo time"}`)
	if b.Created || b.DocumentID != a.DocumentID {
		t.Errorf("update = %+v; want the same document %s replaced", b, a.DocumentID)
	}
	if h := find("Tokyo"); len(h) != 1 || len(find("Lisbon")) != 0 {
		t.Errorf("after update: Tokyo %d hits, Lisbon %d; want 1 and 0", len(h), len(find("Lisbon")))
	}
	sem := must(t)(tl.Query(ctx, "alpha", "", json.RawMessage(`{"store":"knowledge","mode":"semantic","query":"moved to Tokyo time"}`)))
	if len(sem.Hits) == 0 || sem.Hits[0].DocumentID != a.DocumentID || sem.Note != "" {
		t.Errorf("semantic after update = %+v; want the updated document by its new vector", sem)
	}
	upsert(t, tl, ctx, "alpha", `{"op":"delete","key":"user.tz"}`)
	if h := find("Tokyo"); len(h) != 0 {
		t.Errorf("after delete by key: %+v", h)
	}
	c := upsert(t, tl, ctx, "alpha", `{"op":"insert","text":"keyless fact about kites"}`)
	upsert(t, tl, ctx, "alpha", `{"op":"delete","id":"`+c.DocumentID+`"}`)
	if h := find("kites"); len(h) != 0 {
		t.Errorf("after delete by id: %+v", h)
	}
	if _, err := tl.Upsert(ctx, "alpha", "", json.RawMessage(`{"op":"delete","key":"user.tz"}`)); toolCode(err) != CodeNotFound {
		t.Errorf("delete of a deleted key = %v; want %s", err, CodeNotFound)
	}
}

func toolCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// Agent alpha cannot change beta's knowledge by any argument: members
// naming an agent are refused, beta's ids and keys name nothing in alpha's
// store, and SQL in any field is stored as plain text in alpha's own.
// Beta's knowledge is unchanged afterwards, document by document.
func TestMemoryUpsertCannotWriteAnotherAgent(t *testing.T) {
	tl, st, ctx := toolsDB(t)
	bDoc := upsert(t, tl, ctx, "beta", `{"op":"insert","key":"user.city","text":"the user lives in Lisbon"}`)
	upsert(t, tl, ctx, "beta", `{"op":"insert","text":"beta's keyless note"}`)
	before, err := st.ListKnowledge(ctx, "", "beta", 100)
	if err != nil {
		t.Fatal(err)
	}
	sql := `'); DELETE FROM knowledge_documents; --`
	sqlJSON, _ := json.Marshal(sql)
	for _, c := range []struct {
		name, input, code string
	}{
		{"target_agent", `{"op":"insert","text":"planted","target_agent":"beta"}`, CodeForbidden},
		{"agent", `{"op":"insert","text":"planted","agent":"beta"}`, CodeForbidden},
		{"agent_id", `{"op":"update","key":"user.city","text":"planted","agent_id":"beta"}`, CodeForbidden},
		{"owner", `{"op":"delete","key":"user.city","owner":"beta"}`, CodeForbidden},
		{"schema", `{"op":"delete","key":"user.city","schema":"beta"}`, CodeForbidden},
		{"nested unknown", `{"op":"insert","text":"planted","store":{"agent":"beta"}}`, CodeInvalidInput},
		{"beta's id", `{"op":"delete","id":"` + bDoc.DocumentID + `"}`, CodeNotFound},
		{"beta's key", `{"op":"delete","key":"user.city"}`, CodeNotFound},
		{"beta's id on update", `{"op":"update","id":"` + bDoc.DocumentID + `","text":"planted"}`, CodeInvalidInput},
		{"uppercase id of beta's", `{"op":"delete","id":"` + strings.ToUpper(bDoc.DocumentID) + `"}`, CodeNotFound},
		{"sql id", `{"op":"delete","id":` + string(sqlJSON) + `}`, CodeInvalidInput},
		{"sql key delete", `{"op":"delete","key":` + string(sqlJSON) + `}`, CodeNotFound},
		// Accepted, but written to alpha's own store only.
		{"beta's key on update", `{"op":"update","key":"user.city","text":"planted in alpha"}`, ""},
		{"key with beta's name", `{"op":"insert","key":"beta.user.city","text":"planted in alpha"}`, ""},
		{"key naming beta's schema", `{"op":"insert","key":"beta.knowledge_documents","text":"planted in alpha"}`, ""},
		{"sql key", `{"op":"insert","key":` + string(sqlJSON) + `,"text":"planted in alpha"}`, ""},
		{"sql text", `{"op":"insert","text":` + string(sqlJSON) + `}`, ""},
		{"sql metadata", `{"op":"insert","text":"planted in alpha","metadata":{"x":` + string(sqlJSON) + `}}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := tl.Upsert(ctx, "alpha", "s-a", json.RawMessage(c.input))
			if toolCode(err) != c.code || (err == nil) != (c.code == "") {
				t.Fatalf("Upsert(alpha, %s) = %s, %v; want code %q", c.input, out, err, c.code)
			}
			if err == nil {
				if a := answer(t, out, nil); a.Agent != "alpha" {
					t.Errorf("written for agent %q; want alpha", a.Agent)
				}
			}
		})
	}
	after, err := st.ListKnowledge(ctx, "", "beta", 100)
	if err != nil {
		t.Fatal(err)
	}
	sig := func(ds []store.KnowledgeDoc) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.ID+" "+d.Key+" "+d.Text+" "+d.UpdatedAt.String())
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(sig(before), sig(after)) {
		t.Errorf("beta's knowledge changed:\nbefore %q\nafter  %q", sig(before), sig(after))
	}
	a := must(t)(tl.Query(ctx, "alpha", "", json.RawMessage(`{"store":"knowledge","mode":"text","query":"DELETE knowledge_documents"}`)))
	if len(a.Hits) < 1 {
		t.Errorf("the SQL text was not stored as plain text in alpha's knowledge: %+v", a)
	}
}

// Bad inputs are refused with an error saying which member is wrong and
// what is wanted; nothing reaches the store.
func TestMemoryToolBadInputs(t *testing.T) {
	tl := &Tools{Store: nil, Embedder: embed.Hashing{Dims: toolDims}}
	ctx := context.Background()
	big := strings.Repeat("a", MaxKnowledgeText+1)
	for _, c := range []struct {
		tool, input, code, says string
	}{
		{"q", ``, CodeInvalidInput, "empty"},
		{"q", `[]`, CodeInvalidInput, "malformed"},
		{"q", `{"store":"knowledge","query":"x"} {}`, CodeInvalidInput, "after"},
		{"q", `{"store":"knowledge","query":"x","vector":[1,2]}`, CodeInvalidInput, "vector"},
		{"q", `{"query":"x"}`, CodeInvalidInput, "/store is missing"},
		{"q", `{"store":"working","query":"x"}`, CodeInvalidInput, "inside the agent"},
		{"q", `{"store":"everything","query":"x"}`, CodeInvalidInput, "/store"},
		{"q", `{"store":"knowledge","mode":"vector","query":"x"}`, CodeInvalidInput, "/mode"},
		{"q", `{"store":"knowledge","mode":"semantic"}`, CodeInvalidInput, "needs a /query"},
		{"q", `{"store":"knowledge","mode":"session_detail","session_id":"s"}`, CodeInvalidInput, "store session"},
		{"q", `{"store":"session","mode":"session_detail"}`, CodeInvalidInput, "needs a /session_id"},
		{"q", `{"store":"session","mode":"text","query":"x","session_id":"s"}`, CodeInvalidInput, "session_detail only"},
		{"q", `{"store":"session","query":"x","limit":21}`, CodeInvalidInput, "/limit 21"},
		{"q", `{"store":"session","query":"x","limit":-1}`, CodeInvalidInput, "/limit"},
		{"q", `{"store":"session","query":"x","limit":"5"}`, CodeInvalidInput, "limit"},
		{"q", `{"store":"session","query":"` + strings.Repeat("q", MaxToolQuery+1) + `"}`, CodeInvalidInput, "/query is"},
		{"q", `{"store":"session","query":"a\u0000b"}`, CodeInvalidInput, "NUL"},
		{"q", `{"store":"session","query":"x","target_agent":"Beta; DROP SCHEMA"}`, CodeInvalidInput, "/target_agent"},
		{"q", `{"store":"session","query":"x","target_agent":"../beta"}`, CodeInvalidInput, "/target_agent"},
		{"u", `{}`, CodeInvalidInput, "/op is missing"},
		{"u", `{"op":"upsert","text":"x"}`, CodeInvalidInput, "/op"},
		{"u", `{"op":"insert"}`, CodeInvalidInput, "non-empty /text"},
		{"u", `{"op":"insert","text":"   "}`, CodeInvalidInput, "non-empty /text"},
		{"u", `{"op":"insert","text":"` + big + `"}`, CodeInvalidInput, "/text is"},
		{"u", `{"op":"insert","text":"x","key":"` + strings.Repeat("k", store.MaxKeyLen+1) + `"}`, CodeInvalidInput, "/key is"},
		{"u", `{"op":"insert","text":"x","metadata":[1]}`, CodeInvalidInput, "/metadata"},
		{"u", `{"op":"insert","text":"x","metadata":"tag"}`, CodeInvalidInput, "/metadata"},
		{"u", `{"op":"insert","text":"x","metadata":{"k":"` + strings.Repeat("m", MaxToolMetadata) + `"}}`, CodeInvalidInput, "/metadata is"},
		{"u", `{"op":"update","text":"x"}`, CodeInvalidInput, "needs the /key"},
		{"u", `{"op":"delete"}`, CodeInvalidInput, "/key or its /id"},
		{"u", `{"op":"delete","key":"k","id":"00000000-0000-0000-0000-000000000000"}`, CodeInvalidInput, "one of them"},
		{"u", `{"op":"delete","key":"k","text":"x"}`, CodeInvalidInput, "only /key or /id"},
		{"u", `{"op":"delete","id":"42"}`, CodeInvalidInput, "not a document id"},
		{"u", `{"op":"insert","text":"x","extra":1}`, CodeInvalidInput, "unknown field"},
		{"u", `{"op":"insert","text":"x","target_agent":"alpha"}`, CodeForbidden, "only its own knowledge"},
		{"u", `{"op":"insert","text":"` + strings.Repeat("a", MaxToolInput) + `"}`, CodeInvalidInput, "input of"},
	} {
		t.Run(c.tool+" "+clipTo(c.input, 60), func(t *testing.T) {
			f := tl.Query
			if c.tool == "u" {
				f = tl.Upsert
			}
			out, err := f(ctx, "alpha", "s", json.RawMessage(c.input))
			if toolCode(err) != c.code || !strings.Contains(err.Error(), c.says) {
				t.Errorf("input %s = %s, %v; want %s saying %q", clipTo(c.input, 80), out, err, c.code, c.says)
			}
		})
	}
	// No caller: the handler is never reached without one, but if it were
	// it refuses rather than writing anywhere.
	if _, err := tl.Upsert(ctx, "", "", json.RawMessage(`{"op":"insert","text":"x"}`)); toolCode(err) != CodeForbidden {
		t.Errorf("Upsert without a caller = %v", err)
	}
	if _, err := tl.OperatorQuery(ctx, "alpha", json.RawMessage(`{"store":"knowledge","query":"x","target_agent":"beta"}`)); toolCode(err) != CodeInvalidInput {
		t.Errorf("OperatorQuery with a different target_agent = %v", err)
	}
}

// The operator's list and search use the same code as the agent's tools.
func TestMemoryOperatorListAndSearch(t *testing.T) {
	tl, _, ctx := toolsDB(t)
	upsert(t, tl, ctx, "beta", `{"op":"insert","key":"k1","text":"first fact"}`)
	upsert(t, tl, ctx, "beta", `{"op":"insert","key":"k2","text":"second fact"}`)
	l := must(t)(tl.List(ctx, "beta", 0))
	if len(l.Hits) != 2 || l.Hits[0].Key != "k2" || !l.Hits[0].HasVector || l.Hits[0].ContentHash != store.ContentHash("second fact") {
		t.Errorf("List(beta) = %+v; want k2 then k1 with their vectors and hashes", l.Hits)
	}
	s := must(t)(tl.OperatorQuery(ctx, "beta", json.RawMessage(`{"store":"knowledge","mode":"text","query":"second"}`)))
	if len(s.Hits) != 1 || s.Hits[0].Agent != "beta" {
		t.Errorf("OperatorQuery(beta) = %+v", s)
	}
	if _, err := tl.List(ctx, "gamma", 0); toolCode(err) != CodeNotFound {
		t.Errorf("List(gamma), an agent without a schema = %v; want %s", err, CodeNotFound)
	}
}

// Through the table choird's EXECUTE_HOST_TOOL consults: alpha saves a fact
// in one session and finds it, with its provenance, in a later one by
// meaning; beta finds it only when it names alpha, and cannot delete it.
func TestHostToolsAcrossSessions(t *testing.T) {
	tl, _, ctx := toolsDB(t)
	host := tl.HostTools()
	out, err := host[rpc.HostToolMemoryUpsert](ctx, "alpha", "s-1", json.RawMessage(`{"op":"insert","key":"user.allergy","text":"the user is allergic to peanuts"}`))
	saved := answer(t, out, err)
	later := func(agent, input string) rpc.MemoryAnswer {
		out, err := host[rpc.HostToolMemoryQuery](ctx, agent, "s-2", json.RawMessage(input))
		return answer(t, out, err)
	}
	a := later("alpha", `{"store":"knowledge","mode":"semantic","query":"is the user allergic to peanuts?"}`)
	if len(a.Hits) == 0 || a.Hits[0].DocumentID != saved.DocumentID || a.Hits[0].Key != "user.allergy" || a.Hits[0].ContentHash != saved.ContentHash {
		t.Errorf("alpha in session s-2 = %+v; want the fact saved in s-1 with its id, key and hash", a)
	}
	if b := later("beta", `{"store":"knowledge","mode":"text","query":"peanuts"}`); len(b.Hits) != 0 {
		t.Errorf("beta found alpha's fact in its own store: %+v", b)
	}
	if b := later("beta", `{"store":"knowledge","mode":"text","query":"peanuts","target_agent":"alpha"}`); len(b.Hits) != 1 || b.Hits[0].Agent != "alpha" {
		t.Errorf("beta naming alpha = %+v; want alpha's fact", b)
	}
	if _, err := host[rpc.HostToolMemoryUpsert](ctx, "beta", "s-b", json.RawMessage(`{"op":"delete","id":"`+saved.DocumentID+`"}`)); toolCode(err) != CodeNotFound {
		t.Errorf("beta deleting alpha's document = %v; want %s", err, CodeNotFound)
	}
	if a := later("alpha", `{"store":"knowledge","mode":"text","query":"peanuts"}`); len(a.Hits) != 1 {
		t.Errorf("alpha's fact after beta's delete = %+v", a)
	}
}
