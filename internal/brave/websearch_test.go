package brave_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"choir/internal/brave"
	"choir/testkit/bravetest"
)

const token = "BSA-test-Token-4Kp"

func client(t *testing.T, fake *bravetest.Server, mod func(*brave.Config)) *brave.Client {
	t.Helper()
	cfg := brave.Config{Endpoint: fake.URL(), Token: token, Timeout: 5 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	c, err := brave.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestWebSearchReturnsStructuredResults(t *testing.T) {
	fake := bravetest.New(t, token)
	fake.SetResults(
		bravetest.Result{Title: "Go", URL: "https://go.dev/", Description: "The Go language", Age: "2 days ago"},
		bravetest.Result{Title: "Tour", URL: "https://go.dev/tour", Description: "A tour"},
		bravetest.Result{Title: "Spec", URL: "https://go.dev/ref/spec", Description: "The spec"},
	)
	res, err := client(t, fake, nil).WebSearch(context.Background(), brave.WebSearchRequest{Query: " golang ", Count: 2, Country: "de", SafeSearch: "strict"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 2 || res.Results[0].Title != "Go" || res.Results[0].URL != "https://go.dev/" ||
		res.Results[0].Description != "The Go language" || res.Results[0].Age != "2 days ago" {
		t.Fatalf("WebSearch = %+v; want the first two results with title, url, description and age", res.Results)
	}
	if !res.MoreResults || res.Query != "golang" || res.Remaining != "1, 1999" {
		t.Errorf("WebSearch = more %v, query %q, remaining %q; want true, golang, the header", res.MoreResults, res.Query, res.Remaining)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests; want 1", len(reqs))
	}
	q := reqs[0].Query
	if reqs[0].Token != token || q.Get("q") != "golang" || q.Get("count") != "2" || q.Get("country") != "de" ||
		q.Get("safesearch") != "strict" || q.Get("text_decorations") != "false" || q.Has("offset") {
		t.Errorf("request = %+v; want the token, q trimmed, count, country, safesearch, no decorations, no offset", reqs[0])
	}

	// Nothing found: no web section at all.
	fake.SetResults()
	res, err = client(t, fake, nil).WebSearch(context.Background(), brave.WebSearchRequest{Query: "zzzz"})
	if err != nil || len(res.Results) != 0 {
		t.Errorf("WebSearch with no results = %+v, %v; want none and no error", res, err)
	}
}

func TestWebSearchRefusesBadRequestsBeforeSending(t *testing.T) {
	fake := bravetest.New(t, token)
	c := client(t, fake, nil)
	for _, r := range []brave.WebSearchRequest{
		{Query: "  "},
		{Query: strings.Repeat("é", 401)},
		{Query: "x", Count: 21},
		{Query: "x", Count: -1},
		{Query: "x", Offset: 10},
		{Query: "x", SafeSearch: "none"},
	} {
		if _, err := c.WebSearch(context.Background(), r); err == nil {
			t.Errorf("WebSearch(%+v) = nil error; want a refusal", r)
		}
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("%d requests reached Brave; want none", n)
	}
}

func TestWebSearchFaults(t *testing.T) {
	cases := []struct {
		name   string
		fault  *bravetest.Fault
		token  string
		status int
		code   string
		retry  time.Duration
		want   string
	}{
		{name: "wrong token", token: "BSA-wrong", status: 422, code: "SUBSCRIPTION_TOKEN_INVALID", want: "check the subscription token"},
		{name: "401", fault: ptr(bravetest.Unauthorized()), status: 401, code: "SUBSCRIPTION_TOKEN_MISSING", want: "check the subscription token"},
		{name: "429 with Retry-After", fault: ptr(bravetest.RateLimited(7)), status: 429, code: "RATE_LIMITED", retry: 7 * time.Second, want: "retry after 7s"},
		{name: "429 without Retry-After", fault: ptr(bravetest.RateLimited(-1)), status: 429, code: "RATE_LIMITED", retry: time.Second, want: "retry after 1s"},
		{name: "5xx", fault: ptr(bravetest.ServerError(503)), status: 503, code: "INTERNAL_ERROR", want: "HTTP 503"},
		{name: "malformed", fault: ptr(bravetest.Malformed()), status: 200, want: "not a Brave search result"},
		{name: "endless", fault: ptr(bravetest.Endless()), status: 200, want: "larger than 65536 bytes"},
		{name: "stalled", fault: ptr(bravetest.Stall()), status: 200, want: "no complete answer within 300ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := bravetest.New(t, token)
			fake.SetResults(bravetest.Result{Title: "a", URL: "https://a.example/"})
			if tc.fault != nil {
				fake.FailNext(1, *tc.fault)
			}
			c := client(t, fake, func(cfg *brave.Config) {
				cfg.MaxBody = 64 << 10
				cfg.Timeout = 300 * time.Millisecond
				if tc.token != "" {
					cfg.Token = tc.token
				}
			})
			_, err := c.WebSearch(context.Background(), brave.WebSearchRequest{Query: "q"})
			var ae *brave.APIError
			if !errors.As(err, &ae) {
				t.Fatalf("WebSearch = %v; want an *APIError", err)
			}
			if ae.Status != tc.status || ae.Code != tc.code || ae.RetryAfter != tc.retry {
				t.Errorf("APIError = status %d code %q retry %v; want %d %q %v", ae.Status, ae.Code, ae.RetryAfter, tc.status, tc.code, tc.retry)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q; want it to say %q", err, tc.want)
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("error %q shows the token", err)
			}
			// The fault is spent: the next search works.
			if _, err := client(t, fake, nil).WebSearch(context.Background(), brave.WebSearchRequest{Query: "q"}); tc.token == "" && err != nil {
				t.Errorf("search after the fault = %v; want success", err)
			}
		})
	}
}

func TestWebSearchUnreachable(t *testing.T) {
	c, err := brave.New(brave.Config{Endpoint: "http://127.0.0.1:1/res/v1", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.WebSearch(context.Background(), brave.WebSearchRequest{Query: "q"})
	var ae *brave.APIError
	if !errors.As(err, &ae) || ae.Status != 0 || !strings.Contains(err.Error(), "reachable") {
		t.Errorf("WebSearch to a closed port = %v; want an *APIError saying to check the endpoint", err)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, cfg := range []brave.Config{
		{Endpoint: "ftp://x", Token: token},
		{Endpoint: "api.search.brave.com", Token: token},
		{Token: "  "},
	} {
		if _, err := brave.New(cfg); err == nil {
			t.Errorf("New(%+v) = nil error; want a refusal", cfg)
		}
	}
}

func ptr[T any](v T) *T { return &v }
