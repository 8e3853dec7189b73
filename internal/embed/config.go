package embed

import (
	"fmt"

	"choir/internal/config"
)

// FromConfig returns the Embedder config.json's "embedding" block asks for:
//
//   - no block: Hashing with DefaultDimensions, the size of the vector columns
//     choird creates without one. The spec's default model needs an OpenRouter
//     key an installation may not have; without one, memory still works
//     offline, with text search and a hashing embedder that says what it is.
//   - provider "hashing": Hashing with the configured dimensions.
//   - any other provider: a Client for its endpoint, model and dimensions,
//     with the key from the secret it names.
//
// choird logs Describe of the result at its start.
func FromConfig(cfg *config.Embedding, secrets config.Secrets) (Embedder, error) {
	switch {
	case cfg == nil:
		return Hashing{Dims: DefaultDimensions}, nil
	case cfg.Provider == config.EmbeddingHashing:
		if cfg.Dimensions < 1 {
			return nil, fmt.Errorf("embed: embedding.dimensions is %d; want 1 to 2000 for the hashing embedder", cfg.Dimensions)
		}
		return Hashing{Dims: cfg.Dimensions}, nil
	}
	var key string
	if cfg.Secret != "" {
		var ok bool
		if key, ok = secrets[cfg.Secret]; !ok {
			return nil, fmt.Errorf("embed: embedding.secret names %q, which secrets.json lacks; run `choirctl secret set %s`", cfg.Secret, cfg.Secret)
		}
	}
	return NewClient(ClientConfig{Endpoint: cfg.Endpoint, APIKey: key, Model: cfg.Model, Dimensions: cfg.Dimensions})
}

// Describe says which embedder e is, for a log line or a status: the model and
// the size of its vectors.
func Describe(e Embedder) string {
	if _, ok := e.(Hashing); ok {
		return fmt.Sprintf("%s, %d dimensions", HashingModel, e.Dimensions())
	}
	return fmt.Sprintf("model %q, %d dimensions", e.Model(), e.Dimensions())
}
