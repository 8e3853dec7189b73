package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"choir/internal/config"
)

// fakeSessionAdmin serves GET /v1/sessions/{id}: body for s-1, choird's
// 404 for any other.
func fakeSessionAdmin(t *testing.T, body string) *env {
	t.Helper()
	home := config.Home{Dir: t.TempDir()}
	os.MkdirAll(filepath.Dir(home.AdminSocket()), 0o700)
	l, err := net.Listen("unix", home.AdminSocket())
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/sessions/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.PathValue("id") != "s-1" {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":{"code":"not_found","message":"no session \"` + r.PathValue("id") + `\" (see choirctl session list)"}}`))
			return
		}
		w.Write([]byte(body))
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return &env{home: home, stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
}

const stoppedSession = `{"session_id":"s-1","agent_id":"agent-1","status":"stopped","started_at":"2026-01-02T03:04:05Z","ended_at":"2026-01-02T04:04:05Z",
 "end_reason":"shutdown requested: agent stop",
 "summary":{"title":"Notes tidied","summary":"Renamed a.txt and merged the drafts.","decisions":["Keep notes in notes/"],"open_items":["Review b.txt"],"facts":[],"extra":1}}`

// `session show` prints why the session ended and its summary: title, text,
// decisions and open items (an empty list is left out, a member it does not
// know is shown as JSON); --json is choird's answer.
func TestSessionShowPrintsTheSummary(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e := fakeSessionAdmin(t, stoppedSession)
	if err := sessionShow(ctx, e, []string{"s-1"}); err != nil {
		t.Fatalf("session show = %v", err)
	}
	out := e.stdout.(*bytes.Buffer).String()
	for _, want := range []string{
		"session     s-1", "status      stopped", "end reason  shutdown requested: agent stop",
		"Summary: Notes tidied\n\nRenamed a.txt and merged the drafts.\n",
		"Decisions:\n  - Keep notes in notes/\n", "Open items:\n  - Review b.txt\n", "extra: 1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("session show output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Facts:") {
		t.Errorf("session show printed an empty facts list:\n%s", out)
	}

	e = fakeSessionAdmin(t, stoppedSession)
	if err := sessionShow(ctx, e, []string{"--json", "s-1"}); err != nil {
		t.Fatalf("session show --json = %v", err)
	}
	var got struct {
		EndReason string `json:"end_reason"`
		Summary   struct {
			Title string `json:"title"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(e.stdout.(*bytes.Buffer).Bytes(), &got); err != nil || got.Summary.Title != "Notes tidied" || got.EndReason == "" {
		t.Errorf("session show --json = %s (%v); want the end reason and the summary", e.stdout, err)
	}
}

// A session without a summary says how one comes about; an unknown
// session is choird's 404, said as it is.
func TestSessionShowWithoutASummary(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e := fakeSessionAdmin(t, `{"session_id":"s-1","agent_id":"agent-1","status":"crashed","started_at":"2026-01-02T03:04:05Z"}`)
	if err := sessionShow(ctx, e, []string{"s-1"}); err != nil {
		t.Fatalf("session show = %v", err)
	}
	if out := e.stdout.(*bytes.Buffer).String(); !strings.Contains(out, "no session summary (one is written at a graceful stop") {
		t.Errorf("session show output = %q; want it to say there is no summary and why", out)
	}
	e = fakeSessionAdmin(t, "{}")
	err := sessionShow(ctx, e, []string{"s-404"})
	if err == nil || !strings.Contains(err.Error(), `no session "s-404"`) {
		t.Errorf("session show s-404 = %v; want choird's not found", err)
	}
}
