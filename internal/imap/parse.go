package imap

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// MaxLine bounds the bytes of one response outside its literals.
const MaxLine = 1 << 20

// maxDepth bounds the nesting of parenthesised lists.
const maxDepth = 32

// Literal is the value of a literal ({n} followed by n bytes).
type Literal []byte

// List is a parenthesised list.
type List []any

// Quoted is the value of a quoted string (an atom is a plain string).
type Quoted string

// response is one server response. Kind is "+" (continuation), "*"
// (untagged) or the tag. For a status response (OK, NO, BAD, BYE, PREAUTH)
// Status is set and Text holds the rest of the line, with Code the
// bracketed response code if any ("UIDVALIDITY 3"). Otherwise Fields holds
// the data: atoms as string, quoted strings as Quoted, literals as
// Literal, NIL as nil, lists as List; "* 3 FETCH (...)" gives
// ["3", "FETCH", List{...}].
type response struct {
	Kind   string
	Status string
	Code   string
	Text   string
	Fields []any
}

// TooLargeError is a literal over the cap; nothing of it was read.
type TooLargeError struct {
	Size, Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the server sent a literal of %d bytes, over the %d-byte limit; "+
		"the connection was closed without reading it", e.Size, e.Limit)
}

// ProtocolError is a response the client could not parse.
type ProtocolError struct {
	Msg string
}

func (e *ProtocolError) Error() string { return "imap: malformed response: " + e.Msg }

// parser reads responses from r.
type parser struct {
	r          *bufio.Reader
	maxLiteral int64
	n          int // bytes of the current response outside literals
}

func (p *parser) byte() (byte, error) {
	b, err := p.r.ReadByte()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return 0, io.ErrUnexpectedEOF
		}
		return 0, err
	}
	p.n++
	if p.n > MaxLine {
		return 0, &ProtocolError{fmt.Sprintf("a response line longer than %d bytes", MaxLine)}
	}
	return b, nil
}

func (p *parser) peek() (byte, error) {
	b, err := p.r.Peek(1)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return 0, io.ErrUnexpectedEOF
		}
		return 0, err
	}
	return b[0], nil
}

// readResponse reads one whole response.
func (p *parser) readResponse() (*response, error) {
	p.n = 0
	kind, err := p.atom()
	if err != nil {
		return nil, err
	}
	if kind == "" {
		return nil, &ProtocolError{"a response without a tag"}
	}
	r := &response{Kind: kind}
	if kind == "+" {
		r.Text, err = p.text()
		return r, err
	}
	if err := p.sp(); err != nil {
		return nil, err
	}
	if kind != "*" {
		return p.status(r)
	}
	// Untagged: a status, or data.
	b, err := p.peek()
	if err != nil {
		return nil, err
	}
	if b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z' {
		word, err := p.atom()
		if err != nil {
			return nil, err
		}
		switch s := strings.ToUpper(word); s {
		case "OK", "NO", "BAD", "BYE", "PREAUTH":
			r.Status = s
			if b, err := p.peek(); err == nil && b == ' ' {
				p.byte()
			}
			return p.statusText(r)
		}
		r.Fields = append(r.Fields, word)
		if b, err := p.peek(); err != nil || b != ' ' {
			return r, p.crlf()
		}
		p.byte()
	}
	rest, err := p.items(0)
	r.Fields = append(r.Fields, rest...)
	return r, err
}

// status reads "OK|NO|BAD [code] text" of a tagged response.
func (p *parser) status(r *response) (*response, error) {
	word, err := p.atom()
	if err != nil {
		return nil, err
	}
	r.Status = strings.ToUpper(word)
	switch r.Status {
	case "OK", "NO", "BAD":
	default:
		return nil, &ProtocolError{fmt.Sprintf("tagged response with status %q; want OK, NO or BAD", word)}
	}
	if b, err := p.peek(); err == nil && b == ' ' {
		p.byte()
	}
	return p.statusText(r)
}

// statusText reads an optional [code] and the text to the line's end.
func (p *parser) statusText(r *response) (*response, error) {
	text, err := p.text()
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(text, "[") {
		if i := strings.IndexByte(text, ']'); i > 0 {
			r.Code = text[1:i]
			text = strings.TrimSpace(text[i+1:])
		}
	}
	r.Text = text
	return r, nil
}

// text reads the rest of the line (leading space dropped).
func (p *parser) text() (string, error) {
	var b strings.Builder
	for {
		c, err := p.byte()
		if err != nil {
			return "", err
		}
		if c == '\n' {
			return strings.TrimSpace(b.String()), nil
		}
		b.WriteByte(c)
	}
}

func (p *parser) sp() error {
	c, err := p.byte()
	if err != nil {
		return err
	}
	if c != ' ' {
		return &ProtocolError{fmt.Sprintf("want a space, got %q", c)}
	}
	return nil
}

func (p *parser) crlf() error {
	c, err := p.byte()
	if err == nil && c == '\r' {
		c, err = p.byte()
	}
	if err != nil {
		return err
	}
	if c != '\n' {
		return &ProtocolError{fmt.Sprintf("want the end of the line, got %q", c)}
	}
	return nil
}

// items reads space-separated values up to the closing ')' (depth > 0) or
// the end of the line (depth 0), which it consumes.
func (p *parser) items(depth int) (List, error) {
	if depth > maxDepth {
		return nil, &ProtocolError{fmt.Sprintf("lists nested deeper than %d", maxDepth)}
	}
	var out List
	for {
		b, err := p.peek()
		if err != nil {
			return nil, err
		}
		switch {
		case b == ')' && depth > 0:
			p.byte()
			return out, nil
		case b == '\r' || b == '\n':
			if depth > 0 {
				return nil, &ProtocolError{"a list not closed at the end of the line"}
			}
			return out, p.crlf()
		case b == ' ':
			if _, err := p.byte(); err != nil {
				return nil, err
			}
			continue
		}
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

// value reads one value.
func (p *parser) value(depth int) (any, error) {
	b, err := p.peek()
	if err != nil {
		return nil, err
	}
	switch b {
	case '(':
		p.byte()
		return p.items(depth + 1)
	case '"':
		return p.quoted()
	case '{':
		return p.literal()
	}
	a, err := p.atom()
	if err != nil {
		return nil, err
	}
	if a == "" {
		c, _ := p.byte()
		return nil, &ProtocolError{fmt.Sprintf("unexpected %q", c)}
	}
	if strings.EqualFold(a, "NIL") {
		return nil, nil
	}
	return a, nil
}

// atom reads an atom; a [...] section inside it (BODY[HEADER.FIELDS (A)])
// is read whole, spaces and parentheses included.
func (p *parser) atom() (string, error) {
	var b strings.Builder
	bracket := 0
	for {
		c, err := p.peek()
		if err != nil {
			return "", err
		}
		switch {
		case c == '[':
			bracket++
		case c == ']' && bracket > 0:
			bracket--
		case bracket > 0 && c != '\r' && c != '\n':
		case c == ' ' || c == '(' || c == ')' || c == '"' || c == '{' || c < ' ' || c == 0x7f:
			return b.String(), nil
		}
		if _, err := p.byte(); err != nil {
			return "", err
		}
		b.WriteByte(c)
	}
}

// quoted reads a quoted string with \" and \\ escapes.
func (p *parser) quoted() (any, error) {
	p.byte()
	var b strings.Builder
	for {
		c, err := p.byte()
		if err != nil {
			return nil, err
		}
		switch c {
		case '"':
			return Quoted(b.String()), nil
		case '\\':
			if c, err = p.byte(); err != nil {
				return nil, err
			}
		case '\r', '\n':
			return nil, &ProtocolError{"a line break inside a quoted string"}
		}
		b.WriteByte(c)
	}
}

// literal reads {n}CRLF and n bytes, refusing n over the cap before
// reading any of them.
func (p *parser) literal() (any, error) {
	p.byte()
	var digits strings.Builder
	for {
		c, err := p.byte()
		if err != nil {
			return nil, err
		}
		if c == '}' {
			break
		}
		if (c < '0' || c > '9') && !(c == '+' && digits.Len() > 0) || digits.Len() > 19 {
			return nil, &ProtocolError{fmt.Sprintf("bad literal length %q", digits.String()+string(c))}
		}
		if c != '+' {
			digits.WriteByte(c)
		}
	}
	n, err := strconv.ParseInt(digits.String(), 10, 64)
	if err != nil {
		return nil, &ProtocolError{fmt.Sprintf("bad literal length %q", digits.String())}
	}
	if err := p.crlf(); err != nil {
		return nil, err
	}
	if n > p.maxLiteral {
		return nil, &TooLargeError{Size: n, Limit: p.maxLiteral}
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(p.r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return Literal(buf), nil
}

// str returns the string value of an atom, quoted string or literal, and
// false for NIL or a list.
func str(v any) (string, bool) {
	switch s := v.(type) {
	case string:
		return s, true
	case Quoted:
		return string(s), true
	case Literal:
		return string(s), true
	}
	return "", false
}
