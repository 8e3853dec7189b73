package embed_test

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"choir/internal/embed"
)

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

func hashVec(t testing.TB, dims int, text string) []float32 {
	t.Helper()
	v, err := embed.Hashing{Dims: dims}.Embed(t.Context(), []string{text})
	if err != nil {
		t.Fatalf("Hashing.Embed(%q) = %v", text, err)
	}
	return v[0]
}

func TestHashingRelatedTextsScoreHigher(t *testing.T) {
	tests := []struct{ query, related, unrelated string }{
		{"the deploy failed on the staging server", "staging server deploy failure", "grandma's apple pie recipe with cinnamon"},
		{"User prefers dark mode in the editor", "the user's editor preference: dark mode", "quarterly tax filing deadline is in April"},
		{"postgres connection refused on port 5432", "Connection refused: Postgres at port 5432", "the cat sat on the windowsill"},
		{"invoice #4411 for ACME Corp", "ACME Corp invoice 4411 paid", "hiking trails near the lake"},
		// morphology: trigrams match word fragments the words alone miss
		{"deploying", "deployment", "banana"},
	}
	for _, dims := range []int{64, 256, 1536} {
		for _, tt := range tests {
			q, r, u := hashVec(t, dims, tt.query), hashVec(t, dims, tt.related), hashVec(t, dims, tt.unrelated)
			if rel, unrel := cosine(q, r), cosine(q, u); rel <= unrel {
				t.Errorf("dims %d: cosine(%q, related %q) = %.3f, not above cosine(unrelated %q) = %.3f", dims, tt.query, tt.related, rel, tt.unrelated, unrel)
			}
		}
	}
}

func TestHashingVectors(t *testing.T) {
	h := embed.Hashing{Dims: 384}
	texts := []string{"Hello, World", "hello world", "", "!!! ???", strings.Repeat("long text ", 1000), "ünïcödé 日本語のテキスト"}
	a, err := h.Embed(t.Context(), texts)
	if err != nil {
		t.Fatalf("Embed = %v", err)
	}
	b, _ := h.Embed(t.Context(), texts)
	if !reflect.DeepEqual(a, b) {
		t.Error("Embed twice gave different vectors; want the same text to give the same vector")
	}
	if err := embed.CheckVectors(a, len(texts), 384); err != nil {
		t.Fatal(err)
	}
	for i, v := range a {
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if math.Abs(n-1) > 1e-5 {
			t.Errorf("|vector %d (%.20q)|² = %v; want 1 (a unit vector, even without words)", i, texts[i], n)
		}
	}
	if cosine(a[0], a[1]) < 0.999 {
		t.Errorf("cosine(%q, %q) = %v; want 1 (case and punctuation ignored)", texts[0], texts[1], cosine(a[0], a[1]))
	}
	if h.Dimensions() != 384 || !strings.Contains(h.Model(), "not semantic") || !strings.Contains(h.Model(), "offline") {
		t.Errorf("Dimensions, Model = %d, %q; want 384 and a name saying offline and not semantic", h.Dimensions(), h.Model())
	}
}

func TestHashingRefusesNoDimensions(t *testing.T) {
	_, err := embed.Hashing{}.Embed(t.Context(), []string{"x"})
	if err == nil || !strings.Contains(err.Error(), "embedding.dimensions") {
		t.Errorf("Hashing{}.Embed = %v; want an error naming embedding.dimensions", err)
	}
}
