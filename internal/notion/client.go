package notion

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"choir/internal/httpapi"
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
	api *httpapi.Caller
	now func() time.Time
}

// New checks cfg and returns a client.
func New(cfg Config) (*Client, error) {
	base, err := httpapi.ParseBase("notion", cfg.Endpoint, DefaultEndpoint)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(cfg.Token) == "" {
		return nil, errors.New("notion: no integration token: set the secret of the Notion integration")
	}
	c := &Client{api: &httpapi.Caller{Base: base, HTTP: cfg.HTTPClient, Timeout: cfg.Timeout, MaxBody: cfg.MaxBody, Secret: cfg.Token,
		Header: http.Header{"Authorization": {"Bearer " + cfg.Token}, "Notion-Version": {Version}, "Accept": {"application/json"}}}, now: cfg.Now}
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

// do performs one request and decodes a 2xx answer into out, or returns
// an *APIError.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return &APIError{Endpoint: method + " " + path, Message: "encode the request", Err: err}
		}
	}
	ans, where, f := c.api.Do(ctx, method, path, query, body)
	if f != nil {
		return &APIError{Endpoint: f.Endpoint, Status: f.Status, Message: f.Message, Err: f.Err}
	}
	if ans.Status/100 != 2 {
		e := parseError(ans.Status, ans.Body)
		e.Endpoint = where
		e.Message = c.api.Redact(e.Message)
		e.RetryAfter = httpapi.RetryAfter(ans.Header.Get("Retry-After"), c.now())
		return e
	}
	if err := json.Unmarshal(ans.Body, out); err != nil {
		return &APIError{Endpoint: where, Status: ans.Status, Message: "the answer is not the JSON Notion sends: " + httpapi.Snippet(ans.Body), Err: err}
	}
	return nil
}

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
