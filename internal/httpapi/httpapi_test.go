package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		v    string
		want time.Duration
	}{
		{"", 0}, {"30", 30 * time.Second}, {" 7 ", 7 * time.Second}, {"-1", 0}, {"soon", 0},
		{now.Add(time.Minute).Format(http.TimeFormat), time.Minute},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	} {
		if got := RetryAfter(tc.v, now); got != tc.want {
			t.Errorf("RetryAfter(%q) = %v; want %v", tc.v, got, tc.want)
		}
	}
}

// TestDo: the headers and body go out, any status comes back whole, and a
// failure (too large, too slow, unreachable) never carries the secret.
func TestDo(t *testing.T) {
	const secret = "sk-very-secret"
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/echo":
			if r.Header.Get("X-Key") != secret || r.Header.Get("Content-Type") != "application/json" || r.URL.Query().Get("q") != "a b" {
				http.Error(w, "bad request shape", http.StatusBadRequest)
				return
			}
			w.WriteHeader(http.StatusTeapot)
			w.Write([]byte(`{"ok":true}`))
		case "/v1/huge":
			w.Write([]byte(strings.Repeat("x", 2048)))
		case "/v1/slow":
			<-release
		}
	}))
	defer srv.Close()
	defer close(release)
	base, err := ParseBase("test", srv.URL+"/v1/", "https://api.example/v1")
	if err != nil {
		t.Fatal(err)
	}
	c := &Caller{Base: base, Header: http.Header{"X-Key": {secret}}, Timeout: 300 * time.Millisecond, MaxBody: 1024, Secret: secret}
	ctx := context.Background()
	ans, where, f := c.Do(ctx, http.MethodPost, "/echo", url.Values{"q": {"a b"}}, []byte(`{}`))
	if f != nil || ans.Status != http.StatusTeapot || string(ans.Body) != `{"ok":true}` || !strings.HasPrefix(where, "POST 127.0.0.1:") || !strings.HasSuffix(where, "/v1/echo") {
		t.Fatalf("Do(echo) = %+v, %q, %+v", ans, where, f)
	}
	if _, _, f := c.Do(ctx, http.MethodGet, "/huge", nil, nil); f == nil || !errors.Is(f.Err, ErrTooLarge) || f.Status != 200 {
		t.Errorf("Do(huge) failure = %+v; want ErrTooLarge", f)
	}
	if _, _, f := c.Do(ctx, http.MethodGet, "/slow", nil, nil); f == nil || !strings.Contains(f.Message, "no complete answer within 300ms") {
		t.Errorf("Do(slow) failure = %+v; want the deadline", f)
	}
	bad := &Caller{Base: &url.URL{Scheme: "http", Host: "127.0.0.1:1", Path: "/" + secret}, Timeout: time.Second, MaxBody: 1, Secret: secret}
	if _, where, f := bad.Do(ctx, http.MethodGet, "/x", nil, nil); f == nil || strings.Contains(f.Message, secret) {
		t.Errorf("Do(unreachable) = %q, %+v; want a failure without the secret", where, f)
	}
	for _, raw := range []string{"ftp://x", "http://", "::"} {
		if _, err := ParseBase("test", raw, "https://api.example/v1"); err == nil || !strings.Contains(err.Error(), "https://api.example/v1") {
			t.Errorf("ParseBase(%q) = %v; want a refusal showing an example", raw, err)
		}
	}
}

func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		status          int
		code, msg, hint string
		retry           time.Duration
		want            string
	}{
		{429, "rate_limited", "Too many requests.", "wait", 30 * time.Second, "svc: GET h/p: HTTP 429 rate_limited: Too many requests; retry after 30s; wait"},
		{0, "", "no complete answer within 1s", "", 0, "svc: GET h/p: no complete answer within 1s"},
		{500, "", "boom", "", 0, "svc: GET h/p: HTTP 500: boom"},
	} {
		if got := Describe("svc", "GET h/p", tc.status, tc.code, tc.msg, tc.retry, tc.hint); got != tc.want {
			t.Errorf("Describe() = %q; want %q", got, tc.want)
		}
	}
}
