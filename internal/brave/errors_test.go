package brave

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		h    map[string]string
		want time.Duration
	}{
		{"seconds", map[string]string{"Retry-After": "3"}, 3 * time.Second},
		{"http date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"date in the past", map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0},
		{"garbage Retry-After wins over the reset", map[string]string{"Retry-After": "soon", "X-RateLimit-Reset": "1, 100"}, 0},
		{"second window spent", map[string]string{"X-RateLimit-Remaining": "0, 900", "X-RateLimit-Reset": "1, 1419704"}, time.Second},
		{"month spent", map[string]string{"X-RateLimit-Remaining": "1, 0", "X-RateLimit-Reset": "1, 86400"}, 86400 * time.Second},
		{"nothing spent", map[string]string{"X-RateLimit-Remaining": "1, 5", "X-RateLimit-Reset": "2, 86400"}, 2 * time.Second},
		{"negative reset", map[string]string{"X-RateLimit-Reset": "-5"}, 0},
		{"none", nil, 0},
	}
	for _, tc := range cases {
		h := http.Header{}
		for k, v := range tc.h {
			h.Set(k, v)
		}
		if got := retryAfter(h, now); got != tc.want {
			t.Errorf("%s: retryAfter(%v) = %v; want %v", tc.name, tc.h, got, tc.want)
		}
	}
}

func FuzzParseError(f *testing.F) {
	f.Add([]byte(`{"type":"ErrorResponse","error":{"code":"RATE_LIMITED","detail":"x"}}`))
	f.Add([]byte(`<html>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		e := parseError(429, body)
		if e.Status != 429 || e.Message == "" {
			t.Fatalf("parseError(%q) = %+v; want the status and a message", body, e)
		}
		_ = e.Error()
	})
}
