package brave

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"choir/internal/httpapi"
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
	api *httpapi.Caller
	now func() time.Time
}

// New checks cfg and returns a client.
func New(cfg Config) (*Client, error) {
	base, err := httpapi.ParseBase("brave", cfg.Endpoint, DefaultEndpoint)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(cfg.Token) == "" {
		return nil, errors.New("brave: no subscription token: set the secret of config.json's search.brave")
	}
	c := &Client{api: &httpapi.Caller{Base: base, HTTP: cfg.HTTPClient, Timeout: cfg.Timeout, MaxBody: cfg.MaxBody, Secret: cfg.Token,
		Header: http.Header{"Accept": {"application/json"}, "X-Subscription-Token": {cfg.Token}}}, now: cfg.Now}
	if c.api.Timeout <= 0 {
		c.api.Timeout = DefaultTimeout
	}
	if c.api.MaxBody <= 0 {
		c.api.MaxBody = DefaultMaxBody
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c, nil
}

// get performs GET base+path?query and returns the whole body of a 2xx
// answer, or an *APIError.
func (c *Client) get(ctx context.Context, path string, query url.Values) ([]byte, http.Header, error) {
	ans, where, f := c.api.Do(ctx, http.MethodGet, path, query, nil)
	if f != nil {
		return nil, nil, &APIError{Endpoint: f.Endpoint, Status: f.Status, Message: f.Message, Err: f.Err}
	}
	if ans.Status/100 != 2 {
		e := parseError(ans.Status, ans.Body)
		e.Endpoint = where
		e.Message = c.api.Redact(e.Message)
		e.RetryAfter = retryAfter(ans.Header, c.now())
		return nil, nil, e
	}
	return ans.Body, ans.Header, nil
}
