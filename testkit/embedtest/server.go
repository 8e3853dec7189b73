// Package embedtest is a pretend OpenAI-compatible embeddings server for
// tests and benchmarks, like httptest but speaking POST /v1/embeddings.
//
// Unlike openaitest's scripted steps, it answers any number of requests on
// its own: each input gets the vector embed.Hashing gives it, in the size the
// request's "dimensions" asks for (Dims when it names none), so a test can
// embed thousands of texts without queueing an answer for each. Faults are
// scripted with Fail and consumed in order by the next requests: a 429 with
// Retry-After, a 500, a malformed body, a vector too few, vectors of the
// wrong size, vectors out of order, an answer held back until released or
// never given.
//
// The server decodes the raw JSON itself and enforces the API's wire rules
// (POST, model a non-empty string, input a string or an array of 1 to 2048
// non-empty strings, dimensions a positive integer, encoding_format "float"
// or "base64"); a request breaking one fails the test and gets the 400 a
// provider would send. With RequireKey it answers 401, echoing the key it was
// sent as OpenAI does in part, to a request without "Bearer <key>". It
// records every request.
package embedtest

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/internal/embed"
)

// DefaultDims is the vector size when a request names no dimensions:
// text-embedding-3-small's.
const DefaultDims = 1536

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	t    testing.TB
	srv  *httptest.Server
	done chan struct{} // closed at cleanup: releases held answers

	mu       sync.Mutex
	dims     int
	key      string
	latency  time.Duration
	faults   []Fault
	requests []*Request
}

// New starts a fake on 127.0.0.1 and stops it when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, done: make(chan struct{}), dims: DefaultDims}
	s.srv = httptest.NewServer(s)
	t.Cleanup(s.close)
	return s
}

// URL is the endpoint to configure a client with; it ends in /v1.
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// SetDims sets the vector size answered when a request names no dimensions.
func (s *Server) SetDims(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dims = n
}

// RequireKey makes every request need "Authorization: Bearer <key>".
func (s *Server) RequireKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = key
}

// SetLatency delays every answer by d, as a distant provider would; for
// benchmarks only, never to order events in a test.
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = d
}

// Fail scripts the answers of the next requests, one fault each, in order;
// requests after them are answered normally.
func (s *Server) Fail(faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, faults...)
}

// Pending is the number of scripted faults not consumed yet.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.faults)
}

// Requests returns every request received so far, in order.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

func (s *Server) close() {
	close(s.done)
	s.srv.Close()
}

// maxRequestBytes bounds a request body; far beyond any test's.
const maxRequestBytes = 32 << 20

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes))
	if err != nil {
		s.t.Errorf("embedtest: reading %s %s: %v", r.Method, r.URL.Path, err)
		return
	}
	req := &Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	_ = json.Unmarshal(body, &req.JSON) // checked by wireProblems

	s.mu.Lock()
	s.requests = append(s.requests, req)
	req.Number = len(s.requests)
	key, dims, latency := s.key, s.dims, s.latency
	var fault *Fault
	if len(s.faults) > 0 && r.URL.Path == "/v1/embeddings" {
		fault = &s.faults[0]
		s.faults = s.faults[1:]
	}
	s.mu.Unlock()

	if r.URL.Path != "/v1/embeddings" {
		s.t.Errorf("embedtest: request %d: %s %s; only POST /v1/embeddings is served", req.Number, r.Method, r.URL.Path)
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", "Unknown request URL: "+r.Method+" "+r.URL.Path)
		return
	}
	if key != "" && r.Header.Get("Authorization") != "Bearer "+key {
		sent := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		writeError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", fmt.Sprintf("Incorrect API key provided: %s. You can find your API key at https://platform.openai.com/account/api-keys.", sent))
		return
	}
	if problems := wireProblems(req); len(problems) > 0 {
		for _, p := range problems {
			s.t.Errorf("embedtest: request %d: %s", req.Number, p)
		}
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", strings.Join(problems, "; "))
		return
	}
	if d, ok := req.Dimensions(); ok {
		dims = d
	}
	a := &answer{w: w, r: r, req: req, dims: dims, done: s.done}
	if latency > 0 && !a.wait(latency) {
		return
	}
	if fault != nil {
		fault.answer(a)
		return
	}
	a.vectors(a.embed(dims), false)
}

// answer is what a fault needs to reply to one request.
type answer struct {
	w    http.ResponseWriter
	r    *http.Request
	req  *Request
	dims int
	done <-chan struct{}
}

// wait holds the answer for d; false when the request or the server ended
// first.
func (a *answer) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-a.r.Context().Done():
	case <-a.done:
	}
	return false
}

// embed gives each input its embed.Hashing vector of dims numbers.
func (a *answer) embed(dims int) [][]float32 {
	vecs, err := embed.Hashing{Dims: dims}.Embed(a.r.Context(), a.req.Inputs())
	if err != nil {
		return nil
	}
	return vecs
}

// vectors writes a 200 answer listing vecs by index, in reverse when asked.
func (a *answer) vectors(vecs [][]float32, reverse bool) {
	base64Wanted := a.req.EncodingFormat() == "base64"
	data := make([]map[string]any, 0, len(vecs))
	for i, v := range vecs {
		item := map[string]any{"object": "embedding", "index": i, "embedding": v}
		if base64Wanted {
			item["embedding"] = encodeBase64(v)
		}
		data = append(data, item)
	}
	if reverse {
		for i, j := 0, len(data)-1; i < j; i, j = i+1, j-1 {
			data[i], data[j] = data[j], data[i]
		}
	}
	tokens := 0
	for _, in := range a.req.Inputs() {
		tokens += len(strings.Fields(in))
	}
	writeJSON(a.w, http.StatusOK, map[string]any{
		"object": "list",
		"data":   data,
		"model":  a.req.Model(),
		"usage":  map[string]any{"prompt_tokens": tokens, "total_tokens": tokens},
	})
}

func encodeBase64(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers status with OpenAI's error body.
func writeError(w http.ResponseWriter, status int, errType, code, message string) {
	var c any
	if code != "" {
		c = code
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": message, "type": errType, "param": nil, "code": c}})
}
