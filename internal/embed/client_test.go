package embed_test

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"choir/internal/config"
	"choir/internal/embed"
	"choir/internal/openai"
	"choir/testkit/embedtest"
)

const testKey = "sk-test-0123456789abcdef"

func newClient(t testing.TB, s *embedtest.Server, dims int) *embed.Client {
	t.Helper()
	c, err := embed.NewClient(embed.ClientConfig{Endpoint: s.URL(), APIKey: testKey, Model: "text-embedding-3-small", Dimensions: dims, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("NewClient = %v", err)
	}
	return c
}

func TestClientEmbedsInInputOrder(t *testing.T) {
	s := embedtest.New(t)
	s.RequireKey(testKey)
	s.Fail(embedtest.OutOfOrder())
	c := newClient(t, s, 16)
	texts := []string{"zero", "one", "two", "three"}

	got, err := c.Embed(t.Context(), texts)

	if err != nil {
		t.Fatalf("Embed = %v", err)
	}
	want, _ := embed.Hashing{Dims: 16}.Embed(t.Context(), texts)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Embed = %v; want the fake's vectors in input order %v", got, want)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("requests = %d; want 1", len(reqs))
	}
	r := reqs[0]
	if d, ok := r.Dimensions(); r.Model() != "text-embedding-3-small" || !ok || d != 16 || r.EncodingFormat() != "float" || !reflect.DeepEqual(r.Inputs(), texts) {
		t.Errorf("request = %s; want model, input, dimensions 16 and encoding_format float", r.Body)
	}
	if r.Authorization() != "Bearer "+testKey {
		t.Errorf("Authorization = %q; want the key as a Bearer token", r.Authorization())
	}
	if c.Model() != "text-embedding-3-small" || c.Dimensions() != 16 {
		t.Errorf("Model, Dimensions = %q, %d", c.Model(), c.Dimensions())
	}
}

func TestClientNeverShowsTheKey(t *testing.T) {
	s := embedtest.New(t)
	s.RequireKey("sk-the-right-one")
	c := newClient(t, s, 8)

	_, err := c.Embed(t.Context(), []string{"hello"})

	if openai.KindOf(err) != openai.KindAuth || embed.Retryable(err) {
		t.Errorf("Embed with a wrong key = %v; want an authentication error, not retried", err)
	}
	for _, shown := range []string{fmt.Sprint(err), fmt.Sprintf("%v %+v %#v %s", c, c, c, c)} {
		if strings.Contains(shown, testKey) || strings.Contains(shown, testKey[3:]) {
			t.Errorf("the API key is shown: %s", shown)
		}
	}
	if !strings.Contains(err.Error(), "[redacted]") || !strings.Contains(err.Error(), "check the API key") {
		t.Errorf("Embed = %v; want the echoed key redacted and a hint to check it", err)
	}
}

func TestClientFaults(t *testing.T) {
	deep := strings.Repeat(`{"data":[`, 100) // nesting past jsonlimit's 64 levels
	tests := []struct {
		name      string
		fault     embedtest.Fault
		kind      openai.Kind
		retryable bool
		mentions  []string
	}{
		{"429 with Retry-After", embedtest.RateLimited("7"), openai.KindRateLimited, true, []string{"HTTP 429", "retry after 7s"}},
		{"429 without Retry-After", embedtest.RateLimited(""), openai.KindRateLimited, true, []string{"HTTP 429"}},
		{"500", embedtest.ServerError(), openai.KindServerError, true, []string{"HTTP 500", "server had an error"}},
		{"503", embedtest.Status(http.StatusServiceUnavailable, "server_error", "", "overloaded"), openai.KindServerError, true, []string{"HTTP 503", "overloaded"}},
		{"400", embedtest.Status(http.StatusBadRequest, "invalid_request_error", "context_length_exceeded", "input too long"), openai.KindBadRequest, false, []string{"HTTP 400", "input too long"}},
		{"truncated JSON", embedtest.Malformed(`{"object":"list","data":[{"index":0,"embedding":[0.1,`), openai.KindMalformed, true, []string{"not an embedding list"}},
		{"HTML page", embedtest.Malformed(`<html><body>Bad gateway</body></html>`), openai.KindMalformed, true, []string{"Bad gateway"}},
		{"empty body", embedtest.Malformed(``), openai.KindMalformed, true, []string{"not an embedding list"}},
		{"nested too deep", embedtest.Malformed(deep), openai.KindMalformed, true, []string{"nested deeper than the limit of 64"}},
		{"embedding not numbers", embedtest.Malformed(`{"data":[{"index":0,"embedding":"AAAA"},{"index":1,"embedding":"AAAA"},{"index":2,"embedding":"AAAA"}]}`), openai.KindMalformed, true, []string{"not an embedding list"}},
		{"error inside a 200", embedtest.Malformed(`{"error":{"message":"upstream failed","code":502}}`), openai.KindServerError, true, []string{"upstream failed"}},
		{"a vector too few", embedtest.WrongCount(), openai.KindMalformed, true, []string{"asked for 3 embeddings, got 2"}},
		{"wrong dimensions", embedtest.WrongDimensions(5), openai.KindMalformed, true, []string{"(index 0) has 5 dimensions, want 8"}},
		{"no answer in time", embedtest.Hang(), openai.KindTimeout, true, []string{"no complete answer within"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := embedtest.New(t)
			s.Fail(tt.fault)
			c, err := embed.NewClient(embed.ClientConfig{Endpoint: s.URL(), APIKey: testKey, Model: "m", Dimensions: 8, Timeout: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}

			got, err := c.Embed(t.Context(), []string{"a", "b", "c"})

			if got != nil || openai.KindOf(err) != tt.kind || embed.Retryable(err) != tt.retryable {
				t.Fatalf("Embed = %v, %v; want no vectors and a %v error (retryable %v)", got, err, tt.kind, tt.retryable)
			}
			msg := err.Error()
			for _, m := range append(tt.mentions, "/v1/embeddings", `model "m"`) {
				if !strings.Contains(msg, m) {
					t.Errorf("Embed = %v; want it to mention %q", err, m)
				}
			}
			if strings.Contains(msg, testKey) {
				t.Errorf("Embed = %v; shows the key", err)
			}
		})
	}
}

func TestClientRefusesBeforeSending(t *testing.T) {
	s := embedtest.New(t)
	c := newClient(t, s, 8)
	tests := []struct {
		name     string
		texts    []string
		mentions string
	}{
		{"empty text", []string{"a", "", "c"}, "text 1 is empty"},
		{"blank text", []string{"a", " \n\t"}, "text 1 is empty"},
		{"over the API's limit", make([]string, 2049), "2049 texts in one call, over the limit of 2048"},
	}
	for _, tt := range tests {
		if _, err := c.Embed(t.Context(), tt.texts); err == nil || !strings.Contains(err.Error(), tt.mentions) {
			t.Errorf("%s: Embed = %v; want an error mentioning %q", tt.name, err, tt.mentions)
		}
	}
	if got, err := c.Embed(t.Context(), nil); got != nil || err != nil {
		t.Errorf("Embed(nothing) = %v, %v; want nothing", got, err)
	}
	if n := len(s.Requests()); n != 0 {
		t.Errorf("requests = %d; want none sent", n)
	}
}

func TestNewClientRefusals(t *testing.T) {
	tests := []struct {
		name     string
		cfg      embed.ClientConfig
		mentions string
	}{
		{"no model", embed.ClientConfig{Endpoint: "http://127.0.0.1:1/v1", Dimensions: 8}, "embedding.model"},
		{"no dimensions", embed.ClientConfig{Endpoint: "http://127.0.0.1:1/v1", Model: "m"}, "embedding.dimensions is 0"},
		{"endpoint not a URL", embed.ClientConfig{Endpoint: "openrouter.ai/api/v1", Model: "m", Dimensions: 8}, "embedding.endpoint"},
		{"endpoint with a password", embed.ClientConfig{Endpoint: "ftp://user:hunter2@host/v1", Model: "m", Dimensions: 8}, "not an http(s) URL"},
	}
	for _, tt := range tests {
		_, err := embed.NewClient(tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.mentions) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: NewClient = %v; want an error mentioning %q (and no password)", tt.name, err, tt.mentions)
		}
	}
}

func TestFromConfig(t *testing.T) {
	s := embedtest.New(t)
	s.RequireKey(testKey)
	secrets := config.Secrets{"openrouter-key": testKey}

	e, err := embed.FromConfig(nil, secrets)
	if err != nil || e.Dimensions() != embed.DefaultDimensions || e.Model() != embed.HashingModel {
		t.Errorf("FromConfig(no embedding block) = %v, %v; want the hashing embedder with %d dimensions", e, err, embed.DefaultDimensions)
	}
	if d := embed.Describe(e); !strings.Contains(d, "not semantic") || !strings.Contains(d, "1536") {
		t.Errorf("Describe = %q; want it to say not semantic and 1536", d)
	}

	e, err = embed.FromConfig(&config.Embedding{Provider: config.EmbeddingHashing, Dimensions: 64}, nil)
	if err != nil || e.Dimensions() != 64 || e.Model() != embed.HashingModel {
		t.Errorf("FromConfig(hashing, 64) = %v, %v; want the hashing embedder with 64 dimensions", e, err)
	}

	cfg := &config.Embedding{Provider: "openrouter", Model: "text-embedding-3-small", Dimensions: 8, Endpoint: s.URL(), Secret: "openrouter-key"}
	e, err = embed.FromConfig(cfg, secrets)
	if err != nil {
		t.Fatalf("FromConfig(openrouter) = %v", err)
	}
	if vecs, err := e.Embed(t.Context(), []string{"hello"}); err != nil || len(vecs) != 1 || len(vecs[0]) != 8 {
		t.Errorf("Embed through the configured client = %v, %v; want one vector of 8 (the key sent)", vecs, err)
	}
	if d := embed.Describe(e); d != `model "text-embedding-3-small", 8 dimensions` {
		t.Errorf("Describe = %q", d)
	}

	cfg.Secret = "missing-key"
	if _, err := embed.FromConfig(cfg, secrets); err == nil || !strings.Contains(err.Error(), "choirctl secret set missing-key") {
		t.Errorf("FromConfig(missing secret) = %v; want an error saying how to set it", err)
	}
	if _, err := embed.FromConfig(&config.Embedding{Provider: config.EmbeddingHashing}, nil); err == nil || !strings.Contains(err.Error(), "embedding.dimensions is 0") {
		t.Errorf("FromConfig(hashing, 0 dimensions) = %v; want a refusal naming embedding.dimensions", err)
	}
}
