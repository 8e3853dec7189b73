package brave

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultEndpoint is the API base of Brave Search.
const DefaultEndpoint = "https://api.search.brave.com/res/v1"

// Defaults of Config.
const (
	DefaultTimeout = 30 * time.Second
	DefaultMaxBody = 4 << 20
)

// Config says where and how to reach the API.
type Config struct {
	// Endpoint is the API base; "" means DefaultEndpoint.
	Endpoint string
	// Token is the subscription token (X-Subscription-Token).
	Token string
	// HTTPClient performs the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Timeout bounds each call, body included; 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxBody bounds the answer read; 0 means DefaultMaxBody.
	MaxBody int64
	// Now is the clock an HTTP-date Retry-After is measured against.
	Now func() time.Time
}

// Client calls the Brave Search API. It is safe for concurrent use.
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
		return nil, fmt.Errorf("brave: endpoint %q is not an http(s) URL with a host; want e.g. %s", raw, DefaultEndpoint)
	}
	if strings.TrimSpace(cfg.Token) == "" {
		return nil, errors.New("brave: no subscription token: set the secret of config.json's search.brave")
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

// get performs GET base+path?query and returns the whole body of a 2xx
// answer, or an *APIError.
func (c *Client) get(ctx context.Context, path string, query url.Values) ([]byte, http.Header, error) {
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawQuery = query.Encode()
	where := u.Host + u.Path
	fail := func(status int, msg string, err error) *APIError {
		return &APIError{Endpoint: where, Status: status, Message: c.redact(msg), Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, nil, fail(0, "build the request", err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Subscription-Token", c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, fail(0, c.transportMessage(ctx, err), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		return nil, nil, fail(resp.StatusCode, "reading the answer: "+c.transportMessage(ctx, err), err)
	}
	if int64(len(body)) > c.maxBody {
		return nil, nil, fail(resp.StatusCode, fmt.Sprintf("the answer is larger than %d bytes", c.maxBody), ErrTooLarge)
	}
	if resp.StatusCode/100 != 2 {
		e := parseError(resp.StatusCode, body)
		e.Endpoint = where
		e.Message = c.redact(e.Message)
		e.RetryAfter = retryAfter(resp.Header, c.now())
		return nil, nil, e
	}
	return body, resp.Header, nil
}

// transportMessage describes a failure to get an answer.
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

func (c *Client) redact(s string) string {
	if c.token == "" {
		return s
	}
	return strings.ReplaceAll(s, c.token, "[REDACTED]")
}
