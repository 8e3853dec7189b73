package telegram

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of the Bot API, in the units TextLength counts.
const (
	MaxMessageLength = 4096 // text of one message
	MaxCaptionLength = 1024 // caption of a file, photo, voice note or video
	MaxCallbackData  = 64   // bytes of an inline button's callback_data
)

// TextLength is the length of s as Telegram measures message text: in
// UTF-16 code units. A character outside the Basic Multilingual Plane (most
// emoji) counts 2, every other character 1. Counting runes instead would let
// an emoji-heavy text pass a 4096 check and still be refused as too long.
func TextLength(s string) int {
	n := 0
	for _, r := range s {
		n += utf16Len(r)
	}
	return n
}

func utf16Len(r rune) int {
	if r >= 0x10000 && r <= utf8.MaxRune {
		return 2
	}
	return 1
}

// prefixWithin returns the byte length of the longest prefix of s that is at
// most limit UTF-16 code units and ends on a rune boundary; len(s) when all
// of s fits.
func prefixWithin(s string, limit int) int {
	n := 0
	for i, r := range s {
		n += utf16Len(r)
		if n > limit {
			return i
		}
	}
	return len(s)
}

// SplitText cuts text into parts of at most limit UTF-16 code units each
// (limit <= 0 means MaxMessageLength), in order. Each part ends at the last
// line break that fits; failing that, at the last other whitespace; failing
// that (one enormous word), it is cut hard, on a character boundary. The
// line break or space a part ends at is dropped, so joining the parts with
// what was dropped gives the text back. A text that fits is returned whole;
// an empty text gives no parts.
func SplitText(text string, limit int) []string {
	if limit <= 0 {
		limit = MaxMessageLength
	}
	var parts []string
	for text != "" {
		cut := prefixWithin(text, limit)
		if cut == len(text) {
			parts = append(parts, text)
			break
		}
		if cut == 0 { // limit is below one character's width: take one anyway
			_, cut = utf8.DecodeRuneInString(text)
			parts = append(parts, text[:cut])
			text = text[cut:]
			continue
		}
		part, skip := splitPoint(text, cut)
		parts = append(parts, text[:part])
		text = text[part+skip:]
	}
	return parts
}

// splitPoint chooses where to end a part of text that must end by byte cut
// (0 < cut < len(text)): the byte length of the part and of the break
// dropped after it.
func splitPoint(text string, cut int) (part, skip int) {
	next, size := utf8.DecodeRuneInString(text[cut:])
	window := text[:cut]
	switch {
	case next == '\n': // the window ends a line
		return cut, 1
	case strings.LastIndexByte(window, '\n') > 0:
		return strings.LastIndexByte(window, '\n'), 1
	case unicode.IsSpace(next): // the window ends a word
		return cut, size
	}
	if i, size := lastSpace(window); i > 0 {
		return i, size
	}
	return cut, 0
}

// lastSpace returns the byte index and size of the last whitespace rune in
// s, or -1.
func lastSpace(s string) (int, int) {
	for i := len(s); i > 0; {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
		if unicode.IsSpace(r) {
			return i, size
		}
	}
	return -1, 0
}
