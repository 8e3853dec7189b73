package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"choir/choird/control"
	"choir/choird/headless"
	"choir/choird/headless/kb"
	"choir/choird/headless/objects"
	"choir/choird/store"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/embed"
	"choir/internal/logs"
	"choir/testkit/pgtest"
)

// kbAdmin serves choird's real admin handler with the knowledge base of a
// test Postgres (a namespace of its own) on home's admin socket, after a
// run of kb-1 noted a conjecture and an observation and a verifier
// attested it, and the index caught up. It returns the KB.
func kbAdmin(t *testing.T, home config.Home) *kb.KB {
	t.Helper()
	ctx := context.Background()
	db := pgtest.DB(t)
	st, err := store.Open(ctx, store.Config{DSN: db.DSN, Namespace: db.Namespace})
	if err != nil {
		t.Fatalf("store.Open(%s) = %v", db.Backend, err)
	}
	t.Cleanup(func() { st.Drop(context.Background()); st.Close() })
	if err := st.Bootstrap(ctx, []string{"kb-1"}, 64); err != nil {
		t.Fatal(err)
	}
	objs, err := objects.Open(filepath.Join(home.Dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := kb.New(kb.Config{Store: st, Objects: objs, Embedder: embed.Hashing{Dims: 64}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close(context.Background()) })

	d := headless.New(st.Headless())
	it, err := d.AddWorkItem(ctx, headless.NewWorkItem{Agent: "kb-1", Description: "speed up the loader", Acceptance: []string{"bench"}, Risk: headless.RiskLow})
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
	for _, n := range []headless.Note{
		{Type: headless.NoteConjecture, Claim: "prefetching halves the loader's cold start", Test: "bench cold start with and without prefetch",
			Edge: "datasets larger than memory", DeltaO: "ship the prefetch", Scope: "the loader"},
		{Type: headless.NoteObservation, Text: "the loader reads every file twice"},
	} {
		if _, _, err := d.AddNote(ctx, r.ID, n, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := d.Attest(ctx, r.ID, headless.Attestation{Verifier: "bench", Passed: true, Summary: "cold start 1.9 s → 0.8 s"}, ""); err != nil {
		t.Fatal(err)
	}
	if n, err := k.CatchUp(ctx); err != nil || n != 3 {
		t.Fatalf("CatchUp = %d, %v; want 3 objects", n, err)
	}
	waitFor(t, "the objects' vectors stored", func() bool {
		miss, err := st.KBWithoutVectors(ctx, embed.HashingModel, 10)
		return err == nil && len(miss) == 0
	})

	lm, err := logs.NewManager(home.LogsDir(), 1000, slog.LevelInfo, logs.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lm.Close() })
	p := control.New(home, lm)
	p.SetKnowledgeBase(kb.Operator{KB: k})
	os.MkdirAll(filepath.Dir(home.AdminSocket()), 0o700)
	l, err := net.Listen("unix", home.AdminSocket())
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p.AdminHandler()}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return k
}

// `choirctl kb search` prints pointers (score, sha256 cite, kind,
// snippet) of the objects a run's receipts named, best first, filtered by
// agent and kind; --json gives choird's answer; a pointer's cite names an
// object that is in the object store; bad input is refused with what to
// do, and hostile queries are words.
func TestKBSearchThroughChoirctl(t *testing.T) {
	home := config.Home{Dir: t.TempDir()}
	kbAdmin(t, home)
	dir := home.Dir

	out, stderr, code := ctlRun(t, dir, "", "kb", "search", "prefetch", "cold", "start", "--agent", "kb-1")
	if code != 0 {
		t.Fatalf("kb search = %d %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "SCORE") || !strings.Contains(lines[1], "conjecture") ||
		!strings.Contains(lines[1], "conjecture: claim: prefetching halves") || !strings.Contains(lines[1], "sha256:") {
		t.Fatalf("kb search output:\n%s\nwant a table with the conjecture first", out)
	}

	out, _, code = ctlRun(t, dir, "", "kb", "search", "--json", "--kind", "attestation", "cold start")
	var ans ctl.KBAnswer
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if code != 0 || dec.Decode(&ans) != nil || len(ans.Pointers) != 1 || ans.Pointers[0].Kind != "attestation" || ans.Mode != "hybrid" {
		t.Fatalf("kb search --json --kind attestation = %d %s; want one attestation pointer, hybrid", code, out)
	}
	p := ans.Pointers[0]
	objs, _ := objects.Open(filepath.Join(dir, "objects"))
	body, err := objs.Get(p.Object)
	if err != nil || !strings.Contains(string(body), `"verifier":"bench"`) || strings.Contains(p.Snippet, `"verifier"`) {
		t.Fatalf("pointer %+v: object %s, %v; want the attestation's body in the store and a typed snippet, not the JSON", p, body, err)
	}

	if out, _, code := ctlRun(t, dir, "", "kb", "search", "--agent", "kb-2", "loader"); code != 0 || !strings.Contains(out, "nothing found") {
		t.Errorf("kb search --agent kb-2 = %d %q; want nothing found", code, out)
	}
	for _, q := range []string{"'; DROP TABLE kb_objects; --", "%_%", `\`, strings.Repeat("loader ", 500)} {
		if _, stderr, code := ctlRun(t, dir, "", "kb", "search", q); code != 0 {
			t.Errorf("kb search %.40q = %d %q; want it answered", q, code, stderr)
		}
	}
	refused := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"kb", "search"}, 2, "give a query"},
		{[]string{"kb", "search", "x", "--limit", "500"}, 2, "--limit 500"},
		{[]string{"kb", "search", "x", "--kind", "passwords"}, 1, `kind "passwords" is unknown`},
		{[]string{"kb", "search", "x", "--agent", "../etc"}, 1, "is not an agent id"},
		{[]string{"kb", "search", strings.Repeat("y", 5000)}, 1, "at most 4096"},
	}
	for _, c := range refused {
		_, stderr, code := ctlRun(t, dir, "", c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("choirctl %.60q = %d %q; want %d saying %q", c.args, code, stderr, c.code, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "objects")); err != nil {
		t.Fatal(err)
	}
}
