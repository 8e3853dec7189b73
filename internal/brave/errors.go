package brave

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"choir/internal/httpapi"
)

// ErrTooLarge is the cause of an *APIError whose answer passed the size cap.
var ErrTooLarge = httpapi.ErrTooLarge

// APIError is every failure of a call. It never holds the token.
type APIError struct {
	// Endpoint is the method, host and path called ("POST host/path").
	Endpoint string
	// Status is the HTTP status; 0 when no answer arrived.
	Status int
	// Code is Brave's error code (RATE_LIMITED, SUBSCRIPTION_TOKEN_INVALID,
	// ...), "" when the answer had none.
	Code string
	// Message is Brave's detail, or what the client saw.
	Message string
	// RetryAfter is how long to wait before trying again; 0 when unknown.
	RetryAfter time.Duration
	// Err is the underlying cause, if any.
	Err error
}

func (e *APIError) Error() string {
	return httpapi.Describe("brave", e.Endpoint, e.Status, e.Code, e.Message, e.RetryAfter, e.hint())
}

func (e *APIError) Unwrap() error { return e.Err }

// Auth reports whether the token was refused.
func (e *APIError) Auth() bool {
	return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden ||
		strings.HasPrefix(e.Code, "SUBSCRIPTION_TOKEN")
}

func (e *APIError) hint() string {
	switch {
	case e.Auth():
		return "check the subscription token (the secret of config.json's search.brave)"
	case e.Status == http.StatusTooManyRequests:
		return "the plan's rate or monthly quota is spent"
	case e.Status == 0 && e.Err != nil && !errors.Is(e.Err, ErrTooLarge):
		return "check that the endpoint is reachable from here"
	}
	return ""
}

// parseError reads {"type":"ErrorResponse","error":{...}}; anything else
// becomes a message quoting the start of the body.
func parseError(status int, body []byte) *APIError {
	var w struct {
		Error struct {
			Code   string `json:"code"`
			Detail string `json:"detail"`
		} `json:"error"`
	}
	e := &APIError{Status: status}
	if json.Unmarshal(body, &w) == nil && (w.Error.Code != "" || w.Error.Detail != "") {
		e.Code, e.Message = w.Error.Code, w.Error.Detail
		if e.Message == "" {
			e.Message = http.StatusText(status)
		}
		return e
	}
	e.Message = http.StatusText(status) + " (not a Brave error object: " + httpapi.Snippet(body) + ")"
	return e
}

// snippet quotes at most 120 bytes of a body.

// retryAfter is a 429's wait: Retry-After (seconds or an HTTP date) when
// present, else X-RateLimit-Reset of the first window whose
// X-RateLimit-Remaining is 0, else the first reset.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		return httpapi.RetryAfter(v, now)
	}
	resets := splitInts(h.Get("X-RateLimit-Reset"))
	if len(resets) == 0 {
		return 0
	}
	remaining := splitInts(h.Get("X-RateLimit-Remaining"))
	for i, r := range remaining {
		if r == 0 && i < len(resets) {
			return time.Duration(resets[i]) * time.Second
		}
	}
	return time.Duration(resets[0]) * time.Second
}

// splitInts parses "1, 15000"; a field that is not a number ends it.
func splitInts(s string) []int64 {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil || n < 0 {
			break
		}
		out = append(out, n)
	}
	return out
}
