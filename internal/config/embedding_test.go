package config

import (
	"strings"
	"testing"
)

func TestHashingEmbeddingNeedsNoEndpointOrKey(t *testing.T) {
	example, secrets := readExample(t)
	data := mutate(t, example, func(m map[string]any) {
		m["embedding"] = map[string]any{"provider": EmbeddingHashing, "dimensions": 256}
	})
	c, err := Parse(data)
	if err == nil {
		err = Validate(c, secrets)
	}
	if err != nil {
		t.Fatalf("Validate(hashing embedding, no model, endpoint or secret) = %v; want nil", err)
	}
	if c.Embedding.Provider != EmbeddingHashing || c.Embedding.Dimensions != 256 {
		t.Errorf("embedding = %+v; want the hashing provider with 256 dimensions", c.Embedding)
	}
}

func TestEmbeddingRefusals(t *testing.T) {
	example, secrets := readExample(t)
	tests := []struct {
		name      string
		embedding map[string]any
		path      string
		contains  string
	}{
		{"hashing without dimensions", map[string]any{"provider": EmbeddingHashing}, "embedding.dimensions", "want 1 to 2000"},
		{"remote provider without endpoint", map[string]any{"provider": "openrouter", "model": "text-embedding-3-small", "dimensions": 1536}, "embedding.endpoint", "required: an http:// or https:// URL"},
		{"remote provider without model", map[string]any{"provider": "openrouter", "dimensions": 1536, "endpoint": "https://openrouter.ai/api/v1"}, "embedding.model", "text-embedding-3-small"},
		{"no provider", map[string]any{"dimensions": 1536}, "embedding.provider", `"hashing" for the offline embedder`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := mutate(t, example, func(m map[string]any) { m["embedding"] = tc.embedding })
			c, err := Parse(data)
			if err == nil {
				err = Validate(c, secrets)
			}
			ps, ok := err.(Problems)
			if !ok {
				t.Fatalf("Validate = %v; want Problems", err)
			}
			for _, p := range ps {
				if p.Path == tc.path && strings.Contains(p.Message, tc.contains) {
					return
				}
			}
			t.Errorf("Validate = %v; want a problem at %q containing %q", err, tc.path, tc.contains)
		})
	}
}
