package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Kind classifies a failed call by what the caller does about it (spec §7.7).
type Kind int

const (
	// KindUnknown is what KindOf says of an error that is not an *APIError.
	KindUnknown Kind = iota
	// KindNetwork: no HTTP answer arrived (connection refused or reset, DNS).
	KindNetwork
	// KindTimeout: the per-call timeout or the caller's deadline passed, or
	// the provider answered 408.
	KindTimeout
	// KindCanceled: the caller canceled the context. Not the provider's fault.
	KindCanceled
	// KindRateLimited: HTTP 429. APIError.RetryAfter says how long to wait.
	KindRateLimited
	// KindServerError: HTTP 5xx, or a 200 whose body reports an error raised
	// while the model was generating (OpenRouter does this).
	KindServerError
	// KindMalformed: a 2xx answer that is not what the API promises: not
	// JSON, no choices, embeddings missing or of the wrong size.
	KindMalformed
	// KindContentFilter: finish_reason "content_filter", or an error whose
	// type, code or metadata says a content filter or moderation refused.
	KindContentFilter
	// KindAuth: HTTP 401 or 403: the key is wrong, revoked or not allowed.
	KindAuth
	// KindBadRequest: any other 4xx, or a request refused before sending.
	KindBadRequest
)

var kindNames = [...]string{
	KindUnknown:       "unknown error",
	KindNetwork:       "network error",
	KindTimeout:       "timeout",
	KindCanceled:      "canceled",
	KindRateLimited:   "rate limited",
	KindServerError:   "server error",
	KindMalformed:     "malformed answer",
	KindContentFilter: "refused by content filter",
	KindAuth:          "authentication failed",
	KindBadRequest:    "bad request",
}

func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return "Kind(" + strconv.Itoa(int(k)) + ")"
	}
	return kindNames[k]
}

// hint says what a user can do about an error of this kind, where that is
// not obvious from the message.
func (k Kind) hint() string {
	switch k {
	case KindNetwork:
		return "check that the endpoint is reachable from here"
	case KindAuth:
		return "check the API key secret configured for this model"
	case KindMalformed:
		return "check that the endpoint speaks the OpenAI-compatible API"
	case KindContentFilter:
		return "rephrase the request"
	}
	return ""
}

// APIError is the error every failed Chat or Embed returns. It never contains
// the API key: the client removes it from every text it puts here.
type APIError struct {
	Kind Kind
	// Endpoint is the host and path called, e.g.
	// "openrouter.ai/api/v1/chat/completions" (no userinfo, no query).
	Endpoint string
	// Model is the model the request named.
	Model string
	// Status is the HTTP status, 0 when no answer arrived.
	Status int
	// Type and Code come from the provider's error object when it sent one.
	// A numeric code (OpenRouter, vLLM) is given in decimal.
	Type, Code string
	// Message is the provider's message, or what the client saw.
	Message string
	// RetryAfter is the provider's Retry-After, 0 when absent, unparsable or
	// already past.
	RetryAfter time.Duration
	// Err is the underlying cause, if any (a context or network error, a
	// JSON syntax error).
	Err error
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "openai: POST %s", e.Endpoint)
	if e.Model != "" {
		fmt.Fprintf(&b, " (model %q)", e.Model)
	}
	b.WriteString(": ")
	b.WriteString(e.Kind.String())
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
	}
	switch {
	case e.Type != "" && e.Code != "":
		fmt.Fprintf(&b, " (%s, %s)", e.Type, e.Code)
	case e.Type != "":
		fmt.Fprintf(&b, " (%s)", e.Type)
	case e.Code != "":
		fmt.Fprintf(&b, " (code %s)", e.Code)
	}
	if msg := strings.TrimRight(e.Message, ". \n"); msg != "" {
		b.WriteString(": ")
		b.WriteString(msg)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, "; retry after %v", e.RetryAfter)
	}
	if h := e.Kind.hint(); h != "" {
		b.WriteString("; ")
		b.WriteString(h)
	}
	return b.String()
}

func (e *APIError) Unwrap() error { return e.Err }

// KindOf returns the Kind of the *APIError in err's chain, or KindUnknown.
func KindOf(err error) Kind {
	if e, ok := errors.AsType[*APIError](err); ok {
		return e.Kind
	}
	return KindUnknown
}

// errorBody is what a provider said in an error answer.
type errorBody struct {
	Message, Type, Code string
	contentFilter       bool // a content filter or moderation refused
	found               bool
}

// wireError is the error object. OpenAI sends
// {"error":{"message","type","param","code"}} with a string code; OpenRouter
// sends a numeric code and metadata; older vLLM sends the same fields at the
// top level with "object":"error"; Ollama's native API sends {"error":"text"}.
type wireError struct {
	Message  string                     `json:"message"`
	Type     json.RawMessage            `json:"type"`
	Code     json.RawMessage            `json:"code"`
	Metadata map[string]json.RawMessage `json:"metadata"`
}

func (w wireError) body() errorBody {
	b := errorBody{Message: strings.TrimSpace(w.Message), Type: scalar(w.Type), Code: scalar(w.Code)}
	b.found = b.Message != "" || b.Type != "" || b.Code != ""
	marks := strings.ToLower(b.Type + " " + b.Code)
	for _, m := range []string{"content_filter", "content_policy", "moderation"} {
		if strings.Contains(marks, m) {
			b.contentFilter = true
		}
	}
	if _, ok := w.Metadata["flagged_input"]; ok { // OpenRouter moderation
		b.contentFilter = true
	}
	return b
}

// parseErrorBody reads an error answer in any of the shapes wireError lists;
// found is false when the body holds none of them.
func parseErrorBody(data []byte) errorBody {
	var top struct {
		Error json.RawMessage `json:"error"`
		wireError
	}
	if json.Unmarshal(data, &top) != nil {
		return errorBody{}
	}
	var text string
	if json.Unmarshal(top.Error, &text) == nil && strings.TrimSpace(text) != "" {
		return errorBody{Message: strings.TrimSpace(text), found: true}
	}
	var nested wireError
	if json.Unmarshal(top.Error, &nested) == nil {
		if b := nested.body(); b.found {
			return b
		}
	}
	return top.wireError.body()
}

// scalar renders a JSON string, number or boolean as text; anything else is "".
func scalar(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// classify maps an HTTP status and error body to a Kind.
func classify(status int, b errorBody) Kind {
	if b.contentFilter {
		return KindContentFilter
	}
	switch {
	case status == http.StatusTooManyRequests:
		return KindRateLimited
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return KindAuth
	case status == http.StatusRequestTimeout:
		return KindTimeout
	case status >= 500:
		return KindServerError
	case status >= 400:
		return KindBadRequest
	}
	return KindMalformed // 1xx or an unfollowed 3xx: not an API answer
}

// classifyInBody classifies an error reported inside a 200 answer. OpenRouter
// gives the HTTP status it would have used as the numeric code; anything else
// is an error raised while generating, a server error.
func classifyInBody(b errorBody) Kind {
	if n, err := strconv.Atoi(b.Code); err == nil && n >= 400 && n <= 599 {
		return classify(n, b)
	}
	return classify(http.StatusInternalServerError, b)
}

// maxRetryAfter caps a Retry-After so that absurd values cannot overflow.
const maxRetryAfter = 24 * time.Hour

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date,
// measured from now. It returns 0 when the header is absent, unparsable or
// already past.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		switch {
		case math.IsNaN(secs) || secs <= 0:
			return 0
		case secs >= maxRetryAfter.Seconds():
			return maxRetryAfter
		}
		return time.Duration(secs * float64(time.Second))
	}
	if at, err := http.ParseTime(v); err == nil {
		return min(max(at.Sub(now), 0), maxRetryAfter)
	}
	return 0
}
