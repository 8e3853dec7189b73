package openai

import (
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		header string
		want   time.Duration
	}{
		{"", 0},
		{"2", 2 * time.Second},
		{" 30 ", 30 * time.Second},
		{"1.5", 1500 * time.Millisecond},
		{"0", 0},
		{"-3", 0},
		{"NaN", 0},
		{"99999999999999999999", maxRetryAfter},
		{now.Add(7 * time.Second).Format(http.TimeFormat), 7 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"Wed, 02 Jan 2030 03:04:15 GMT", 10 * time.Second},
		{"soon", 0},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.header, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %v; want %v", tt.header, got, tt.want)
		}
	}
}

func TestParseErrorBody(t *testing.T) {
	tests := []struct {
		body   string
		want   errorBody
		status int
		kind   Kind
	}{
		{`{"error":{"message":"m","type":"t","param":null,"code":"c"}}`,
			errorBody{Message: "m", Type: "t", Code: "c", found: true}, 400, KindBadRequest},
		{`{"error":{"code":429,"message":"slow down","metadata":{"provider_name":"x"}}}`,
			errorBody{Message: "slow down", Code: "429", found: true}, 429, KindRateLimited},
		{`{"object":"error","message":"m","type":"BadRequestError","param":null,"code":400}`,
			errorBody{Message: "m", Type: "BadRequestError", Code: "400", found: true}, 400, KindBadRequest},
		{`{"error":"model 'x' not found"}`,
			errorBody{Message: "model 'x' not found", found: true}, 404, KindBadRequest},
		{`{"error":{"message":"flagged","type":"invalid_request_error","code":"content_policy_violation"}}`,
			errorBody{Message: "flagged", Type: "invalid_request_error", Code: "content_policy_violation", contentFilter: true, found: true}, 400, KindContentFilter},
		{`{"detail":"Not Found"}`, errorBody{}, 404, KindBadRequest},
		{`<html>`, errorBody{}, 502, KindServerError},
		{`{"error":null}`, errorBody{}, 500, KindServerError},
	}
	for _, tt := range tests {
		got := parseErrorBody([]byte(tt.body))
		if got != tt.want {
			t.Errorf("parseErrorBody(%s) = %+v; want %+v", tt.body, got, tt.want)
		}
		if k := classify(tt.status, got); k != tt.kind {
			t.Errorf("classify(%d, %s) = %s; want %s", tt.status, tt.body, k, tt.kind)
		}
	}
}
