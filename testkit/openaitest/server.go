// Package openaitest is a scripted pretend OpenAI-compatible model server for
// tests, like httptest but speaking POST /v1/chat/completions and
// POST /v1/embeddings.
//
// A test queues the exchanges it expects with Expect, in order; each Step
// checks what was sent and answers with text, tool calls, an error, a 429, a
// malformed body, a content filter stop, or nothing until the request ends.
// The server decodes the raw JSON itself, never the client's structs, so a
// wrong struct tag cannot hide on both sides. It also enforces the wire rules
// every real provider enforces: each tool name matches ^[a-zA-Z0-9_-]{1,64}$
// and each tool message answers a tool call made earlier in the same request.
// A request that breaks them fails the test and gets the 400 a provider would
// send. A request no step expects fails the test when it arrives (and gets
// a 404); steps left unconsumed fail it at cleanup.
package openaitest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	t    testing.TB
	srv  *httptest.Server
	done chan struct{} // closed at cleanup: releases hanging handlers

	mu       sync.Mutex
	steps    []*Step // queued, not yet consumed
	queued   int     // steps ever queued, to number them
	requests []*Request

	cacheKey   func(*Request) string // PrefixCache; nil: off
	lastPrompt map[string][]byte     // per key, the previous prompt (cache.go)
}

// New starts a fake on 127.0.0.1 and stops it when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	return NewOn(t, "127.0.0.1:0")
}

// NewOn starts a fake listening on addr, such as "172.17.0.1:0" for the
// Docker bridge gateway so that containers reach it. It refuses an
// unspecified host (0.0.0.0, ::): a test server is never exposed on every
// interface.
func NewOn(t testing.TB, addr string) *Server {
	t.Helper()
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("openaitest: listen address %q: %v", addr, err)
		return nil
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		t.Fatalf("openaitest: refusing to listen on %q, every interface; name one address, e.g. 127.0.0.1:0 or the bridge gateway", addr)
		return nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("openaitest: listen on %s: %v", addr, err)
		return nil
	}
	s := &Server{t: t, done: make(chan struct{})}
	s.srv = &httptest.Server{Listener: l, Config: &http.Server{Handler: s}}
	s.srv.Start()
	t.Cleanup(s.close)
	return s
}

// URL is the endpoint to configure a client with; it ends in /v1.
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Expect queues steps, to be consumed in order by the requests that follow.
func (s *Server) Expect(steps ...*Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range steps {
		s.queued++
		st.number = s.queued
		s.steps = append(s.steps, st)
	}
}

// Requests returns every request received so far, expected or not, in order.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

// Pending reports how many queued steps are not consumed yet.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.steps)
}

func (s *Server) close() {
	close(s.done)
	s.srv.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.steps {
		s.t.Errorf("openaitest: %s was never requested", st)
	}
}

// maxRequestBytes bounds a request body; far beyond any test's.
const maxRequestBytes = 32 << 20

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes))
	if err != nil {
		s.t.Errorf("openaitest: reading %s %s: %v", r.Method, r.URL.Path, err)
		return
	}
	req := &Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	_ = json.Unmarshal(body, &req.JSON) // checked by the wire rules

	s.mu.Lock()
	s.requests = append(s.requests, req)
	req.Number = len(s.requests)
	s.cachePrompt(req)
	var st *Step
	if len(s.steps) > 0 && s.steps[0].matches(req) {
		st = s.steps[0]
		s.steps = s.steps[1:]
	}
	next := "no step"
	if len(s.steps) > 0 && st == nil {
		next = s.steps[0].String()
	}
	s.mu.Unlock()

	t := checkTB{s.t}
	if st == nil {
		t.Errorf("openaitest: unexpected request %d: %s %s (next expected: %s)", req.Number, req.Method, req.Path, next)
		writeError(w, http.StatusNotFound, "invalid_request_error", "unexpected_request", fmt.Sprintf("openaitest: no step expects %s %s", req.Method, req.Path))
		return
	}
	if problems := wireProblems(req); len(problems) > 0 {
		for _, p := range problems {
			t.Errorf("openaitest: %s, request %d: %s", st, req.Number, p)
		}
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", strings.Join(problems, "; "))
		return
	}
	for _, check := range st.checks {
		check(t, req)
	}
	st.reply(w, r, req, s.done)
}

// checkTB is the testing.TB handed to checks, which run on the server's
// goroutine: there a Fatal would stop the handler, not the test, and hang
// the client, so Fatal and FailNow only mark the failure.
type checkTB struct{ testing.TB }

func (c checkTB) Fatal(args ...any)                 { c.TB.Helper(); c.TB.Error(args...) }
func (c checkTB) Fatalf(format string, args ...any) { c.TB.Helper(); c.TB.Errorf(format, args...) }
func (c checkTB) FailNow()                          { c.TB.Fail() }
