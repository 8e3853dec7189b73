package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// maxResponseBytes bounds what the client reads from one answer. A chat reply
// or a batch of 32 embeddings of 3072 dimensions is far below it.
const maxResponseBytes = 64 << 20

// Config says where and how to reach one OpenAI-compatible endpoint.
// Everything that differs between OpenAI, OpenRouter, vLLM and Ollama is here,
// never in code.
type Config struct {
	// Endpoint is the API base including its version segment, as configured:
	// "https://openrouter.ai/api/v1", "http://127.0.0.1:11434/v1".
	Endpoint string
	// APIKey is sent as "Authorization: Bearer <key>". Empty sends no
	// Authorization header at all (a local vLLM or Ollama).
	APIKey string
	// Header holds extra headers sent with every call, for example
	// OpenRouter's HTTP-Referer and X-Title. The client sets Content-Type,
	// Accept and Authorization itself.
	Header http.Header
	// HTTPClient performs the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Timeout bounds each call, answer body included. Zero leaves only the
	// caller's context to bound it.
	Timeout time.Duration
	// Now is the clock a Retry-After given as an HTTP date is measured
	// against; nil means time.Now.
	Now func() time.Time
}

// Client calls one OpenAI-compatible endpoint. It is safe for concurrent use.
type Client struct {
	base    *url.URL
	header  http.Header
	http    *http.Client
	timeout time.Duration
	now     func() time.Time

	// The API key lives only inside these two closures, so printing a
	// Client (even with %#v) cannot show it.
	authorize func(http.Header)
	redact    func(string) string
}

// New checks cfg and returns a client for its endpoint.
func New(cfg Config) (*Client, error) {
	base, err := url.Parse(strings.TrimSpace(cfg.Endpoint))
	if err != nil {
		// url.Parse quotes the whole URL, which may carry a password: keep
		// only the reason.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("openai: endpoint is not a URL (%v); want e.g. https://openrouter.ai/api/v1", err)
	}
	if (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("openai: endpoint %q is not an http(s) URL with a host; want e.g. https://openrouter.ai/api/v1", base.Redacted())
	}
	c := &Client{
		base:    base,
		header:  cfg.Header.Clone(),
		http:    cfg.HTTPClient,
		timeout: max(cfg.Timeout, 0),
		now:     cfg.Now,
	}
	if c.http == nil {
		c.http = http.DefaultClient
	}
	if c.now == nil {
		c.now = time.Now
	}
	c.authorize, c.redact = keyFuncs(cfg.APIKey)
	return c, nil
}

// keyFuncs returns the only two things the client does with the API key:
// put it in a request and take it out of text bound for an error.
func keyFuncs(key string) (authorize func(http.Header), redact func(string) string) {
	if key == "" {
		return func(http.Header) {}, func(s string) string { return s }
	}
	bearer := "Bearer " + key
	authorize = func(h http.Header) { h.Set("Authorization", bearer) }
	redact = func(s string) string { return strings.ReplaceAll(s, key, "[redacted]") }
	return authorize, redact
}

// call is one endpoint path called for one model: what a request goes to and
// what its errors name.
type call struct {
	url    string // requested, query kept
	where  string // named in errors: host and path, no userinfo or query
	model  string
	redact func(string) string
}

func (c *Client) call(path, model string) call {
	u := c.base.JoinPath(path)
	return call{url: u.String(), where: u.Host + u.EscapedPath(), model: model, redact: c.redact}
}

// fail builds the error for this call. Every text that reaches it passes
// through redact.
func (k call) fail(kind Kind, status int, msg string, cause error) *APIError {
	return &APIError{
		Kind:     kind,
		Endpoint: k.where,
		Model:    k.model,
		Status:   status,
		Message:  k.redact(msg),
		Err:      cause,
	}
}

// errCallTimeout is the cause of a context ended by Config.Timeout; it wraps
// context.DeadlineExceeded so errors.Is keeps working on it.
var errCallTimeout = fmt.Errorf("openai: per-call timeout: %w", context.DeadlineExceeded)

// post sends a JSON body to the call's URL and returns a 2xx answer's body;
// any other outcome is an *APIError.
func (c *Client) post(ctx context.Context, k call, body []byte) ([]byte, error) {
	return c.postAs(ctx, k, "application/json", body, nil)
}

// postAs is post with the body's Content-Type given (a multipart form's
// carries its boundary) and the request's own headers, which replace
// Config.Header's of the same name.
func (c *Client) postAs(ctx context.Context, k call, contentType string, body []byte, header http.Header) ([]byte, error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, c.timeout, errCallTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, k.url, bytes.NewReader(body))
	if err != nil {
		return nil, k.fail(KindBadRequest, 0, "not sent: "+err.Error(), err)
	}
	for name, values := range c.header {
		for _, v := range values {
			req.Header.Add(name, v)
		}
	}
	for name := range header {
		req.Header.Del(name)
	}
	for name, values := range header {
		for _, v := range values {
			req.Header.Add(name, v)
		}
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	c.authorize(req.Header)

	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.transportFailure(ctx, k, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, c.transportFailure(ctx, k, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, c.statusFailure(k, resp, data)
	}
	if len(data) > maxResponseBytes {
		return nil, k.fail(KindMalformed, resp.StatusCode, fmt.Sprintf("answer is larger than %d MiB", maxResponseBytes>>20), nil)
	}
	return data, nil
}

// transportFailure classifies an exchange that produced no complete answer.
func (c *Client) transportFailure(ctx context.Context, k call, err error) error {
	cause := err
	var ue *url.Error
	if errors.As(err, &ue) {
		cause = ue.Err // url.Error repeats the URL; the message names it already
	}
	var ne net.Error
	switch {
	case errors.Is(context.Cause(ctx), errCallTimeout):
		return k.fail(KindTimeout, 0, fmt.Sprintf("no complete answer within %v (the per-call timeout)", c.timeout), err)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return k.fail(KindTimeout, 0, "the caller's deadline passed before a complete answer", err)
	case errors.Is(ctx.Err(), context.Canceled):
		return k.fail(KindCanceled, 0, "the call was canceled", err)
	case errors.As(err, &ne) && ne.Timeout():
		return k.fail(KindTimeout, 0, cause.Error(), err)
	}
	return k.fail(KindNetwork, 0, cause.Error(), err)
}

// statusFailure turns a non-2xx answer into an *APIError. An answer whose
// error object has no message (only a type or a code) is quoted instead.
func (c *Client) statusFailure(k call, resp *http.Response, data []byte) error {
	b := parseErrorBody(data)
	msg := b.Message
	if msg == "" {
		msg = k.excerpt(data)
	}
	e := k.fail(classify(resp.StatusCode, b), resp.StatusCode, msg, nil)
	e.Type, e.Code = k.redact(b.Type), k.redact(b.Code)
	e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), c.now())
	return e
}

// excerpt describes a body that is not an error object: its first bytes on
// one line, enough to recognise a proxy's HTML page or a truncated answer.
// The key is redacted before the body is cut, so that a page echoing it
// across the cut cannot leak its first part.
func (k call) excerpt(data []byte) string {
	const limit = 160
	s := strings.Join(strings.Fields(k.redact(strings.ToValidUTF8(string(data), "?"))), " ")
	switch {
	case s == "":
		return fmt.Sprintf("body of %d bytes holds no text", len(data))
	case len(s) > limit:
		cut := limit
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		return fmt.Sprintf("body (%d bytes) begins %q…", len(data), s[:cut])
	}
	return fmt.Sprintf("body %q", s)
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
