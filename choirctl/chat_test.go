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

// fakeChoirdAdmin answers `choirctl chat`: a message is taken as m1, and
// the outbox streams lines, raw JSON as choird writes them.
func fakeChoirdAdmin(t *testing.T, outbox ...string) *env {
	t.Helper()
	home := config.Home{Dir: t.TempDir()}
	os.MkdirAll(filepath.Dir(home.AdminSocket()), 0o700)
	l, err := net.Listen("unix", home.AdminSocket())
	if err != nil {
		t.Fatal(err)
	}
	sent := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/agents/agent-1/messages", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"id": "m1"})
		close(sent)
	})
	mux.HandleFunc("GET /v1/agents/agent-1/outbox", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-sent:
		case <-r.Context().Done():
			return
		}
		for _, line := range outbox {
			w.Write([]byte(line + "\n"))
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done() // a crash ends choird's stream; this one stays open to prove the line is enough
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return &env{home: home, stdin: strings.NewReader("hello\n"), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
}

// An agent that crashes mid-turn ends `choirctl chat --once` at once with
// an error saying what happened and how to start it again; the crash
// notice the DM got is printed first.
func TestChatOnceEndsWhenTheAgentCrashes(t *testing.T) {
	e := fakeChoirdAdmin(t,
		`{"kind":"error","text":"agent-1 stopped unexpectedly (container exited unexpectedly with code 137): its session ended"}`,
		`{"kind":"","session_ended":{"session_id":"s-1","status":"crashed","reason":"container exited unexpectedly with code 137"}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := runChat(ctx, e, []string{"agent-1", "--once", "--timeout", "10m"})
	if err == nil || ctx.Err() != nil {
		t.Fatalf("chat --once = %v (context %v); want an error at once", err, ctx.Err())
	}
	for _, part := range []string{"agent-1 crashed before it replied", "code 137", "choirctl agent start agent-1"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error = %q; want it to say %q", err, part)
		}
	}
	out := e.stdout.(*bytes.Buffer).String()
	if !strings.Contains(out, "[error] agent-1 stopped unexpectedly") || !strings.Contains(out, "[session] agent-1's session s-1 ended: crashed") {
		t.Errorf("output = %q; want the notice and the end", out)
	}
}

// The interactive chat ends too, with the same error, when the agent
// crashes while a message waits for its answer.
func TestInteractiveChatEndsWhenTheAgentCrashes(t *testing.T) {
	e := fakeChoirdAdmin(t,
		`{"kind":"","session_ended":{"session_id":"s-1","status":"crashed","reason":"no heartbeat for 10s"}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := runChat(ctx, e, []string{"agent-1"})
	if err == nil || !strings.Contains(err.Error(), "agent-1 crashed") || !strings.Contains(err.Error(), "no heartbeat for 10s") {
		t.Fatalf("chat = %v; want the crash", err)
	}
}
