// Package bravetest is a pretend Brave Search API for tests, like httptest
// but speaking GET <URL>/web/search with X-Subscription-Token, as Brave's
// API reference describes it.
//
// A test scripts the results (SetResults), points the client or the agent's
// config at URL, and reads what was asked (Requests). It decodes the query
// string itself and never imports the client's structs. It answers as Brave
// does where a client can tell: 422 SUBSCRIPTION_TOKEN_INVALID for a wrong
// token, 422 for a missing or too long q or an out-of-range count or
// offset, X-RateLimit-* headers on every answer. FailNext scripts faults:
// 401, 429 with Retry-After, 5xx, a malformed body, a body that never ends
// and one that stalls.
package bravetest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"choir/testkit/apitest"
)

// Result is one scripted web result.
type Result struct {
	Title, URL, Description, Age string
}

// Request is one request as the fake received it.
type Request struct {
	Path  string
	Token string // X-Subscription-Token
	Query url.Values
}

// Server is a running fake; safe for concurrent use.
type Server struct {
	t     testing.TB
	srv   *httptest.Server
	done  chan struct{}
	token string

	mu       sync.Mutex
	results  []Result
	requests []Request
	faults   []Fault
}

// New starts a fake on 127.0.0.1 accepting token.
func New(t testing.TB, token string) *Server { return NewOn(t, "127.0.0.1:0", token) }

// NewOn starts a fake on addr (the bridge gateway for containers).
func NewOn(t testing.TB, addr, token string) *Server {
	t.Helper()
	s := &Server{t: t, token: token}
	s.srv, s.done = apitest.Start(t, addr, s)
	return s
}

// URL is the endpoint to configure (the API base, like
// https://api.search.brave.com/res/v1).
func (s *Server) URL() string { return s.srv.URL + "/res/v1" }

// SetResults sets the web results of every later search.
func (s *Server) SetResults(rs ...Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.results = rs
}

// Requests returns every request received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := Request{Path: r.URL.Path, Token: r.Header.Get("X-Subscription-Token"), Query: r.URL.Query()}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	var fault *Fault
	if len(s.faults) > 0 {
		fault = &s.faults[0]
		s.faults = s.faults[1:]
	}
	results := append([]Result(nil), s.results...)
	s.mu.Unlock()

	if r.Method != http.MethodGet || r.URL.Path != "/res/v1/web/search" {
		writeError(w, http.StatusNotFound, "RESOURCE_NOT_FOUND", "Resource not found.")
		return
	}
	if req.Token == "" {
		writeError(w, http.StatusUnauthorized, "SUBSCRIPTION_TOKEN_MISSING", "The request requires a subscription token.")
		return
	}
	if req.Token != s.token {
		writeError(w, http.StatusUnprocessableEntity, "SUBSCRIPTION_TOKEN_INVALID", "The provided subscription token is invalid.")
		return
	}
	if fault != nil {
		fault.serve(w, r, s.done)
		return
	}
	q := req.Query.Get("q")
	if strings.TrimSpace(q) == "" || utf8.RuneCountInString(q) > 400 {
		writeError(w, http.StatusUnprocessableEntity, "VALIDATION", "Unable to validate request parameter(s): q")
		return
	}
	count, offset := 20, 0
	for name, p := range map[string]*int{"count": &count, "offset": &offset} {
		if v := req.Query.Get(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || name == "count" && (n < 1 || n > 20) || name == "offset" && n > 9 {
				writeError(w, http.StatusUnprocessableEntity, "VALIDATION", "Unable to validate request parameter(s): "+name)
				return
			}
			*p = n
		}
	}
	start := min(offset*count, len(results))
	page := results[start:min(start+count, len(results))]
	var items []map[string]any
	for _, res := range page {
		item := map[string]any{"type": "search_result", "title": res.Title, "url": res.URL, "description": res.Description, "language": "en", "family_friendly": true}
		if res.Age != "" {
			item["age"] = res.Age
		}
		items = append(items, item)
	}
	answer := map[string]any{
		"type":  "search",
		"query": map[string]any{"original": q, "more_results_available": start+count < len(results)},
	}
	if len(items) > 0 {
		answer["web"] = map[string]any{"type": "search", "family_friendly": true, "results": items}
	}
	rateHeaders(w, "1, 1999")
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(answer)
}

func rateHeaders(w http.ResponseWriter, remaining string) {
	w.Header().Set("X-RateLimit-Limit", "1, 2000")
	w.Header().Set("X-RateLimit-Policy", "1;w=1, 2000;w=2592000")
	w.Header().Set("X-RateLimit-Remaining", remaining)
	w.Header().Set("X-RateLimit-Reset", "1, 1419704")
}

// writeError answers Brave's error object.
func writeError(w http.ResponseWriter, status int, code, detail string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{
		"type": "ErrorResponse",
		"error": map[string]any{
			"id": fmt.Sprintf("e-%d", status), "status": status, "code": code, "detail": detail,
			"meta": map[string]any{"component": "api"},
		},
		"time": 1700000000,
	})
}
