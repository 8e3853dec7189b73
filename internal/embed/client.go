package embed

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"choir/internal/openai"
)

// DefaultTimeout bounds one embeddings call when ClientConfig.Timeout is zero.
const DefaultTimeout = 60 * time.Second

// ClientConfig says which OpenAI-compatible endpoint and model to embed with.
type ClientConfig struct {
	// Endpoint is the API base with its version segment, e.g.
	// "https://openrouter.ai/api/v1"; the client posts to <Endpoint>/embeddings.
	Endpoint string
	// APIKey is sent as a Bearer token; empty sends none (a local server).
	APIKey string
	// Model is the embedding model id, e.g. "text-embedding-3-small".
	Model string
	// Dimensions is the size of the vectors, sent as "dimensions" and
	// checked on every answer.
	Dimensions int
	// Timeout bounds each call; zero means DefaultTimeout.
	Timeout time.Duration
	// HTTPClient performs the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Header holds extra headers sent with every call.
	Header http.Header
}

// Client embeds through an OpenAI-compatible /embeddings endpoint. It is safe
// for concurrent use and never shows the API key, printed or in an error.
type Client struct {
	api   *openai.Client
	model string
	dims  int
}

var _ Embedder = (*Client)(nil)

// NewClient checks cfg and returns a client.
func NewClient(cfg ClientConfig) (*Client, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("embed: no embedding model named; set embedding.model in config.json, e.g. text-embedding-3-small")
	}
	if cfg.Dimensions < 1 {
		return nil, fmt.Errorf("embed: embedding.dimensions is %d; want the size of the model's vectors, e.g. 1536", cfg.Dimensions)
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	api, err := openai.New(openai.Config{
		Endpoint:   cfg.Endpoint,
		APIKey:     cfg.APIKey,
		Header:     cfg.Header,
		HTTPClient: cfg.HTTPClient,
		Timeout:    timeout,
	})
	if err != nil {
		return nil, fmt.Errorf("embed: embedding.endpoint: %w", err)
	}
	return &Client{api: api, model: cfg.Model, dims: cfg.Dimensions}, nil
}

// Embed asks for one vector per text. An empty text is refused before
// anything is sent; every failure of the call itself is an *openai.APIError
// (see Retryable), naming the endpoint and model, with the HTTP status, the
// provider's message and Retry-After.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	if err := checkTexts(texts); err != nil {
		return nil, err
	}
	vecs, _, err := c.api.Embed(ctx, openai.EmbedRequest{Model: c.model, Input: texts, Dimensions: c.dims})
	if err != nil {
		return nil, err
	}
	return vecs, CheckVectors(vecs, len(texts), c.dims)
}

// Dimensions is the configured vector size.
func (c *Client) Dimensions() int { return c.dims }

// Model is the configured model id.
func (c *Client) Model() string { return c.model }

// String describes the client without its key.
func (c *Client) String() string {
	return fmt.Sprintf("embed.Client(model %q, %d dimensions)", c.model, c.dims)
}

// Retryable reports whether a failed Embed is worth trying again: a rate
// limit, a server error, a timeout, a network failure or a malformed answer.
// A refused key, a bad request, a content filter or a canceled call is not.
func Retryable(err error) bool {
	if errors.Is(err, ErrMalformed) {
		return true
	}
	switch openai.KindOf(err) {
	case openai.KindRateLimited, openai.KindServerError, openai.KindTimeout, openai.KindNetwork, openai.KindMalformed:
		return true
	}
	return false
}

// retryAfter is the wait a 429 asked for, 0 when none.
func retryAfter(err error) time.Duration {
	if e, ok := errors.AsType[*openai.APIError](err); ok {
		return e.RetryAfter
	}
	return 0
}
