package elevenlabs

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"choir/internal/httpapi"
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
	api *httpapi.Caller
	now func() time.Time
}

// New checks cfg and returns a client.
func New(cfg Config) (*Client, error) {
	base, err := httpapi.ParseBase("elevenlabs", cfg.Endpoint, DefaultEndpoint)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(cfg.APIKey) == "" {
		return nil, errors.New("elevenlabs: no API key: set the secret of the voice profile's TTS provider")
	}
	c := &Client{api: &httpapi.Caller{Base: base, HTTP: cfg.HTTPClient, Timeout: cfg.Timeout, MaxBody: cfg.MaxAudio, Secret: cfg.APIKey,
		Header: http.Header{"Xi-Api-Key": {cfg.APIKey}}}, now: cfg.Now}
	if c.api.Timeout <= 0 {
		c.api.Timeout = DefaultTimeout
	}
	if c.api.MaxBody <= 0 {
		c.api.MaxBody = DefaultMaxAudio
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c, nil
}

// post performs POST base+path?query with a JSON body and returns a 2xx
// answer's body and Content-Type, or an *APIError.
func (c *Client) post(ctx context.Context, path string, query url.Values, body []byte) ([]byte, string, error) {
	ans, where, f := c.api.Do(ctx, http.MethodPost, path, query, body)
	if f != nil {
		return nil, "", &APIError{Endpoint: f.Endpoint, Status: f.Status, Message: f.Message, Err: f.Err}
	}
	if ans.Status/100 != 2 {
		e := parseError(ans.Status, ans.Body)
		e.Endpoint = where
		e.Message = c.api.Redact(e.Message)
		e.RetryAfter = httpapi.RetryAfter(ans.Header.Get("Retry-After"), c.now())
		return nil, "", e
	}
	return ans.Body, ans.Header.Get("Content-Type"), nil
}
