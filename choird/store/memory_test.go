package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// chunk is a mid_term chunk of kind events with a vector.
func chunk(session string, i int, text string, vec ...float32) MemoryDoc {
	return MemoryDoc{SessionID: session, ChunkIndex: i, Text: text, Revisions: []int64{int64(10*i + 1), int64(10*i + 2)}, Vector: vec}
}

func mustAdd(t *testing.T, s *Store, agent string, docs ...MemoryDoc) []string {
	t.Helper()
	ids, err := s.AddMemory(ctxT(t), agent, docs)
	if err != nil {
		t.Fatalf("AddMemory(%s) = %v", agent, err)
	}
	return ids
}

func search(t *testing.T, s *Store, req SearchReq) []Hit {
	t.Helper()
	hits, err := s.SearchMemory(ctxT(t), req)
	if err != nil {
		t.Fatalf("SearchMemory(%+v) = %v", req, err)
	}
	return hits
}

// texts is the hits' texts, in order.
func texts(hits []Hit) string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Text)
	}
	return strings.Join(out, " | ")
}

// Agent alpha's role cannot change beta's memory or knowledge, whatever
// it is handed: SQL into beta's tables is refused by Postgres, beta's
// document ids are not found in alpha's schema, hostile ids and keys are
// refused or stored as plain text. Alpha reads beta's memory when it
// names beta.
func TestMemoryIsolation(t *testing.T) {
	s := newStore(t, Config{}, "alpha", "beta")
	ctx := ctxT(t)
	betaChunk := mustAdd(t, s, "beta", chunk("b1", 0, "beta remembers the lighthouse keeper", 1, 0, 0))[0]
	betaKnow, _, err := s.UpsertKnowledge(ctx, "beta", KnowledgeDoc{Key: "user.city", Text: "the user lives in Lisbon", Vector: []float32{0, 1, 0}})
	if err != nil {
		t.Fatal(err)
	}
	bs := s.ns + "_beta"

	// Raw SQL under alpha's role, every write on every table of beta's.
	for _, sql := range []string{
		`INSERT INTO ` + bs + `.knowledge_documents (key, text) VALUES ('evil', 'planted')`,
		`UPDATE ` + bs + `.knowledge_documents SET text = 'changed'`,
		`DELETE FROM ` + bs + `.knowledge_documents`,
		`DELETE FROM ` + bs + `.knowledge_embeddings`,
		`INSERT INTO ` + bs + `.memory_documents (session_id, tier, chunk_index, text) VALUES ('x', 'mid_term', 0, 'planted')`,
		`UPDATE ` + bs + `.memory_documents SET tier = 'long_term_detail'`,
		`DELETE FROM ` + bs + `.memory_embeddings`,
		`TRUNCATE ` + bs + `.memory_documents CASCADE`,
		`DROP TABLE ` + bs + `.knowledge_documents CASCADE`,
	} {
		err := s.agentWrite(ctx, "alpha", func(tx pgx.Tx, _ names) error {
			_, err := tx.Exec(ctx, sql)
			return err
		})
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || (pe.Code != "42501" && !strings.Contains(pe.Message, "permission denied")) {
			t.Errorf("as alpha: %s: error %v; want permission denied", sql, err)
		}
	}

	// The API with beta's ids and hostile arguments, as alpha.
	if err := s.DeleteKnowledge(ctx, "alpha", KnowledgeRef{ID: betaKnow}); !errors.Is(err, ErrNotFound) {
		t.Errorf("DeleteKnowledge(alpha, beta's id) = %v; want ErrNotFound", err)
	}
	if err := s.DeleteKnowledge(ctx, "alpha", KnowledgeRef{Key: "user.city"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("DeleteKnowledge(alpha, beta's key) = %v; want ErrNotFound", err)
	}
	if err := s.SetMemoryVector(ctx, "alpha", betaChunk, []float32{0, 0, 1}); !errors.Is(err, ErrNotFound) {
		t.Errorf("SetMemoryVector(alpha, beta's chunk) = %v; want ErrNotFound", err)
	}
	if err := s.SetKnowledgeVector(ctx, "alpha", betaKnow, ContentHash("the user lives in Lisbon"), []float32{0, 0, 1}); !errors.Is(err, ErrNotFound) {
		t.Errorf("SetKnowledgeVector(alpha, beta's doc) = %v; want ErrNotFound", err)
	}
	inject := `x'); DELETE FROM ` + bs + `.knowledge_documents; --`
	if _, _, err := s.UpsertKnowledge(ctx, "alpha", KnowledgeDoc{Key: inject, Text: inject, Metadata: json.RawMessage(`{"source": "` + bs + `"}`)}); err != nil {
		t.Errorf("UpsertKnowledge(alpha, injection as plain text) = %v", err)
	}
	if _, err := s.AddMemory(ctx, "alpha", []MemoryDoc{{SessionID: bs + ".memory_documents", Text: inject}}); err != nil {
		t.Errorf("AddMemory(alpha, injection as plain text) = %v", err)
	}
	for _, agent := range []string{"beta; DROP SCHEMA x", `alpha"."beta`, "../beta", "Beta", "", "alpha beta", "control"} {
		if _, _, err := s.UpsertKnowledge(ctx, agent, KnowledgeDoc{Key: "user.city", Text: "planted"}); err == nil {
			t.Errorf("UpsertKnowledge(%q) succeeded", agent)
		}
	}
	if _, _, err := s.UpsertKnowledge(ctx, "gamma", KnowledgeDoc{Text: "no such agent"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("UpsertKnowledge(gamma, not bootstrapped) = %v; want ErrNotFound", err)
	}

	// Beta's memory is as it was, and alpha reads it by naming beta.
	list, err := s.ListKnowledge(ctx, "alpha", "beta", 10)
	if err != nil {
		t.Fatalf("ListKnowledge(alpha reads beta) = %v", err)
	}
	if len(list) != 1 || list[0].Text != "the user lives in Lisbon" || !list[0].HasVector {
		t.Errorf("beta's knowledge after alpha's attempts = %+v; want the one document, with its vector", list)
	}
	hits := search(t, s, SearchReq{Caller: "alpha", Agent: "beta", Store: StoreSession, Mode: ModeSemantic, Vector: []float32{1, 0, 0}})
	if len(hits) != 1 || hits[0].DocumentID != betaChunk || hits[0].Agent != "beta" || hits[0].Tier != TierMidTerm {
		t.Errorf("alpha's semantic search of beta's session memory = %+v; want beta's chunk, tier mid_term", hits)
	}
	hits = search(t, s, SearchReq{Caller: "alpha", Agent: "beta", Store: StoreKnowledge, Mode: ModeText, Query: "Lisbon"})
	if len(hits) != 1 || hits[0].Key != "user.city" {
		t.Errorf("alpha's text search of beta's knowledge = %+v; want user.city", hits)
	}
	// Alpha's own search under its role does not see beta's.
	hits = search(t, s, SearchReq{Caller: "alpha", Agent: "alpha", Store: StoreKnowledge, Mode: ModeText, Query: "Lisbon"})
	if len(hits) != 0 {
		t.Errorf("alpha's search of its own knowledge for Lisbon = %+v; want none", hits)
	}
}

// A session's chunks found by each mode of the session store, with their
// provenance.
func TestSessionStoreModes(t *testing.T) {
	s := newStore(t, Config{}, "ada")
	ctx := ctxT(t)
	ids := mustAdd(t, s, "ada",
		MemoryDoc{SessionID: "s1", ChunkIndex: 0, Text: "We deployed the billing service to production on Friday",
			Revisions: []int64{3, 4, 5}, Metadata: json.RawMessage(`{"skill": "deploy"}`), Vector: []float32{1, 0, 0}},
		MemoryDoc{SessionID: "s1", ChunkIndex: 1, Text: "The user prefers tea over coffee", Revisions: []int64{9}, Vector: []float32{0, 1, 0}},
		MemoryDoc{SessionID: "s1", ChunkIndex: 2, Kind: KindSummary, Text: "Session about deploying billing", Vector: []float32{0.9, 0.1, 0}},
		MemoryDoc{SessionID: "s0", Tier: TierLongTermDetail, ChunkIndex: 0, Text: "An old detail about billing invoices"},
	)

	hits := search(t, s, SearchReq{Caller: "ada", Agent: "ada", Store: StoreSession, Mode: ModeText, Query: "billing production"})
	if len(hits) != 1 || hits[0].DocumentID != ids[0] {
		t.Fatalf("text billing production = %q; want the deploy chunk", texts(hits))
	}
	h := hits[0]
	want := Hit{Agent: "ada", Store: StoreSession, DocumentID: ids[0], SessionID: "s1", Tier: TierMidTerm, ChunkIndex: 0, Kind: KindEvents,
		Revisions: []int64{3, 4, 5}, ContentHash: ContentHash("We deployed the billing service to production on Friday"),
		Text: "We deployed the billing service to production on Friday"}
	h.Metadata, h.Score = nil, 0
	if fmt.Sprint(h) != fmt.Sprint(want) {
		t.Errorf("text hit = %+v; want %+v", h, want)
	}
	var meta map[string]any
	if json.Unmarshal(hits[0].Metadata, &meta); meta["skill"] != "deploy" {
		t.Errorf("hit metadata = %s; want the caller's skill tag kept", hits[0].Metadata)
	}

	// The default searches leave long_term_detail out.
	hits = search(t, s, SearchReq{Caller: "ada", Agent: "ada", Store: StoreSession, Mode: ModeText, Query: "billing"})
	if got := texts(hits); strings.Contains(got, "old detail") || len(hits) != 2 {
		t.Errorf("text billing = %q; want the two mid_term chunks, not the long_term_detail one", got)
	}
	hits = search(t, s, SearchReq{Caller: "ada", Agent: "ada", Store: StoreSession, Mode: ModeSemantic, Vector: []float32{0, 1, 0.1}, Limit: 2})
	if len(hits) != 2 || hits[0].DocumentID != ids[1] || hits[0].Score <= hits[1].Score {
		t.Errorf("semantic near tea = %q (scores %v, %v); want the tea chunk first", texts(hits), hits[0].Score, hits[1].Score)
	}
	hits = search(t, s, SearchReq{Caller: "ada", Agent: "ada", Store: StoreSession, Mode: ModeHybrid, Query: "tea", Vector: []float32{0, 1, 0}})
	if len(hits) == 0 || hits[0].DocumentID != ids[1] {
		t.Errorf("hybrid tea = %q; want the tea chunk first", texts(hits))
	}
	// session_detail drills into one session's event chunks.
	hits = search(t, s, SearchReq{Caller: "ada", Agent: "ada", Store: StoreSession, Mode: ModeSessionDetail, SessionID: "s0"})
	if texts(hits) != "An old detail about billing invoices" || hits[0].Tier != TierLongTermDetail {
		t.Errorf("session_detail s0 = %+v; want its long_term_detail chunk", hits)
	}
	hits = search(t, s, SearchReq{Caller: "ada", Agent: "ada", Store: StoreSession, Mode: ModeSessionDetail, SessionID: "s1"})
	if len(hits) != 2 || hits[0].ChunkIndex != 0 || hits[1].ChunkIndex != 1 {
		t.Errorf("session_detail s1 = %q; want its two event chunks in order, not its summary", texts(hits))
	}
	hits = search(t, s, SearchReq{Caller: "", Agent: "ada", Store: StoreSession, Mode: ModeSessionDetail, SessionID: "s1", Query: "coffee"})
	if len(hits) != 1 || hits[0].DocumentID != ids[1] {
		t.Errorf("session_detail s1 coffee (operator) = %q; want the tea chunk", texts(hits))
	}
	if ok, err := s.SessionChunked(ctx, "ada", "s1"); !ok || err != nil {
		t.Errorf("SessionChunked(s1) = %v, %v; want true", ok, err)
	}
	if ok, err := s.SessionChunked(ctx, "ada", "s9"); ok || err != nil {
		t.Errorf("SessionChunked(s9) = %v, %v; want false", ok, err)
	}
}

// A document that matches both the text and the vector ranks above ones
// matching only one; documents without a vector are found by text and by
// hybrid, and get one later from the embedding queue.
func TestHybridRanking(t *testing.T) {
	s := newStore(t, Config{}, "ada")
	ctx := ctxT(t)
	for _, st := range []string{StoreSession, StoreKnowledge} {
		t.Run(st, func(t *testing.T) {
			add := func(text string, vec []float32) string {
				if st == StoreKnowledge {
					id, _, err := s.UpsertKnowledge(ctx, "ada", KnowledgeDoc{Text: text, Vector: vec})
					if err != nil {
						t.Fatal(err)
					}
					return id
				}
				return mustAdd(t, s, "ada", MemoryDoc{SessionID: "h", Text: text, Vector: vec})[0]
			}
			textOnly := add("the staging database password rotates monthly", []float32{0, 0, 1})
			vecOnly := add("unrelated words entirely", []float32{1, 0.05, 0})
			both := add("the database migration finished", []float32{1, 0, 0})
			noVec := add("database backups run at night", nil)
			req := SearchReq{Caller: "ada", Agent: "ada", Store: st, Mode: ModeHybrid, Query: "database", Vector: []float32{1, 0, 0}}
			hits := search(t, s, req)
			var order []string
			for _, h := range hits {
				order = append(order, h.DocumentID)
			}
			if len(order) < 4 || order[0] != both {
				t.Fatalf("hybrid = %q; want %q first", texts(hits), "the database migration finished")
			}
			for _, id := range []string{textOnly, vecOnly, noVec} {
				if !slices.Contains(order, id) {
					t.Errorf("hybrid = %q; want every document (text-only, vector-only, without a vector)", texts(hits))
				}
			}
			if hits[0].Score <= hits[1].Score {
				t.Errorf("hybrid scores %v, %v; want the first strictly higher", hits[0].Score, hits[1].Score)
			}
			hits = search(t, s, SearchReq{Caller: "ada", Agent: "ada", Store: st, Mode: ModeText, Query: "backups"})
			if len(hits) != 1 || hits[0].DocumentID != noVec {
				t.Errorf("text backups = %q; want the document without a vector", texts(hits))
			}
			// It gets its vector later and semantic search finds it.
			var err error
			if st == StoreKnowledge {
				err = s.SetKnowledgeVector(ctx, "ada", noVec, ContentHash("database backups run at night"), []float32{-1, 0, 0})
			} else {
				err = s.SetMemoryVector(ctx, "ada", noVec, []float32{-1, 0, 0})
			}
			if err != nil {
				t.Fatalf("set vector: %v", err)
			}
			hits = search(t, s, SearchReq{Caller: "ada", Agent: "ada", Store: st, Mode: ModeSemantic, Vector: []float32{-1, 0, 0}, Limit: 1})
			if len(hits) != 1 || hits[0].DocumentID != noVec {
				t.Errorf("semantic after the vector came = %q; want the backups document", texts(hits))
			}
		})
	}
}

// memState is every chunk of an agent's memory as "session/index tier
// vector?", sorted, to compare states.
func memState(t *testing.T, s *Store, agent string) string {
	t.Helper()
	var rows []string
	err := s.agentWrite(ctxT(t), agent, func(tx pgx.Tx, n names) error {
		r, err := tx.Query(ctxT(t), `SELECT d.session_id || '/' || d.chunk_index || ' ' || d.tier || ' ' || (e.document_id IS NOT NULL)
			FROM `+n.Schema+`.memory_documents d LEFT JOIN `+n.Schema+`.memory_embeddings e ON e.document_id = d.id
			ORDER BY 1`)
		if err != nil {
			return err
		}
		rows, err = pgx.CollectRows(r, pgx.RowTo[string])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(rows, "\n")
}

// At keep+1 sessions the oldest is promoted: its summary chunks become
// long_term_summary with their vectors, its event chunks
// long_term_detail without. Running it again changes nothing.
func TestPromoteOldSessions(t *testing.T) {
	s := newStore(t, Config{}, "ada")
	ctx := ctxT(t)
	const keep = 2
	for i := 1; i <= keep+1; i++ {
		sess := fmt.Sprintf("s%d", i)
		mustAdd(t, s, "ada",
			MemoryDoc{SessionID: sess, ChunkIndex: 0, Text: "events of " + sess + " about the harbour", Vector: []float32{1, float32(i), 0}},
			MemoryDoc{SessionID: sess, ChunkIndex: 1, Kind: KindSummary, Text: "summary of " + sess + " about the harbour", Vector: []float32{0, float32(i), 1}},
		)
		if got, err := s.PromoteOldSessions(ctx, "ada", keep); err != nil || (i <= keep && len(got) != 0) {
			t.Fatalf("PromoteOldSessions at %d sessions = %q, %v; want none", i, got, err)
		}
	}
	want := `s1/0 long_term_detail false
s1/1 long_term_summary true
s2/0 mid_term true
s2/1 mid_term true
s3/0 mid_term true
s3/1 mid_term true`
	if got := memState(t, s, "ada"); got != want {
		t.Fatalf("after promotion at %d sessions:\n%s\nwant\n%s", keep+1, got, want)
	}
	if got, err := s.PromoteOldSessions(ctx, "ada", keep); err != nil || len(got) != 0 {
		t.Errorf("PromoteOldSessions again = %q, %v; want nothing to do", got, err)
	}
	if got := memState(t, s, "ada"); got != want {
		t.Errorf("after running it again:\n%s\nwant\n%s", got, want)
	}
	// The promoted session's summary is still searched, its detail only
	// by session_detail.
	hits := search(t, s, SearchReq{Caller: "ada", Agent: "ada", Store: StoreSession, Mode: ModeText, Query: "s1"})
	if texts(hits) != "summary of s1 about the harbour" {
		t.Errorf("text s1 = %q; want only its long_term_summary", texts(hits))
	}
	hits = search(t, s, SearchReq{Caller: "ada", Agent: "ada", Store: StoreSession, Mode: ModeSessionDetail, SessionID: "s1"})
	if texts(hits) != "events of s1 about the harbour" {
		t.Errorf("session_detail s1 = %q; want its events", texts(hits))
	}
	// A choird that dies half way: a promotion whose transaction fails
	// leaves nothing changed, and the next run finishes the work.
	boom := errors.New("choird died")
	err := s.agentWrite(ctx, "ada", func(tx pgx.Tx, n names) error {
		if _, err := tx.Exec(ctx, `UPDATE `+n.Schema+`.memory_documents SET tier = 'long_term_detail' WHERE session_id = 's2'`); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if got, err := s.PromoteOldSessions(ctx, "ada", 0); err != nil || strings.Join(got, ",") != "s2,s3" {
		t.Errorf("PromoteOldSessions(keep 0) = %q, %v; want s2,s3", got, err)
	}
	if got, err := s.PromoteOldSessions(ctx, "ada", 0); err != nil || len(got) != 0 {
		t.Errorf("PromoteOldSessions(keep 0) again = %q, %v; want nothing", got, err)
	}
	if got := memState(t, s, "ada"); strings.Count(got, "long_term_detail false") != 3 || strings.Count(got, "long_term_summary true") != 3 {
		t.Errorf("after promoting everything:\n%s\nwant 3 details without vectors, 3 summaries with", got)
	}
	if _, err := s.PromoteOldSessions(ctx, "ada", -1); err == nil {
		t.Error("PromoteOldSessions(keep -1) succeeded")
	}
}

func TestKnowledgeUpsertUpdateDelete(t *testing.T) {
	s := newStore(t, Config{}, "ada")
	ctx := ctxT(t)
	id, inserted, err := s.UpsertKnowledge(ctx, "ada", KnowledgeDoc{Key: "user.theme", Text: "the user likes dark mode",
		Metadata: json.RawMessage(`{"category": "preference"}`), Vector: []float32{1, 0, 0}})
	if err != nil || !inserted {
		t.Fatalf("UpsertKnowledge(new key) = %s, %v, %v; want inserted", id, inserted, err)
	}
	id2, inserted, err := s.UpsertKnowledge(ctx, "ada", KnowledgeDoc{Key: "user.theme", Text: "the user likes light mode now"})
	if err != nil || inserted || id2 != id {
		t.Fatalf("UpsertKnowledge(same key) = %s, %v, %v; want an update of %s", id2, inserted, err, id)
	}
	list, err := s.ListKnowledge(ctx, "ada", "ada", 10)
	if err != nil || len(list) != 1 {
		t.Fatalf("ListKnowledge = %+v, %v; want one document", list, err)
	}
	if d := list[0]; d.Text != "the user likes light mode now" || d.HasVector || d.ContentHash != ContentHash(d.Text) || !d.UpdatedAt.After(d.CreatedAt) {
		t.Errorf("after the update: %+v; want the new text, its hash, no (stale) vector, updated_at after created_at", d)
	}
	// A vector computed for the old text is refused; for the new one taken.
	if err := s.SetKnowledgeVector(ctx, "ada", id, ContentHash("the user likes dark mode"), []float32{1, 0, 0}); !errors.Is(err, ErrStaleVector) {
		t.Errorf("SetKnowledgeVector(old text's hash) = %v; want ErrStaleVector", err)
	}
	if err := s.SetKnowledgeVector(ctx, "ada", id, ContentHash("the user likes light mode now"), []float32{0, 1, 0}); err != nil {
		t.Errorf("SetKnowledgeVector(new text's hash) = %v", err)
	}
	// Without a key, every upsert inserts.
	for range 2 {
		if _, inserted, err := s.UpsertKnowledge(ctx, "ada", KnowledgeDoc{Text: "a note without a key"}); err != nil || !inserted {
			t.Errorf("UpsertKnowledge(no key) = %v, %v; want inserted", inserted, err)
		}
	}
	if list, _ := s.ListKnowledge(ctx, "", "ada", 10); len(list) != 3 {
		t.Errorf("ListKnowledge = %d documents; want 3", len(list))
	}
	hits := search(t, s, SearchReq{Caller: "ada", Agent: "ada", Store: StoreKnowledge, Mode: ModeSemantic, Vector: []float32{0, 1, 0}, Limit: 1})
	if len(hits) != 1 || hits[0].Key != "user.theme" || hits[0].ContentHash != ContentHash("the user likes light mode now") {
		t.Errorf("semantic knowledge = %+v; want user.theme with its content hash", hits)
	}
	if err := s.DeleteKnowledge(ctx, "ada", KnowledgeRef{Key: "user.theme"}); err != nil {
		t.Errorf("DeleteKnowledge(key) = %v", err)
	}
	if err := s.DeleteKnowledge(ctx, "ada", KnowledgeRef{Key: "user.theme"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("DeleteKnowledge(key again) = %v; want ErrNotFound", err)
	}
	list, _ = s.ListKnowledge(ctx, "ada", "ada", 10)
	if err := s.DeleteKnowledge(ctx, "ada", KnowledgeRef{ID: list[0].ID}); err != nil {
		t.Errorf("DeleteKnowledge(id) = %v", err)
	}
	if list, _ := s.ListKnowledge(ctx, "ada", "ada", 10); len(list) != 1 {
		t.Errorf("ListKnowledge after two deletes = %d documents; want 1", len(list))
	}
	hits = search(t, s, SearchReq{Caller: "ada", Agent: "ada", Store: StoreKnowledge, Mode: ModeText, Query: "mode"})
	if len(hits) != 0 {
		t.Errorf("text search for the deleted document = %q; want none", texts(hits))
	}
}

// A pool whose connection was opened before Bootstrap created the vector
// extension still binds vectors once it exists.
func TestVectorsOnAConnectionOpenedBeforeBootstrap(t *testing.T) {
	s := newStore(t, Config{})
	ctx := ctxT(t)
	if err := s.pool.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Bootstrap(ctx, []string{"ada"}, dims); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, s, "ada", chunk("s1", 0, "vectors after bootstrap", 0, 0, 1))
	hits := search(t, s, SearchReq{Agent: "ada", Store: StoreSession, Mode: ModeSemantic, Vector: []float32{0, 0, 1}})
	if len(hits) != 1 || hits[0].Score < 0.999 {
		t.Errorf("semantic = %+v; want the chunk at score 1", hits)
	}
}

// Every refusal says what was wrong, and stores nothing.
func TestMemoryRefusals(t *testing.T) {
	s := newStore(t, Config{}, "ada")
	ctx := ctxT(t)
	ok := MemoryDoc{SessionID: "s1", Text: "fine"}
	with := func(f func(*MemoryDoc)) []MemoryDoc { d := ok; f(&d); return []MemoryDoc{ok, d} }
	for _, tc := range []struct {
		name string
		docs []MemoryDoc
		want string
	}{
		{"no chunks", nil, "0 chunks"},
		{"NUL in text", with(func(d *MemoryDoc) { d.Text = "a\x00b" }), "NUL byte at offset 1"},
		{"bad UTF-8", with(func(d *MemoryDoc) { d.Text = "\xff\xfe" }), "not valid UTF-8"},
		{"empty text", with(func(d *MemoryDoc) { d.Text = "" }), "empty text"},
		{"huge text", with(func(d *MemoryDoc) { d.Text = strings.Repeat("x", MaxChunkBytes+1) }), "at most 65536"},
		{"no session", with(func(d *MemoryDoc) { d.SessionID = "" }), "session id"},
		{"bad tier", with(func(d *MemoryDoc) { d.Tier = "forever" }), `tier "forever"`},
		{"bad kind", with(func(d *MemoryDoc) { d.Kind = "gossip" }), `kind "gossip"`},
		{"negative index", with(func(d *MemoryDoc) { d.ChunkIndex = -1 }), "negative"},
		{"revision 0", with(func(d *MemoryDoc) { d.Revisions = []int64{0} }), "revisions start at 1"},
		{"reserved metadata", with(func(d *MemoryDoc) { d.Metadata = json.RawMessage(`{"content_hash": "sha256:forged"}`) }), `"content_hash" is the store's own`},
		{"metadata array", with(func(d *MemoryDoc) { d.Metadata = json.RawMessage(`[1]`) }), "not a JSON object"},
		{"NaN vector", with(func(d *MemoryDoc) { d.Vector = []float32{float32(math.NaN()), 0, 0} }), "finite"},
		{"zero vector", with(func(d *MemoryDoc) { d.Vector = []float32{0, 0, 0} }), "all zeros"},
		{"wrong dims", with(func(d *MemoryDoc) { d.Vector = []float32{1, 2} }), "2 dimensions does not fit"},
		{"vector on detail", with(func(d *MemoryDoc) { d.Tier, d.Vector = TierLongTermDetail, []float32{1, 0, 0} }), "carry no vector"},
	} {
		if _, err := s.AddMemory(ctx, "ada", tc.docs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("AddMemory(%s) = %v; want an error containing %q", tc.name, err, tc.want)
		}
	}
	if got := memState(t, s, "ada"); got != "" {
		t.Errorf("after refusals the memory holds:\n%s\nwant nothing", got)
	}
	mustAdd(t, s, "ada", chunk("s1", 0, "a chunk to search", 1, 0, 0))
	for _, tc := range []struct {
		name string
		req  SearchReq
		want string
	}{
		{"limit 101", SearchReq{Store: StoreSession, Mode: ModeText, Query: "x", Limit: 101}, "limit 101: want 1 to 100"},
		{"limit -1", SearchReq{Store: StoreSession, Mode: ModeText, Query: "x", Limit: -1}, "limit -1"},
		{"ef_search", SearchReq{Store: StoreSession, Mode: ModeText, Query: "x", EfSearch: 5000}, "ef_search 5000"},
		{"bad store", SearchReq{Store: "working", Mode: ModeText, Query: "x"}, `store "working"`},
		{"bad mode", SearchReq{Store: StoreSession, Mode: "keyword", Query: "x"}, `mode "keyword"`},
		{"text without query", SearchReq{Store: StoreSession, Mode: ModeText}, "needs a query"},
		{"semantic without vector", SearchReq{Store: StoreSession, Mode: ModeSemantic, Query: "x"}, "needs a query vector"},
		{"hybrid without either", SearchReq{Store: StoreSession, Mode: ModeHybrid}, "a query, a vector or both"},
		{"detail without session", SearchReq{Store: StoreSession, Mode: ModeSessionDetail}, "needs a session_id"},
		{"detail of knowledge", SearchReq{Store: StoreKnowledge, Mode: ModeSessionDetail, SessionID: "s1"}, "store session only"},
		{"session id on text", SearchReq{Store: StoreSession, Mode: ModeText, Query: "x", SessionID: "s1"}, "session_detail only"},
		{"query too long", SearchReq{Store: StoreSession, Mode: ModeText, Query: strings.Repeat("q", MaxQueryBytes+1)}, "at most 4096"},
		{"wrong dims query", SearchReq{Store: StoreSession, Mode: ModeSemantic, Vector: []float32{1, 2, 3, 4}}, "4 dimensions does not fit"},
		{"bad caller", SearchReq{Caller: "Ada!", Store: StoreSession, Mode: ModeText, Query: "x"}, "caller"},
	} {
		tc.req.Agent = "ada"
		if _, err := s.SearchMemory(ctx, tc.req); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SearchMemory(%s) = %v; want an error containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := s.SearchMemory(ctx, SearchReq{Agent: "nobody", Store: StoreSession, Mode: ModeText, Query: "x"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("SearchMemory(agent not bootstrapped) = %v; want ErrNotFound", err)
	}
	// Punctuation only is no words: no hits, not an error.
	if hits, err := s.SearchMemory(ctx, SearchReq{Agent: "ada", Store: StoreSession, Mode: ModeText, Query: `"' & | ! -`}); err != nil || len(hits) != 0 {
		t.Errorf("SearchMemory(punctuation) = %v, %v; want no hits", hits, err)
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"vector for a non-UUID", s.SetMemoryVector(ctx, "ada", "1; DROP TABLE x", []float32{1, 0, 0}), "not a UUID"},
		{"vector for a missing chunk", s.SetMemoryVector(ctx, "ada", "00000000-0000-0000-0000-000000000000", []float32{1, 0, 0}), "not found"},
		{"delete by id and key", s.DeleteKnowledge(ctx, "ada", KnowledgeRef{ID: "x", Key: "y"}), "not both or neither"},
		{"delete by nothing", s.DeleteKnowledge(ctx, "ada", KnowledgeRef{}), "not both or neither"},
		{"knowledge NUL key", upsertErr(ctx, s, "ada", KnowledgeDoc{Key: "a\x00", Text: "t"}), "NUL byte"},
		{"knowledge huge key", upsertErr(ctx, s, "ada", KnowledgeDoc{Key: strings.Repeat("k", MaxKeyLen+1), Text: "t"}), "at most 512"},
		{"list limit 0", second(s.ListKnowledge(ctx, "ada", "ada", 0)), "limit 0"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error containing %q", tc.name, tc.err, tc.want)
		}
	}
	ids := mustAdd(t, s, "ada", MemoryDoc{SessionID: "s0", Tier: TierLongTermDetail, Text: "detail"})
	if err := s.SetMemoryVector(ctx, "ada", ids[0], []float32{1, 0, 0}); err == nil || !strings.Contains(err.Error(), "carries no vector") {
		t.Errorf("SetMemoryVector(long_term_detail) = %v; want refused", err)
	}
}

// upsertErr is UpsertKnowledge's error.
func upsertErr(ctx context.Context, s *Store, agent string, d KnowledgeDoc) error {
	_, _, err := s.UpsertKnowledge(ctx, agent, d)
	return err
}

// Reciprocal rank fusion with k = 60: a document third in both lists
// (2/63) outranks one first in only one (1/61); equal scores go to the
// better best rank, then to the id.
func TestFuse(t *testing.T) {
	h := func(ids ...string) []Hit {
		var out []Hit
		for _, id := range ids {
			out = append(out, Hit{DocumentID: id, Score: 99})
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		lists [][]Hit
		limit int
		want  string
	}{
		{"both beats one", [][]Hit{h("a", "x", "both"), h("b", "y", "both")}, 10, "both a b x y"},
		{"ties by best rank then id", [][]Hit{h("p", "q"), h("r", "s")}, 10, "p r q s"},
		{"one list keeps its order", [][]Hit{h("c", "a", "b")}, 10, "c a b"},
		{"limit", [][]Hit{h("a", "b", "c"), h("c", "b", "a")}, 2, "a c"},
		{"nothing", nil, 10, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fuse(tc.lists, tc.limit)
			var ids []string
			for _, g := range got {
				ids = append(ids, g.DocumentID)
			}
			if strings.Join(ids, " ") != tc.want {
				t.Errorf("fuse(%s) = %q; want %q", tc.name, strings.Join(ids, " "), tc.want)
			}
			if len(got) > 0 && tc.name == "both beats one" && got[0].Score != 2.0/63 {
				t.Errorf("fuse score of a document third in two lists = %v; want 2/63", got[0].Score)
			}
		})
	}
}
