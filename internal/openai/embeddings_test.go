package openai_test

import (
	"reflect"
	"testing"

	"choir/internal/openai"
	"choir/testkit/openaitest"
)

func TestEmbedOrdersByIndex(t *testing.T) {
	s := openaitest.New(t)
	c := newClient(t, s)
	s.Expect(openaitest.Embeddings().
		WantModel("text-embedding-3-small").
		WantInputs("zero", "one", "two").
		WantAbsent("dimensions").
		WithUsage(9, 0).
		ReplyEmbeddings(
			openaitest.Embedding{Index: 2, Vector: []float32{2, 2}},
			openaitest.Embedding{Index: 0, Vector: []float32{0, 0}},
			openaitest.Embedding{Index: 1, Vector: []float32{1, 1}},
		))

	got, usage, err := c.Embed(t.Context(), openai.EmbedRequest{Model: "text-embedding-3-small", Input: []string{"zero", "one", "two"}})

	if err != nil {
		t.Fatalf("Embed = %v", err)
	}
	if want := [][]float32{{0, 0}, {1, 1}, {2, 2}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Embed = %v; want %v, in input order", got, want)
	}
	if usage.PromptTokens != 9 || usage.TotalTokens != 9 {
		t.Errorf("usage = %+v; want 9 prompt and total tokens", usage)
	}
}

func TestEmbedDimensions(t *testing.T) {
	s := openaitest.New(t)
	c := newClient(t, s)
	s.Expect(openaitest.Embeddings().Check(func(t testing.TB, req *openaitest.Request) {
		if req.JSON["dimensions"] != 3.0 {
			t.Errorf("dimensions = %v; want 3", req.JSON["dimensions"])
		}
		if req.JSON["encoding_format"] != "float" {
			t.Errorf("encoding_format = %v; want \"float\"", req.JSON["encoding_format"])
		}
	}))
	got, _, err := c.Embed(t.Context(), openai.EmbedRequest{Model: "e", Input: []string{"a", "bb"}, Dimensions: 3})
	if err != nil || len(got) != 2 || len(got[1]) != 3 {
		t.Errorf("Embed = %v, %v; want 2 vectors of 3", got, err)
	}
}

func TestEmbedMalformed(t *testing.T) {
	v := []float32{1, 2, 3}
	tests := []struct {
		name     string
		items    []openaitest.Embedding
		dims     int
		mentions string
	}{
		{"too few", []openaitest.Embedding{{Index: 0, Vector: v}}, 0, "asked for 2 embeddings, got 1"},
		{"repeated index", []openaitest.Embedding{{Index: 0, Vector: v}, {Index: 0, Vector: v}}, 0, "index 0 is repeated"},
		{"index out of range", []openaitest.Embedding{{Index: 0, Vector: v}, {Index: 2, Vector: v}}, 0, "outside 0..1"},
		{"wrong size", []openaitest.Embedding{{Index: 0, Vector: v}, {Index: 1, Vector: v}}, 1536, "has 3 dimensions, want 1536"},
		{"sizes differ", []openaitest.Embedding{{Index: 0, Vector: v}, {Index: 1, Vector: v[:2]}}, 0, "has 2 dimensions, data[0] has 3"},
		{"empty vector", []openaitest.Embedding{{Index: 0, Vector: v}, {Index: 1, Vector: nil}}, 0, "empty embedding"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openaitest.New(t)
			c := newClient(t, s)
			s.Expect(openaitest.Embeddings().ReplyEmbeddings(tt.items...))
			_, _, err := c.Embed(t.Context(), openai.EmbedRequest{Model: "e", Input: []string{"a", "b"}, Dimensions: tt.dims})
			if openai.KindOf(err) != openai.KindMalformed || !contains(err.Error(), tt.mentions, "/v1/embeddings", `model "e"`) {
				t.Errorf("Embed = %v; want KindMalformed mentioning %q", err, tt.mentions)
			}
		})
	}
}

func TestEmbedErrorsAndEmptyBatch(t *testing.T) {
	s := openaitest.New(t)
	c := newClient(t, s)
	if got, _, err := c.Embed(t.Context(), openai.EmbedRequest{Model: "e"}); got != nil || err != nil {
		t.Errorf("Embed(no input) = %v, %v; want nothing, and no request", got, err)
	}
	s.Expect(openaitest.Embeddings().ReplyRateLimited("4"))
	_, _, err := c.Embed(t.Context(), openai.EmbedRequest{Model: "e", Input: []string{"a"}})
	if openai.KindOf(err) != openai.KindRateLimited {
		t.Errorf("Embed = %v; want KindRateLimited", err)
	}
}
