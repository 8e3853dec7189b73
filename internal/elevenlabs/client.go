package elevenlabs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultEndpoint is the API base of ElevenLabs.
const DefaultEndpoint = "https://api.elevenlabs.io/v1"

// Defaults of Config.
const (
	DefaultTimeout = 2 * time.Minute
	// DefaultMaxAudio bounds the audio of one call: 5,000 characters of
	// speech at 192 kb/s are about 8 MB.
	DefaultMaxAudio = 32 << 20
)

// Config says where and how to reach the API.
type Config struct {
	// Endpoint is the API base; "" means DefaultEndpoint.
	Endpoint string
	// APIKey is sent as xi-api-key.
	APIKey string
	// HTTPClient performs the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Timeout bounds each call, body included; 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxAudio bounds the answer read; 0 means DefaultMaxAudio.
	MaxAudio int64
	// Now is the clock an HTTP-date Retry-After is measured against.
	Now func() time.Time
}

// Client calls the ElevenLabs API. It is safe for concurrent use.
type Client struct {
	base    *url.URL
	key     string
	http    *http.Client
	timeout time.Duration
	max     int64
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
		return nil, fmt.Errorf("elevenlabs: endpoint %q is not an http(s) URL with a host; want e.g. %s", raw, DefaultEndpoint)
	}
	if strings.TrimSpace(cfg.APIKey) == "" {
		return nil, errors.New("elevenlabs: no API key: set the secret of the voice profile's TTS provider")
	}
	c := &Client{base: base, key: cfg.APIKey, http: cfg.HTTPClient, timeout: cfg.Timeout, max: cfg.MaxAudio, now: cfg.Now}
	if c.http == nil {
		c.http = http.DefaultClient
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.max <= 0 {
		c.max = DefaultMaxAudio
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c, nil
}

// post performs POST base+path?query with a JSON body and returns a 2xx
// answer's body and Content-Type, or an *APIError.
func (c *Client) post(ctx context.Context, path string, query url.Values, body []byte) ([]byte, string, error) {
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawPath = ""
	u.RawQuery = query.Encode()
	where := u.Host + u.EscapedPath()
	fail := func(status int, msg string, err error) *APIError {
		return &APIError{Endpoint: where, Status: status, Message: c.redact(msg), Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, "", fail(0, "build the request", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("xi-api-key", c.key)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, "", fail(0, c.transportMessage(ctx, err), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.max+1))
	if err != nil {
		return nil, "", fail(resp.StatusCode, "reading the answer: "+c.transportMessage(ctx, err), err)
	}
	if int64(len(data)) > c.max {
		return nil, "", fail(resp.StatusCode, fmt.Sprintf("the answer is larger than %d bytes", c.max), ErrTooLarge)
	}
	if resp.StatusCode/100 != 2 {
		e := parseError(resp.StatusCode, data)
		e.Endpoint = where
		e.Message = c.redact(e.Message)
		e.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), c.now())
		return nil, "", e
	}
	return data, resp.Header.Get("Content-Type"), nil
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

func (c *Client) redact(s string) string { return strings.ReplaceAll(s, c.key, "[REDACTED]") }
