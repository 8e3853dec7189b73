package telegram_test

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"choir/internal/telegram"
)

func TestTextLength(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int
	}{
		{"", 0},
		{"hello", 5},
		{"é", 1},  // two bytes, one code unit
		{"日本", 2}, // three bytes each, one code unit each
		{"😀", 2},  // outside the BMP: a surrogate pair
		{"a😀é\n", 5},
	} {
		if got := telegram.TextLength(tc.s); got != tc.want {
			t.Errorf("TextLength(%q) = %d; want %d", tc.s, got, tc.want)
		}
	}
}

func TestSplitText(t *testing.T) {
	for _, tc := range []struct {
		name  string
		text  string
		limit int
		want  []string
	}{
		{"empty", "", 10, nil},
		{"fits", "short", 10, []string{"short"}},
		{"exactly the limit", "abcd", 4, []string{"abcd"}},
		{"lines", "aaa\nbbb\nccc", 7, []string{"aaa\nbbb", "ccc"}},
		{"line beats a later space", "aa bb\ncc dd", 8, []string{"aa bb", "cc dd"}},
		{"words", "aaa bbb ccc", 7, []string{"aaa bbb", "ccc"}},
		{"tab is a space", "aaa\tbbb", 5, []string{"aaa", "bbb"}},
		{"hard cut", "abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"line then hard", "ab\ncdefghij", 4, []string{"ab", "cdef", "ghij"}},
		{"emoji count two", "😀😀😀", 4, []string{"😀😀", "😀"}},
		{"never halves an emoji", "a😀", 2, []string{"a", "😀"}},
		{"limit below a character", "😀😀", 1, []string{"😀", "😀"}},
		{"multibyte", "日本語のテキスト", 3, []string{"日本語", "のテキ", "スト"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := telegram.SplitText(tc.text, tc.limit); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("SplitText(%q, %d) = %q; want %q", tc.text, tc.limit, got, tc.want)
			}
		})
	}
}

// TestSplitTextKeepsEverything cuts random texts and checks each part
// fits and the parts, with at most one break dropped at each cut, are the
// text.
func TestSplitTextKeepsEverything(t *testing.T) {
	alphabet := []string{"a", "b", "é", "日", "😀", " ", "\n", "\t"}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		var b strings.Builder
		for range r.IntN(300) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		text, limit := b.String(), 2+r.IntN(40) // 2: every character fits
		parts := telegram.SplitText(text, limit)
		rest := text
		for j, p := range parts {
			if telegram.TextLength(p) > limit {
				t.Fatalf("case %d: part %d %q is over %d", i, j, p, limit)
			}
			if !strings.HasPrefix(rest, p) {
				t.Fatalf("case %d: part %d %q is not next in %q", i, j, p, rest)
			}
			rest = rest[len(p):]
			// A cut at a break drops it; a hard cut is never next to
			// whitespace, so whitespace here is what was dropped.
			// (A break that ended the text's last full part may be left.)
			if r, size := utf8.DecodeRuneInString(rest); unicode.IsSpace(r) && (j+1 < len(parts) || size == len(rest)) {
				rest = rest[size:]
			}
		}
		if rest != "" {
			t.Fatalf("case %d: %q left over", i, rest)
		}
	}
}
