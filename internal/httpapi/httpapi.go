// Package httpapi is the request loop the hand-written clients of JSON
// HTTP APIs share (internal/brave, internal/notion, internal/elevenlabs):
// one request under a deadline that covers the whole body, an answer read up
// to a cap, the credential kept out of every message, and Retry-After read.
// It imports only the standard library. Each client keeps its own typed
// *APIError and reads its service's error body itself: a Caller hands it the
// answer, whatever its status, or a *Failure when no whole answer came.
package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ErrTooLarge is the cause of a Failure whose answer passed the cap.
var ErrTooLarge = errors.New("answer too large")

// Caller makes the requests of one client. Its fields are set by the client
// once (Base with ParseBase) and not changed after; it is safe for
// concurrent use.
type Caller struct {
	Base *url.URL
	// Header is set on every request (the credential, Accept, a version).
	Header http.Header
	// HTTP performs the requests; nil means http.DefaultClient.
	HTTP *http.Client
	// Timeout bounds each request, body included.
	Timeout time.Duration
	// MaxBody bounds the answer read.
	MaxBody int64
	// Secret is replaced by [REDACTED] in every message a Caller makes.
	Secret string
}

// ParseBase checks a configured endpoint: an http(s) URL with a host. name
// and def say, in the error, whose endpoint it is and what one looks like.
func ParseBase(name, raw, def string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		raw = def
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: endpoint %q is not an http(s) URL with a host; want e.g. %s", name, raw, def)
	}
	return u, nil
}

// Answer is a response that arrived whole, with any status.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// Failure is a request that got no whole answer: it could not be sent, no
// answer came within the deadline, or the answer passed the cap. Status is
// the answer's when one began.
type Failure struct {
	Endpoint string
	Status   int
	Message  string
	Err      error
}

// Do sends method Base+path?query with body as JSON (nil: no body) and
// returns the whole answer, where it went ("GET host/path", for messages),
// or a *Failure.
func (c *Caller) Do(ctx context.Context, method, path string, query url.Values, body []byte) (Answer, string, *Failure) {
	u := *c.Base
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawPath = ""
	u.RawQuery = query.Encode()
	where := method + " " + u.Host + u.EscapedPath()
	fail := func(status int, msg string, err error) *Failure {
		return &Failure{Endpoint: where, Status: status, Message: c.Redact(msg), Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return Answer{}, where, fail(0, "build the request", err)
	}
	for k, vs := range c.Header {
		req.Header[k] = vs
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Answer{}, where, fail(0, c.transportMessage(ctx, err), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.MaxBody+1))
	if err != nil {
		return Answer{}, where, fail(resp.StatusCode, "reading the answer: "+c.transportMessage(ctx, err), err)
	}
	if int64(len(data)) > c.MaxBody {
		return Answer{}, where, fail(resp.StatusCode, fmt.Sprintf("the answer is larger than %d bytes", c.MaxBody), ErrTooLarge)
	}
	return Answer{Status: resp.StatusCode, Header: resp.Header, Body: data}, where, nil
}

// transportMessage describes a failure to get an answer.
func (c *Caller) transportMessage(ctx context.Context, err error) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no complete answer within %v", c.Timeout)
	}
	if errors.Is(err, context.Canceled) {
		return "canceled"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return c.Redact(err.Error())
}

// Redact replaces the Caller's secret in s.
func (c *Caller) Redact(s string) string {
	if c.Secret == "" {
		return s
	}
	return strings.ReplaceAll(s, c.Secret, "[REDACTED]")
}

// RetryAfter reads a Retry-After value: seconds, or an HTTP date measured
// against now; 0 when absent or unreadable.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// Snippet quotes the start of a body for an error message.
func Snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	if s == "" {
		return "empty body"
	}
	return strconv.Quote(s)
}

// Describe is the Error text of a client's APIError: "name: METHOD
// host/path: HTTP status code: message; retry after d; hint".
func Describe(name, endpoint string, status int, code, message string, retryAfter time.Duration, hint string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s: ", name, endpoint)
	if status != 0 {
		fmt.Fprintf(&b, "HTTP %d", status)
		if code != "" {
			fmt.Fprintf(&b, " %s", code)
		}
		b.WriteString(": ")
	}
	b.WriteString(strings.TrimRight(message, ". \n"))
	if retryAfter > 0 {
		fmt.Fprintf(&b, "; retry after %v", retryAfter)
	}
	if hint != "" {
		b.WriteString("; ")
		b.WriteString(hint)
	}
	return b.String()
}
