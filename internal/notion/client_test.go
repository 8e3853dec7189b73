package notion_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"choir/internal/notion"
	"choir/testkit/notiontest"
)

func TestFaults(t *testing.T) {
	cases := []struct {
		name   string
		fault  *notiontest.Fault
		token  string
		page   string // "" is the page that exists
		status int
		code   string
		retry  time.Duration
		want   string
	}{
		{name: "wrong token", token: "secret_wrong", status: 401, code: "unauthorized", want: "check the integration token"},
		{name: "401", fault: ptr(notiontest.Unauthorized()), status: 401, code: "unauthorized", want: "check the integration token"},
		{name: "429", fault: ptr(notiontest.RateLimited(5)), status: 429, code: "rate_limited", retry: 5 * time.Second, want: "retry after 5s"},
		{name: "5xx", fault: ptr(notiontest.ServerError(503)), status: 503, code: "service_unavailable", want: "HTTP 503"},
		{name: "malformed", fault: ptr(notiontest.Malformed()), status: 200, want: "not the JSON Notion sends"},
		{name: "endless", fault: ptr(notiontest.Endless()), status: 200, want: "larger than 65536 bytes"},
		{name: "stalled", fault: ptr(notiontest.Stall()), status: 200, want: "no complete answer within 300ms"},
		{name: "not shared", page: "ffffffff-ffff-ffff-ffff-ffffffffffff", status: 404, code: "object_not_found", want: "shared with the integration"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := notiontest.New(t, token)
			id := fake.AddPage(notiontest.Page{Title: "p"})
			if tc.page != "" {
				id = tc.page
			}
			if tc.fault != nil {
				fake.FailNext(1, *tc.fault)
			}
			c := client(t, fake, func(cfg *notion.Config) {
				cfg.MaxBody = 64 << 10
				cfg.Timeout = 300 * time.Millisecond
				if tc.token != "" {
					cfg.Token = tc.token
				}
			})
			_, err := c.Page(context.Background(), id)
			var ae *notion.APIError
			if !errors.As(err, &ae) {
				t.Fatalf("Page = %v; want an *APIError", err)
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
		})
	}
}

func TestUnreachable(t *testing.T) {
	c, err := notion.New(notion.Config{Endpoint: "http://127.0.0.1:1/v1", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Search(context.Background(), notion.SearchRequest{})
	if !strings.Contains(fmtErr(err), "reachable") {
		t.Errorf("Search to a closed port = %v; want it to say to check the endpoint", err)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
