package chain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Canonical returns the canonical JSON form of one JSON value: no
// insignificant whitespace, object members sorted by name (byte order of the
// unescaped names) at every depth, strings escaped as encoding/json escapes
// them, and numbers written as Postgres prints a numeric (see appendNumber).
// It is what the hash chain covers, so that a payload stored as Postgres
// jsonb (which reorders members, drops whitespace, re-escapes strings and
// rewrites numbers) and read back has the same canonical form and still
// verifies.
//
// Two things jsonb cannot hold are mapped or refused: U+0000 in a string or
// a member name (Postgres text cannot hold it) is written as U+FFFD, and a
// number whose plain decimal form would have more than MaxNumberDigits
// digits is refused. An object naming a member twice is refused: its
// meaning is ambiguous.
//
// Otherwise it gives what decoding into any (with UseNumber) and
// json.Marshal give, without building that tree (canonical_test.go checks
// the two agree).
func Canonical(data []byte) ([]byte, error) {
	if !json.Valid(data) {
		// json.Unmarshal's error says what is wrong and where.
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			return nil, err
		}
		return nil, errors.New("invalid JSON")
	}
	c := canon{in: data}
	out, err := c.value(make([]byte, 0, len(data)))
	if err != nil {
		return nil, err
	}
	return out, nil
}

// canon rewrites JSON already known to be valid.
type canon struct {
	in  []byte
	pos int
	tmp []byte // scratch for reordering members
}

func (c *canon) skipSpace() {
	for c.pos < len(c.in) {
		switch c.in[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *canon) value(out []byte) ([]byte, error) {
	c.skipSpace()
	switch c.in[c.pos] {
	case '{':
		return c.object(out)
	case '[':
		return c.array(out)
	case '"':
		s := c.stringSpan()
		return appendCanonicalString(out, s)
	default: // number, true, false, null
		start := c.pos
		for c.pos < len(c.in) {
			switch c.in[c.pos] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return appendLiteral(out, c.in[start:c.pos])
			}
			c.pos++
		}
		return appendLiteral(out, c.in[start:c.pos])
	}
}

// stringSpan returns the string token at pos, quotes included.
func (c *canon) stringSpan() []byte {
	start := c.pos
	c.pos++
	for {
		switch c.in[c.pos] {
		case '\\':
			c.pos += 2
		case '"':
			c.pos++
			return c.in[start:c.pos]
		default:
			c.pos++
		}
	}
}

func (c *canon) array(out []byte) ([]byte, error) {
	c.pos++ // [
	out = append(out, '[')
	c.skipSpace()
	if c.in[c.pos] == ']' {
		c.pos++
		return append(out, ']'), nil
	}
	for {
		var err error
		if out, err = c.value(out); err != nil {
			return nil, err
		}
		c.skipSpace()
		if c.in[c.pos] == ']' {
			c.pos++
			return append(out, ']'), nil
		}
		c.pos++ // ,
		out = append(out, ',')
	}
}

// span is one member of an object being canonicalised: its name (unescaped)
// and where its canonical "name":value bytes are in the output.
type span struct {
	name       []byte
	start, end int
}

// object writes the members in their given order, which is usually sorted
// already; only when it is not are they reordered, through one scratch
// buffer (nested objects are complete by then, so it is free to reuse).
func (c *canon) object(out []byte) ([]byte, error) {
	c.pos++ // {
	out = append(out, '{')
	var small [16]span
	spans := small[:0]
	sorted := true
	for {
		c.skipSpace()
		if c.in[c.pos] == '}' { // only for {}
			c.pos++
			break
		}
		if len(spans) > 0 {
			out = append(out, ',')
		}
		start := len(out)
		key := c.stringSpan()
		name := key[1 : len(key)-1]
		if bytes.IndexByte(key, '\\') >= 0 || !utf8.Valid(key) {
			n, err := unquote(key)
			if err != nil {
				return nil, err
			}
			name = []byte(n) // as it is written out (NUL mapped)
		}
		var err error
		if out, err = appendCanonicalString(out, key); err != nil {
			return nil, err
		}
		out = append(out, ':')
		c.skipSpace()
		c.pos++ // :
		if out, err = c.value(out); err != nil {
			return nil, err
		}
		if n := len(spans); n > 0 && bytes.Compare(spans[n-1].name, name) >= 0 {
			sorted = false
		}
		spans = append(spans, span{name, start, len(out)})
		c.skipSpace()
		if c.in[c.pos] == '}' {
			c.pos++
			break
		}
		c.pos++ // ,
	}
	if !sorted {
		slices.SortStableFunc(spans, func(a, b span) int { return bytes.Compare(a.name, b.name) })
		for i := 1; i < len(spans); i++ {
			if bytes.Equal(spans[i].name, spans[i-1].name) {
				return nil, fmt.Errorf("the member %q appears twice in one object", spans[i].name)
			}
		}
		base := spans[0].start
		for _, sp := range spans {
			base = min(base, sp.start)
		}
		c.tmp = append(c.tmp[:0], out[base:]...)
		out = out[:base]
		for i, sp := range spans {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, c.tmp[sp.start-base:sp.end-base]...)
		}
	}
	return append(out, '}'), nil
}

// unquote returns the value of a string token, U+0000 mapped to U+FFFD.
func unquote(tok []byte) (string, error) {
	if bytes.IndexByte(tok, '\\') < 0 && utf8.Valid(tok) {
		return string(tok[1 : len(tok)-1]), nil
	}
	var s string
	if err := json.Unmarshal(tok, &s); err != nil {
		return "", err
	}
	return strings.ReplaceAll(s, "\x00", "\uFFFD"), nil
}

// appendCanonicalString appends a string token as encoding/json writes its
// value. Tokens that need no change are copied.
func appendCanonicalString(out, tok []byte) ([]byte, error) {
	body := tok[1 : len(tok)-1]
	plain := true
	for i := 0; i < len(body); {
		b := body[i]
		if b < utf8.RuneSelf {
			if b < 0x20 || b == '\\' || b == '<' || b == '>' || b == '&' {
				plain = false
				break
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(body[i:])
		if r == utf8.RuneError || r == '\u2028' || r == '\u2029' {
			plain = false
			break
		}
		i += size
	}
	if plain {
		return append(out, tok...), nil
	}
	s, err := unquote(tok)
	if err != nil {
		return nil, err
	}
	enc, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	return append(out, enc...), nil
}
