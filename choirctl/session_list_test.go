package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"choir/internal/config"
)

// `session list` shows each session's kind: interactive, or a headless
// run's session with its run id; a choird that says no kind (older) is
// interactive.
func TestSessionListShowsTheKind(t *testing.T) {
	home := config.Home{Dir: t.TempDir()}
	os.MkdirAll(filepath.Dir(home.AdminSocket()), 0o700)
	l, err := net.Listen("unix", home.AdminSocket())
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/sessions", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`[{"session_id":"s-2","agent_id":"a1","status":"stopped","started_at":"2026-01-02T03:04:05Z","kind":"run","run_id":"r-0123456789ab"},
 {"session_id":"s-1","agent_id":"a1","status":"running","started_at":"2026-01-02T03:00:00Z","kind":"interactive"},
 {"session_id":"s-0","agent_id":"a1","status":"stopped","started_at":"2026-01-01T03:00:00Z"}]`))
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	out := &bytes.Buffer{}
	e := &env{home: home, stdin: strings.NewReader(""), stdout: out, stderr: &bytes.Buffer{}}
	if err := sessionList(context.Background(), e, nil); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "KIND") {
		t.Fatalf("session list = %q; want a header with KIND and three sessions", out)
	}
	for i, want := range []string{"run r-0123456789ab", "interactive", "interactive"} {
		if f := strings.Fields(lines[i+1]); len(f) < 3 || !strings.Contains(lines[i+1], want) {
			t.Errorf("session list line %d = %q; want kind %q", i+1, lines[i+1], want)
		}
	}
}
