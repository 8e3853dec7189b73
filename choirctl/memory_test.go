package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"choir/internal/config"
)

// memoryAdmin is choird's admin socket for `choirctl memory`: it records
// each request as "METHOD path body" (the body re-encoded from raw JSON,
// members sorted) and answers with what the test scripts per path.
type memoryAdmin struct {
	home config.Home
	mu   sync.Mutex
	got  []string
}

func newMemoryAdmin(t *testing.T, answers map[string]string) *memoryAdmin {
	t.Helper()
	a := &memoryAdmin{home: config.Home{Dir: t.TempDir()}}
	os.MkdirAll(filepath.Dir(a.home.AdminSocket()), 0o700)
	l, err := net.Listen("unix", a.home.AdminSocket())
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec := r.Method + " " + r.URL.RequestURI()
		if len(body) > 0 {
			var v map[string]any
			if err := json.Unmarshal(body, &v); err != nil {
				t.Errorf("%s: body %q is not a JSON object", rec, body)
			}
			b, _ := json.Marshal(v)
			rec += " " + string(b)
		}
		a.mu.Lock()
		a.got = append(a.got, rec)
		a.mu.Unlock()
		ans, ok := answers[r.URL.Path]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			ans = `{"error":{"code":"not_found","message":"no such endpoint"}}`
		} else if strings.Contains(ans, `"error":{`) {
			w.WriteHeader(http.StatusForbidden)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, ans)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return a
}

func (a *memoryAdmin) requests() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.got...)
}

const (
	searchAnswer = `{"status":"success","summary":"1 found in agent a's session memory (hybrid)","agent":"a","store":"session","mode":"hybrid",` +
		`"hits":[{"agent":"a","store":"session","document_id":"11111111-2222-3333-4444-555555555555","tier":"mid_term","session_id":"s-7","chunk_index":2,` +
		`"revisions":[5,9],"content_hash":"sha256:abc","score":0.0327,"text":"the user flies to Lisbon on Friday"}]}`
	listAnswer = `{"status":"success","summary":"1 knowledge documents of agent a, newest first","agent":"a","store":"knowledge",` +
		`"hits":[{"agent":"a","store":"knowledge","document_id":"d-1","key":"user.tz","content_hash":"sha256:def","score":0,"text":"Europe/Lisbon","has_vector":true}]}`
	upsertAnswer = `{"status":"success","summary":"stored a new knowledge document with key \"user.tz\" (id d-1)","agent":"a","op":"insert","document_id":"d-1","created":true}`
)

// Each subcommand sends the tool's input to its admin endpoint and prints
// choird's summary and hits with their provenance (or the answer as JSON).
func TestMemoryCommands(t *testing.T) {
	a := newMemoryAdmin(t, map[string]string{
		"/v1/memory/a/search": searchAnswer, "/v1/memory/a/knowledge": listAnswer, "/v1/memory/a/upsert": upsertAnswer,
	})
	for _, c := range []struct {
		args []string
		req  string
		says []string
	}{
		{[]string{"search", "--agent", "a", "--store", "session", "flights", "to", "Lisbon"},
			`POST /v1/memory/a/search {"query":"flights to Lisbon","store":"session"}`,
			[]string{"1 found", "s-7 mid_term #2 revs [5 9]", "the user flies to Lisbon", "0.033"}},
		{[]string{"search", "--agent", "a", "--store", "session", "--mode", "session_detail", "--session", "s-7", "--limit", "5"},
			`POST /v1/memory/a/search {"limit":5,"mode":"session_detail","session_id":"s-7","store":"session"}`, nil},
		{[]string{"list", "--agent", "a"}, `GET /v1/memory/a/knowledge?limit=20`, []string{"key user.tz", "Europe/Lisbon"}},
		{[]string{"add", "--agent", "a", "--key", "user.tz", "--metadata", `{"topic":"time"}`, "Europe/Lisbon"},
			`POST /v1/memory/a/upsert {"key":"user.tz","metadata":{"topic":"time"},"op":"insert","text":"Europe/Lisbon"}`, []string{"stored a new knowledge document"}},
		{[]string{"delete", "--agent", "a", "--id", "d-1"}, `POST /v1/memory/a/upsert {"id":"d-1","op":"delete"}`, nil},
		{[]string{"delete", "--agent", "a", "--key", "user.tz", "--json"}, `POST /v1/memory/a/upsert {"key":"user.tz","op":"delete"}`, []string{`"document_id": "d-1"`}},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			n := len(a.requests())
			out, stderr, code := ctlRun(t, a.home.Dir, "", append([]string{"memory"}, c.args...)...)
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			if got := a.requests(); len(got) != n+1 || got[n] != c.req {
				t.Errorf("choird got %q; want %q", got[n:], c.req)
			}
			for _, s := range c.says {
				if !strings.Contains(out, s) {
					t.Errorf("output %q; want it to say %q", out, s)
				}
			}
		})
	}
}

// A refusal from choird is printed with its reason and exits 1; a command
// line that cannot be right exits 2 before anything is sent.
func TestMemoryCommandErrors(t *testing.T) {
	a := newMemoryAdmin(t, map[string]string{
		"/v1/memory/a/upsert": `{"error":{"code":"forbidden","message":"choir.memory.upsert: /target_agent: an agent writes only its own knowledge"}}`,
	})
	if _, stderr, code := ctlRun(t, a.home.Dir, "", "memory", "add", "--agent", "a", "x"); code != 1 || !strings.Contains(stderr, "only its own knowledge") {
		t.Errorf("refused add = exit %d, stderr %q; want 1 with choird's reason", code, stderr)
	}
	n := len(a.requests())
	for _, args := range [][]string{
		{"list"},
		{"list", "--agent", "a", "--store", "session"},
		{"list", "--agent", "a", "extra"},
		{"search", "--agent", "a"},
		{"search", "lisbon"},
		{"add", "--agent", "a"},
		{"add", "--agent", "a", "--metadata", "[1]", "x"},
		{"add", "--agent", "a", "--metadata", "{", "x"},
		{"delete", "--agent", "a"},
		{"delete", "--agent", "a", "--key", "k", "--id", "i"},
		{"delete", "--agent", "a", "--bogus"},
	} {
		if _, stderr, code := ctlRun(t, a.home.Dir, "", append([]string{"memory"}, args...)...); code != 2 || stderr == "" {
			t.Errorf("choirctl memory %s = exit %d, stderr %q; want 2 with a usage message", strings.Join(args, " "), code, stderr)
		}
	}
	if got := a.requests(); len(got) != n {
		t.Errorf("usage errors reached choird: %q", got[n:])
	}
}

// The memory group is in the help and in the completion script.
func TestMemoryInHelpAndCompletion(t *testing.T) {
	out := assertHelp(t, "memory", "--help")
	for _, s := range []string{"list", "search", "add", "delete"} {
		if !strings.Contains(out, "  "+s) {
			t.Errorf("choirctl memory --help = %q; want it to list %s", out, s)
		}
	}
	comp, _, code := ctlRun(t, t.TempDir(), "", "completion", "bash")
	if code != 0 || !strings.Contains(comp, "memory") || !strings.Contains(comp, "search") {
		t.Errorf("completion bash (exit %d) does not offer memory and its subcommands", code)
	}
}
