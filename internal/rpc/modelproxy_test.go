package rpc

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// scriptedModels answers every carried call with status (and a
// Retry-After on 429), recording the calls.
type scriptedModels struct {
	status int
	mu     sync.Mutex
	calls  []ModelCall
}

func (m *scriptedModels) ProxyModel(_ context.Context, c ModelCall) (*ModelAnswer, error) {
	m.mu.Lock()
	m.calls = append(m.calls, c)
	m.mu.Unlock()
	h := http.Header{"Content-Type": {"application/json"}, "Set-Cookie": {"x=1"}}
	if m.status == http.StatusTooManyRequests {
		h.Set("Retry-After", "3")
	}
	return &ModelAnswer{Status: m.status, Header: h, Body: []byte(`{"ok":true}`)}, nil
}

// The model path is a config model name and an operation of ModelOps,
// exactly: everything else is a 404 before choird's proxy is asked.
func TestModelPath(t *testing.T) {
	for _, tc := range []struct {
		path     string
		name, op string
	}{
		{"/v1/model/fast/chat/completions", "fast", "chat/completions"},
		{"/v1/model/gpt-4o_mini/chat/completions", "gpt-4o_mini", "chat/completions"},
		{"/v1/model/../chat/completions", "", ""},
		{"/v1/model/./chat/completions", "", ""},
		{"/v1/model//chat/completions", "", ""},
		{"/v1/model/Fast/chat/completions", "", ""},
		{"/v1/model/fast/embeddings", "", ""},
		{"/v1/model/fast/chat/completions/", "", ""},
		{"/v1/model/fast", "", ""},
		{"/v1/model/fast%2fx/chat/completions", "", ""},
		{"/v1/model/" + strings.Repeat("a", 49) + "/chat/completions", "", ""},
	} {
		r := httptest.NewRequest(http.MethodPost, "http://choird"+tc.path, nil)
		name, op, ok := modelPath(r)
		if name != tc.name || op != tc.op || ok != (tc.name != "") {
			t.Errorf("modelPath(%s) = %q, %q, %v; want %q, %q", tc.path, name, op, ok, tc.name, tc.op)
		}
	}
}

// A carried call is authenticated like a verb, answered with the
// proxy's status and only the headers of ModelAnswerHeaders, and counted
// by Observe as MODEL with its outcome.
func TestModelCallsThroughTheServer(t *testing.T) {
	models := &scriptedModels{status: http.StatusOK}
	srv := NewServer(&fakeHandler{}, DefaultLimits(), quietLogger())
	var mu sync.Mutex
	var seen []string
	srv.Observe = func(v Verb, code string, _ time.Duration) {
		mu.Lock()
		seen = append(seen, string(v)+" "+code)
		mu.Unlock()
	}
	srv.Open("s1", testAgent, "t1")
	post := func(token, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/v1/model/fast/chat/completions", strings.NewReader(body))
		r.Header.Set(HeaderSessionID, "s1")
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		return w
	}
	if w := post("t1", `{}`); w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), "does not carry model calls") {
		t.Errorf("a model call to a server without Models = %d %s; want 404", w.Code, w.Body)
	}
	srv.Models = models
	if w := post("t1", `{"model":"fast-1"}`); w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" || w.Header().Get("Set-Cookie") != "" {
		t.Errorf("a carried call = %d %v; want 200 with Content-Type and no Set-Cookie", w.Code, w.Header())
	}
	models.status = http.StatusTooManyRequests
	if w := post("t1", `{"model":"fast-1"}`); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "3" {
		t.Errorf("a provider's 429 = %d Retry-After %q; want 429 with Retry-After 3", w.Code, w.Header().Get("Retry-After"))
	}
	if w := post("wrong", `{"model":"fast-1"}`); w.Code != http.StatusUnauthorized {
		t.Errorf("a wrong token = %d; want 401", w.Code)
	}
	models.mu.Lock()
	if len(models.calls) != 2 || models.calls[0].SessionID != "s1" || models.calls[0].Model != "fast" || string(models.calls[0].Body) != `{"model":"fast-1"}` {
		t.Errorf("the proxy was asked %+v; want two calls of session s1 for model fast with the body", models.calls)
	}
	models.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	want := []string{"MODEL not_found", "MODEL ok", "MODEL model_http_429", "MODEL unauthorized"}
	if strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Errorf("Observe saw %q; want %q", seen, want)
	}
}
