package embed

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Embedder turns texts into vectors of Dimensions() numbers each.
type Embedder interface {
	// Embed returns one vector per text, in the order of texts.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Dimensions is the size of every vector Embed returns.
	Dimensions() int
	// Model names the model, as logged and stored with the vectors.
	Model() string
}

const (
	// DefaultModel and DefaultDimensions are the spec's default embedding
	// model (§11.9): text-embedding-3-small through OpenRouter.
	DefaultModel      = "text-embedding-3-small"
	DefaultDimensions = 1536
	// MaxBatch is the most texts the queue sends in one call (§11.9).
	MaxBatch = 32
	// maxInputs is OpenAI's limit on the inputs of one request.
	maxInputs = 2048
)

// ErrMalformed marks an answer with a missing or wrongly sized vector.
var ErrMalformed = errors.New("malformed answer")

// CheckVectors checks what an Embedder answered for n texts: n vectors, each
// of dims numbers. Its errors name the index and the sizes.
func CheckVectors(vecs [][]float32, n, dims int) error {
	if len(vecs) != n {
		return fmt.Errorf("embed: asked for %d vectors, got %d: %w", n, len(vecs), ErrMalformed)
	}
	for i, v := range vecs {
		if len(v) != dims {
			return fmt.Errorf("embed: vector %d has %d dimensions, want %d (the configured embedding.dimensions): %w", i, len(v), dims, ErrMalformed)
		}
	}
	return nil
}

// checkTexts refuses what no provider embeds: an empty batch is fine, an
// empty text is not (OpenAI answers 400 for it, failing the whole batch).
func checkTexts(texts []string) error {
	if len(texts) > maxInputs {
		return fmt.Errorf("embed: %d texts in one call, over the limit of %d; send them in batches", len(texts), maxInputs)
	}
	for i, t := range texts {
		if strings.TrimSpace(t) == "" {
			return fmt.Errorf("embed: text %d is empty; providers refuse to embed an empty text", i)
		}
	}
	return nil
}
