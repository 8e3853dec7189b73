package embed

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"unicode"
)

// HashingModel is what Hashing.Model says: plainly not a semantic model.
const HashingModel = "hashing (offline, not semantic)"

// Hashing is a deterministic offline embedder: the feature hashing trick
// over lower-cased words (weight 1) and the character trigrams of each word,
// padded with a boundary mark (weight 1/2), each feature added with a sign
// into one of Dims buckets chosen by FNV-1a, the sum L2-normalised. Texts
// sharing words or word fragments score higher under cosine than texts that
// share none; synonyms score nothing. It needs no network, no key and no
// model file, and the same text always gives the same vector.
type Hashing struct {
	Dims int
}

var _ Embedder = Hashing{}

// Embed returns one unit vector per text. A text without letters or digits
// still gets a unit vector (from a fixed "empty" feature), never a zero
// vector, whose cosine is undefined.
func (h Hashing) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if h.Dims < 1 {
		return nil, fmt.Errorf("embed: the hashing embedder has %d dimensions; want at least 1 (embedding.dimensions)", h.Dims)
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = h.vector(t)
	}
	return out, nil
}

// Dimensions is Dims.
func (h Hashing) Dimensions() int { return h.Dims }

// Model is HashingModel.
func (h Hashing) Model() string { return HashingModel }

func (h Hashing) vector(text string) []float32 {
	acc := make([]float64, h.Dims)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	if len(words) == 0 {
		h.add(acc, "\x00empty", 1)
	}
	var gram []rune
	for _, w := range words {
		h.add(acc, "w:"+w, 1)
		gram = append(gram[:0], '^')
		gram = append(gram, []rune(w)...)
		gram = append(gram, '$')
		for j := 0; j+3 <= len(gram); j++ {
			h.add(acc, "t:"+string(gram[j:j+3]), 0.5)
		}
	}
	var norm float64
	for _, x := range acc {
		norm += x * x
	}
	norm = math.Sqrt(norm)
	v := make([]float32, h.Dims)
	if norm == 0 { // every feature cancelled out: fall back to the empty one
		return h.vector("")
	}
	for i, x := range acc {
		v[i] = float32(x / norm)
	}
	return v
}

// add hashes feature into a bucket and a sign.
func (h Hashing) add(acc []float64, feature string, weight float64) {
	f := fnv.New64a()
	f.Write([]byte(feature))
	sum := f.Sum64()
	bucket := sum % uint64(len(acc))
	if sum>>63 == 1 {
		weight = -weight
	}
	acc[bucket] += weight
}
