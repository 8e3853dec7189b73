// Package notiontest is a pretend Notion API for tests, like httptest but
// speaking the endpoints Notion's API reference gives for reading:
// POST <URL>/search, GET <URL>/pages/{id}, GET <URL>/blocks/{id}/children
// and POST <URL>/databases/{id}/query, with "Authorization: Bearer" and
// Notion-Version.
//
// A test builds a workspace (AddPage with blocks made by Paragraph, Heading,
// Bullet, ToDo, Code, ...; AddDatabase with rows), points the client or the
// agent's Notion integration at URL, and reads what was asked (Requests).
// The fake decodes the raw JSON itself and never imports the client's
// structs. It answers as Notion does where a client can tell: the list
// envelope with next_cursor and has_more (page_size at most 100), ids
// dashed or not, 401 unauthorized for a wrong token, 400 missing_version
// without Notion-Version, 404 object_not_found, 400 validation_error for a
// page_size out of range or a filter it cannot read, and Notion's error
// object for all of them. FailNext scripts faults: 401, 429 with
// Retry-After, 5xx, a malformed body, a body that never ends and one that
// stalls.
package notiontest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"choir/testkit/apitest"
)

// Request is one request as the fake received it.
type Request struct {
	Method, Path string
	Query        url.Values
	Token        string // the Bearer token
	Version      string // Notion-Version
	Body         map[string]any
}

// Server is a running fake; safe for concurrent use.
type Server struct {
	t     testing.TB
	srv   *httptest.Server
	done  chan struct{}
	token string

	mu        sync.Mutex
	next      int
	objects   map[string]map[string]any // pages and databases by id
	order     []string                  // search order
	children  map[string][]string       // block ids under a page or block
	blocks    map[string]map[string]any
	rows      map[string][]string // database id -> row page ids
	requests  []Request
	faults    []Fault
	pageLimit int
}

// New starts a fake on 127.0.0.1 accepting token.
func New(t testing.TB, token string) *Server { return NewOn(t, "127.0.0.1:0", token) }

// NewOn starts a fake on addr (the bridge gateway for containers).
func NewOn(t testing.TB, addr, token string) *Server {
	t.Helper()
	s := &Server{t: t, token: token, objects: map[string]map[string]any{}, children: map[string][]string{},
		blocks: map[string]map[string]any{}, rows: map[string][]string{}, pageLimit: 100}
	s.srv, s.done = apitest.Start(t, addr, s)
	return s
}

// URL is the endpoint to configure (like https://api.notion.com/v1).
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// SetMaxPageSize lowers the most results the fake puts in one list page
// (default 100), so that a test exercises pagination with few objects.
func (s *Server) SetMaxPageSize(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pageLimit = n
}

// Requests returns every request received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// newID returns a fresh dashed id.
func (s *Server) newID() string {
	s.next++
	h := fmt.Sprintf("%032x", 0xc0ffee000000+s.next)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// normID reads an id given dashed or not; "" if it is not one.
func normID(s string) string {
	h := strings.ToLower(strings.ReplaceAll(s, "-", ""))
	if len(h) != 32 || strings.Trim(h, "0123456789abcdef") != "" {
		return ""
	}
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Version: r.Header.Get("Notion-Version")}
	req.Token, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	var bodyErr error
	if r.Method == http.MethodPost {
		bodyErr = json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req.Body)
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	var fault *Fault
	if len(s.faults) > 0 {
		fault = &s.faults[0]
		s.faults = s.faults[1:]
	}
	s.mu.Unlock()

	switch {
	case req.Token != s.token:
		writeError(w, http.StatusUnauthorized, "unauthorized", "API token is invalid.")
		return
	case req.Version == "":
		writeError(w, http.StatusBadRequest, "missing_version", "Notion-Version header failed validation: Notion-Version header should be defined, instead was `undefined`.")
		return
	case fault != nil:
		fault.serve(w, r, s.done)
		return
	case bodyErr != nil && bodyErr.Error() != "EOF":
		writeError(w, http.StatusBadRequest, "invalid_json", "Error parsing JSON body.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.Method == http.MethodPost && len(parts) == 2 && parts[1] == "search":
		s.search(w, req)
	case r.Method == http.MethodGet && len(parts) == 3 && parts[1] == "pages":
		s.page(w, parts[2])
	case r.Method == http.MethodGet && len(parts) == 4 && parts[1] == "blocks" && parts[3] == "children":
		s.blockChildren(w, req, parts[2])
	case r.Method == http.MethodPost && len(parts) == 4 && parts[1] == "databases" && parts[3] == "query":
		s.query(w, req, parts[2])
	default:
		writeError(w, http.StatusBadRequest, "invalid_request_url", "Invalid request URL.")
	}
}

// pageSize reads page_size (a query parameter or a body member).
func (s *Server) pageSize(w http.ResponseWriter, v any) (int, bool) {
	n := 100
	switch v := v.(type) {
	case nil:
	case float64:
		n = int(v)
		if float64(n) != v {
			n = -1
		}
	case string:
		if _, err := fmt.Sscanf(v, "%d", &n); err != nil {
			n = -1
		}
	default:
		n = -1
	}
	if n < 1 || n > 100 {
		writeError(w, http.StatusBadRequest, "validation_error", fmt.Sprintf("body failed validation: body.page_size should be a number between 1 and 100, instead was `%v`.", v))
		return 0, false
	}
	return min(n, s.pageLimit), true
}

// writeList answers one page of ids from cursor on.
func (s *Server) writeList(w http.ResponseWriter, ids []string, cursor string, size int, render func(string) map[string]any, extra map[string]any) {
	start := 0
	if cursor != "" {
		start = -1
		for i, id := range ids {
			if id == cursor {
				start = i
			}
		}
		if start < 0 {
			writeError(w, http.StatusBadRequest, "validation_error", "start_cursor provided is invalid: "+cursor)
			return
		}
	}
	end := min(start+size, len(ids))
	results := []any{}
	for _, id := range ids[start:end] {
		results = append(results, render(id))
	}
	out := map[string]any{"object": "list", "results": results, "next_cursor": nil, "has_more": end < len(ids)}
	if end < len(ids) {
		out["next_cursor"] = ids[end]
	}
	for k, v := range extra {
		out[k] = v
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) search(w http.ResponseWriter, req Request) {
	size, ok := s.pageSize(w, req.Body["page_size"])
	if !ok {
		return
	}
	query, _ := req.Body["query"].(string)
	kind := ""
	if f, ok := req.Body["filter"].(map[string]any); ok {
		kind, _ = f["value"].(string)
		if f["property"] != "object" || kind != "page" && kind != "database" {
			writeError(w, http.StatusBadRequest, "validation_error", "body failed validation: body.filter.value should be `\"page\"` or `\"database\"`.")
			return
		}
	}
	var ids []string
	for _, id := range s.order {
		o := s.objects[id]
		if (kind == "" || o["object"] == kind) && strings.Contains(strings.ToLower(titleOf(o)), strings.ToLower(query)) {
			ids = append(ids, id)
		}
	}
	cursor, _ := req.Body["start_cursor"].(string)
	s.writeList(w, ids, cursor, size, func(id string) map[string]any { return s.objects[id] }, map[string]any{"type": "page_or_database", "page_or_database": map[string]any{}})
}

func (s *Server) page(w http.ResponseWriter, raw string) {
	id := normID(raw)
	if o, ok := s.objects[id]; ok && o["object"] == "page" {
		writeJSON(w, http.StatusOK, o)
		return
	}
	notFound(w, "page", raw)
}

func (s *Server) blockChildren(w http.ResponseWriter, req Request, raw string) {
	id := normID(raw)
	_, isBlock := s.blocks[id]
	o, isObj := s.objects[id]
	if !isBlock && !(isObj && o["object"] == "page") {
		notFound(w, "block", raw)
		return
	}
	var size any
	if v := req.Query.Get("page_size"); v != "" {
		size = v
	}
	n, ok := s.pageSize(w, size)
	if !ok {
		return
	}
	s.writeList(w, s.children[id], req.Query.Get("start_cursor"), n, func(id string) map[string]any { return s.blocks[id] }, map[string]any{"type": "block", "block": map[string]any{}})
}

func (s *Server) query(w http.ResponseWriter, req Request, raw string) {
	id := normID(raw)
	if o, ok := s.objects[id]; !ok || o["object"] != "database" {
		notFound(w, "database", raw)
		return
	}
	size, ok := s.pageSize(w, req.Body["page_size"])
	if !ok {
		return
	}
	match := func(map[string]any) bool { return true }
	if f, ok := req.Body["filter"]; ok {
		m, err := filter(f)
		if err != nil {
			writeError(w, http.StatusBadRequest, "validation_error", "body failed validation: "+err.Error())
			return
		}
		match = m
	}
	var ids []string
	for _, rid := range s.rows[id] {
		if match(s.objects[rid]["properties"].(map[string]any)) {
			ids = append(ids, rid)
		}
	}
	cursor, _ := req.Body["start_cursor"].(string)
	s.writeList(w, ids, cursor, size, func(id string) map[string]any { return s.objects[id] }, map[string]any{"type": "page_or_database", "page_or_database": map[string]any{}})
}

// filter reads the one filter shape the fake knows: {"property": NAME,
// TYPE: {"equals": VALUE}}, compared with the property's plain value.
func filter(f any) (func(map[string]any) bool, error) {
	m, _ := f.(map[string]any)
	name, _ := m["property"].(string)
	if name == "" || len(m) != 2 {
		return nil, fmt.Errorf("the fake reads only {\"property\":NAME,TYPE:{\"equals\":VALUE}}, got %v", f)
	}
	var want any
	for k, v := range m {
		if k != "property" {
			cond, _ := v.(map[string]any)
			var ok bool
			if want, ok = cond["equals"]; !ok {
				return nil, fmt.Errorf("body.filter.%s should have equals", k)
			}
		}
	}
	return func(props map[string]any) bool {
		p, _ := props[name].(map[string]any)
		return p != nil && fmt.Sprint(plain(p)) == fmt.Sprint(want)
	}, nil
}

// plain is a property value's comparable value.
func plain(p map[string]any) any {
	typ, _ := p["type"].(string)
	v := p[typ]
	switch typ {
	case "title", "rich_text":
		return textOf(v)
	case "select", "status":
		if m, ok := v.(map[string]any); ok {
			return m["name"]
		}
	}
	return v
}

func titleOf(o map[string]any) string {
	if o["object"] == "database" {
		return textOf(o["title"])
	}
	props, _ := o["properties"].(map[string]any)
	for _, p := range props {
		if pm, _ := p.(map[string]any); pm["type"] == "title" {
			return textOf(pm["title"])
		}
	}
	return ""
}

func textOf(v any) string {
	items, _ := v.([]any)
	var b strings.Builder
	for _, it := range items {
		m, _ := it.(map[string]any)
		s, _ := m["plain_text"].(string)
		b.WriteString(s)
	}
	return b.String()
}

func notFound(w http.ResponseWriter, kind, id string) {
	writeError(w, http.StatusNotFound, "object_not_found", fmt.Sprintf("Could not find %s with ID: %s. Make sure the relevant pages and databases are shared with your integration.", kind, id))
}

// writeError answers Notion's error object.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"object": "error", "status": status, "code": code, "message": msg, "request_id": "00000000-0000-4000-8000-000000000000"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
