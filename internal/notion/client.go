package notion

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultEndpoint is the API base of Notion.
const DefaultEndpoint = "https://api.notion.com/v1"

// Version is the Notion-Version the client speaks.
const Version = "2022-06-28"

// Defaults of Config.
const (
	DefaultTimeout = 30 * time.Second
	DefaultMaxBody = 8 << 20
)

// Config says where and how to reach the API.
type Config struct {
	// Endpoint is the API base; "" means DefaultEndpoint.
	Endpoint string
	// Token is the integration's secret, sent as a Bearer token.
	Token string
	// HTTPClient performs the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Timeout bounds each request, body included; 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxBody bounds each answer read; 0 means DefaultMaxBody.
	MaxBody int64
	// Now is the clock an HTTP-date Retry-After is measured against.
	Now func() time.Time
}

// Client calls the Notion API. It is safe for concurrent use.
type Client struct {
	base    *url.URL
	token   string
	http    *http.Client
	timeout time.Duration
	maxBody int64
	now     func() time.Time
}

// New checks cfg and returns a client.
func New(cfg Config) (*Client, error) {
	raw := strings.TrimSpace(cfg.Endpoint)
	if raw == "" {
		raw = DefaultEndpoint
	}
	base, err := url.Parse(raw)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("notion: endpoint %q is not an http(s) URL with a host; want e.g. %s", raw, DefaultEndpoint)
	}
	if strings.TrimSpace(cfg.Token) == "" {
		return nil, errors.New("notion: no integration token: set the secret of the Notion integration")
	}
	c := &Client{base: base, token: cfg.Token, http: cfg.HTTPClient, timeout: cfg.Timeout, maxBody: cfg.MaxBody, now: cfg.Now}
	if c.http == nil {
		c.http = http.DefaultClient
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.maxBody <= 0 {
		c.maxBody = DefaultMaxBody
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c, nil
}

// do performs one request and decodes a 2xx answer into out, or returns
// an *APIError.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawPath = ""
	u.RawQuery = query.Encode()
	where := method + " " + u.Host + u.EscapedPath()
	fail := func(status int, msg string, err error) *APIError {
		return &APIError{Endpoint: where, Status: status, Message: c.redact(msg), Err: err}
	}
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return fail(0, "encode the request", err)
		}
		body = bytes.NewReader(data)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return fail(0, "build the request", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Notion-Version", Version)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fail(0, c.transportMessage(ctx, err), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		return fail(resp.StatusCode, "reading the answer: "+c.transportMessage(ctx, err), err)
	}
	if int64(len(data)) > c.maxBody {
		return fail(resp.StatusCode, fmt.Sprintf("the answer is larger than %d bytes", c.maxBody), ErrTooLarge)
	}
	if resp.StatusCode/100 != 2 {
		e := parseError(resp.StatusCode, data)
		e.Endpoint = where
		e.Message = c.redact(e.Message)
		e.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), c.now())
		return e
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fail(resp.StatusCode, "the answer is not the JSON Notion sends: "+snippet(data), err)
	}
	return nil
}

func (c *Client) transportMessage(ctx context.Context, err error) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no complete answer within %v", c.timeout)
	}
	if errors.Is(err, context.Canceled) {
		return "canceled"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return c.redact(err.Error())
}

func (c *Client) redact(s string) string { return strings.ReplaceAll(s, c.token, "[REDACTED]") }

// list is the envelope of every list answer.
type list struct {
	Object     string            `json:"object"`
	Results    []json.RawMessage `json:"results"`
	NextCursor *string           `json:"next_cursor"`
	HasMore    bool              `json:"has_more"`
}

func (l list) cursor() string {
	if l.HasMore && l.NextCursor != nil {
		return *l.NextCursor
	}
	return ""
}

// MaxPageSize is the largest page_size Notion accepts.
const MaxPageSize = 100
