package smtp

import (
	"encoding/base64"
	"fmt"
	"mime"
	"net/mail"
	"sort"
	"strings"
	"unicode/utf8"
)

// Header lines. RFC 5322 §2.1.1: a line is at most 998 characters and
// SHOULD be at most 78; RFC 2047 §2: an encoded-word is at most 75
// characters and a line holding one at most 76. A field writes its value
// token by token, folding (CRLF and a space, §2.2.3) before a token that
// would pass softMax, so every line keeps to 76 characters; the one token
// that cannot be split, an address, may stretch its line up to lineMax, and
// an address longer than that is refused.
const (
	lineMax = 998
	softMax = 76
	wordMax = 75
)

// field is one header field being written, folded as it goes.
type field struct {
	name  string
	b     strings.Builder
	col   int  // characters on the current line
	empty bool // no token on the current line yet
}

func newField(name string) *field {
	f := &field{name: name, col: len(name) + 1, empty: true}
	f.b.WriteString(name + ":")
	return f
}

// String returns the field, its last line ended by CRLF.
func (f *field) String() string { return f.b.String() + "\r\n" }

// value returns what follows "Name: ", for a writer that adds the name
// itself (multipart's CreatePart).
func (f *field) value() string { return strings.TrimPrefix(f.b.String(), f.name+": ") }

// fold starts a new line, which the next token begins with a space.
func (f *field) fold() {
	f.b.WriteString("\r\n")
	f.col, f.empty = 0, true
}

// fits reports whether tok, after a space, fits within softMax wherever a
// line starts, so it can be written without encoding.
func (f *field) fits(tok string) bool { return len(f.name)+2+len(tok) <= softMax }

// word writes tok, which must not be split, after a space, folding first
// when the current line holds a token and tok would pass softMax.
func (f *field) word(tok string) error {
	if !f.empty && f.col+1+len(tok) > softMax {
		f.fold()
	}
	if f.col+1+len(tok) > lineMax {
		return fmt.Errorf("%d characters, and a header line holds at most %d (RFC 5322 §2.1.1)", len(tok), lineMax)
	}
	f.b.WriteString(" " + tok)
	f.col += 1 + len(tok)
	f.empty = false
	return nil
}

// encoded writes s as RFC 2047 encoded-words (B encoding, UTF-8), each
// filling what is left of its line up to wordMax and holding whole
// characters: a UTF-8 sequence is never split across two words (a byte
// that is not valid UTF-8 counts as a character of its own). A decoder
// drops the spaces between adjacent encoded-words, so s comes back as it
// was, spaces included.
func (f *field) encoded(s string) {
	const wrap = len("=?utf-8?b?") + len("?=")
	for s != "" {
		room := min(wordMax, softMax-f.col-1)
		limit := max(room-wrap, 0) / 4 * 3 // bytes that encode within room
		n := 0
		for n < len(s) {
			_, size := utf8.DecodeRuneInString(s[n:])
			if n+size > limit {
				break
			}
			n += size
		}
		if n == 0 {
			f.fold() // a fresh line has room for 45 bytes, more than a character
			continue
		}
		f.word("=?utf-8?b?" + base64.StdEncoding.EncodeToString([]byte(s[:n])) + "?=")
		s = s[n:]
	}
}

// text writes an unstructured value (a subject): as it is when it is
// printable ASCII in words that fit a line, separated by single spaces and
// nothing a decoder would take for an encoded-word ("=?"); else the whole
// of it as encoded-words, which keep every byte and space.
func (f *field) text(s string) {
	if words, ok := f.plainWords(s); ok {
		for _, w := range words {
			f.word(w) // fits: cannot fail
		}
		return
	}
	f.encoded(s)
}

// plainWords splits s into the words of a plain value, if s can be one.
func (f *field) plainWords(s string) ([]string, bool) {
	if strings.Contains(s, "=?") {
		return nil, false
	}
	words := strings.Split(s, " ")
	for _, w := range words {
		if w == "" || !f.fits(w) { // "" is a leading, trailing or double space
			return nil, false
		}
		for i := 0; i < len(w); i++ {
			if w[i] <= ' ' || w[i] > '~' {
				return nil, false
			}
		}
	}
	return words, true
}

// address writes one mailbox: the display name, as atoms, a quoted string
// or encoded-words, then the angle-addr, which is never split; comma ends
// it with a comma for the next one.
func (f *field) address(a *mail.Address, comma bool) error {
	if a.Name != "" {
		f.phrase(a.Name)
	}
	addr := (&mail.Address{Address: a.Address}).String() // <local@domain>, the local part quoted if it must be
	tok := addr
	if comma {
		tok += ","
	}
	if err := f.word(tok); err != nil {
		if len(addr) > 60 {
			addr = addr[:50] + "..."
		}
		return fmt.Errorf("address %s is too long for the %s header: %w; give a shorter address", addr, f.name, err)
	}
	return nil
}

// phrase writes a display name (RFC 5322 §3.2.5).
func (f *field) phrase(name string) {
	words, ok := f.plainWords(name)
	if !ok {
		f.encoded(name)
		return
	}
	if !isAtoms(name) {
		// A quoted string may fold at its spaces (FWS, §3.2.4).
		q := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(name) + `"`
		if words, ok = f.plainWords(q); !ok {
			f.encoded(name)
			return
		}
	}
	for _, w := range words {
		f.word(w)
	}
}

// isAtoms reports whether name is atext words (RFC 5322 §3.2.3) between
// single spaces, a phrase that needs no quotes.
func isAtoms(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c != ' ' && !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-/=?^_`{|}~", c) >= 0) {
			return false
		}
	}
	return true
}

// mediaType writes a Content-Type or Content-Disposition value: the type,
// then each parameter after a semicolon, in name order. A parameter whose
// value is not printable ASCII or does not fit a line goes RFC 2231
// encoded, in sections split between whole characters when it is long,
// which mime.ParseMediaType joins again:
//
//	attachment;
//	 filename*0*=utf-8''donn%C3%A9es...;
//	 filename*1*=...
func (f *field) mediaType(t string, params map[string]string) error {
	names := make([]string, 0, len(params))
	for k := range params {
		names = append(names, k)
	}
	sort.Strings(names)
	var toks []string
	for _, k := range names {
		toks = append(toks, paramTokens(k, params[k])...)
	}
	if len(toks) > 0 {
		t += ";"
	}
	if err := f.word(t); err != nil {
		return fmt.Errorf("media type %.50q... is too long for the %s header: %w", t, f.name, err)
	}
	for i, tok := range toks {
		if i < len(toks)-1 {
			tok += ";"
		}
		if err := f.word(tok); err != nil {
			return fmt.Errorf("parameter %.50q... is too long for the %s header: %w", tok, f.name, err)
		}
	}
	return nil
}

// paramTokens returns one parameter as tokens, each fitting a folded
// line with the semicolon after it (given a parameter name of a sane
// length): a parameter always follows the type, so it never needs to fit
// on the first line.
func paramTokens(k, v string) []string {
	fits := func(tok string) bool { return 1+len(tok+";") <= softMax }
	printable := strings.IndexFunc(v, func(r rune) bool { return r < ' ' || r > '~' }) < 0
	if s := mime.FormatMediaType("x", map[string]string{k: v}); s != "" && printable {
		if tok := strings.TrimPrefix(s, "x; "); fits(tok) {
			return []string{tok} // k=v, quoted if it must be
		}
	}
	if tok := k + "*=utf-8''" + percentEncode(v); fits(tok) {
		return []string{tok}
	}
	var toks []string
	for i := 0; v != ""; i++ {
		tok := fmt.Sprintf("%s*%d*=", k, i)
		if i == 0 {
			tok += "utf-8''"
		}
		for n := 0; v != ""; n++ {
			_, size := utf8.DecodeRuneInString(v)
			enc := percentEncode(v[:size])
			if n > 0 && !fits(tok+enc) {
				break
			}
			tok += enc
			v = v[size:]
		}
		toks = append(toks, tok)
	}
	return toks
}

// percentEncode encodes s for an RFC 2231 extended value: attribute-chars
// as they are, every other byte as %XX.
func percentEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c > ' ' && c <= '~' && !strings.ContainsRune(`*'%()<>@,;:\"/[]?=`, rune(c)) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
