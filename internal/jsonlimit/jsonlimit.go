// Package jsonlimit checks a JSON document's size, nesting depth and UTF-8
// before it is decoded.
//
// encoding/json accepts what choir must refuse from a file or a peer it does
// not trust: it replaces invalid UTF-8, and \u escapes naming half of a
// UTF-16 surrogate pair, with U+FFFD without a word, so a value can change
// between the bytes sent and the string stored; and it nests up to 10,000
// levels, deep enough to overflow the stack of any recursive reader built
// on its tokens or on the values it returns (a tree parser, a schema
// validator). Check scans the document once, iteratively, in linear time and
// constant memory, and returns the first fault as an *Error with its byte
// offset and line:column. It leaves syntax to the decoder that runs next.
//
// Every JSON reader of choir calls Check (or ReadAll) first, with
// DefaultMaxDepth and a size limit of its own.
package jsonlimit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"unicode/utf8"
)

// DefaultMaxDepth is the nesting limit of choir's JSON readers: objects and
// arrays inside one another, the outermost counting as 1. choir's own
// documents (config.json, manifests, skills, requests) use well under 16.
const DefaultMaxDepth = 64

// Limits are what Check enforces.
type Limits struct {
	// MaxBytes is the largest document accepted, in bytes; 0 leaves the size
	// to the caller (who has bounded its read already).
	MaxBytes int64
	// MaxDepth is the deepest nesting accepted; 0 means DefaultMaxDepth.
	MaxDepth int
}

// The kinds of fault, for errors.Is.
var (
	ErrTooLarge    = errors.New("JSON document too large")
	ErrTooDeep     = errors.New("JSON nested too deeply")
	ErrInvalidUTF8 = errors.New("JSON text is not valid UTF-8")
)

// Error is a document refused by Check.
type Error struct {
	Err    error // ErrTooLarge, ErrTooDeep or ErrInvalidUTF8
	Offset int64 // byte offset of the fault, from 0 (the limit, for ErrTooLarge)
	Line   int   // 1-based line of the fault; 0 when not computed (ErrTooLarge)
	Col    int   // 1-based column, in characters
	Limit  int64 // the limit exceeded: bytes or levels; 0 for ErrInvalidUTF8
	Size   int64 // the document's size when known (ErrTooLarge); 0 when only "more than Limit" is known
	Detail string
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	switch e.Err {
	case ErrTooLarge:
		if e.Size > 0 {
			return fmt.Sprintf("the JSON document is %d bytes, over the limit of %s", e.Size, bytesText(e.Limit))
		}
		return fmt.Sprintf("the JSON document is larger than the limit of %s", bytesText(e.Limit))
	case ErrTooDeep:
		return fmt.Sprintf("%s: JSON nested deeper than the limit of %d levels of objects and arrays", e.where(), e.Limit)
	}
	return fmt.Sprintf("%s: %s: JSON text must be valid UTF-8", e.where(), e.Detail)
}

func (e *Error) where() string {
	return fmt.Sprintf("line %d:%d (byte %d)", e.Line, e.Col, e.Offset)
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB (%d bytes)", n>>20, n)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB (%d bytes)", n>>10, n)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ReadAll reads r to its end, reading at most one byte past l.MaxBytes (which
// must be set), and checks what it read. An over-long document is refused
// without being read whole.
func ReadAll(r io.Reader, l Limits) ([]byte, error) {
	if l.MaxBytes <= 0 {
		return nil, errors.New("jsonlimit.ReadAll: no size limit given")
	}
	data, err := io.ReadAll(io.LimitReader(r, l.MaxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > l.MaxBytes {
		return nil, &Error{Err: ErrTooLarge, Offset: l.MaxBytes, Limit: l.MaxBytes}
	}
	return data, Check(data, l)
}

// ReadFile reads the JSON file at path within l (whose MaxBytes must be
// set). It refuses anything but a regular file, so a FIFO or a device put in
// a file's place neither blocks the reader nor feeds it forever.
func ReadFile(path string, l Limits) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%v)", path, fi.Mode().Type())
	}
	if fi.Size() > l.MaxBytes && l.MaxBytes > 0 {
		return nil, &Error{Err: ErrTooLarge, Offset: l.MaxBytes, Limit: l.MaxBytes, Size: fi.Size()}
	}
	return ReadAll(f, l)
}

// Check returns nil when data is within l and valid UTF-8 (with no unpaired
// surrogate escape), else the first fault as an *Error. It does not check
// syntax, except as far as it must to tell strings from structure.
func Check(data []byte, l Limits) error {
	if l.MaxBytes > 0 && int64(len(data)) > l.MaxBytes {
		return &Error{Err: ErrTooLarge, Offset: l.MaxBytes, Limit: l.MaxBytes, Size: int64(len(data))}
	}
	maxDepth := l.MaxDepth
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	s := scanner{data: data, line: 1, col: 1}
	depth := 0
	inString := false
	for s.i < len(s.data) {
		c := s.data[s.i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(s.data[s.i:])
			if r == utf8.RuneError && size == 1 {
				return s.fault(ErrInvalidUTF8, 0, fmt.Sprintf("invalid UTF-8 (byte %#02x)", c))
			}
			s.advance(size)
			continue
		}
		if inString {
			switch c {
			case '"':
				inString = false
			case '\\':
				if err := s.escape(); err != nil {
					return err
				}
				continue
			}
			s.ascii(c)
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > maxDepth {
				return s.fault(ErrTooDeep, int64(maxDepth), "")
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
		s.ascii(c)
	}
	return nil
}

// scanner walks data keeping the line and column of position i.
type scanner struct {
	data      []byte
	i         int
	line, col int
}

// ascii steps over the ASCII byte c at i.
func (s *scanner) ascii(c byte) {
	s.i++
	if c == '\n' {
		s.line++
		s.col = 1
	} else {
		s.col++
	}
}

func (s *scanner) advance(n int) {
	for k := 0; k < n; k++ {
		c := s.data[s.i]
		s.i++
		switch {
		case c == '\n':
			s.line++
			s.col = 1
		case c&0xC0 != 0x80: // not a UTF-8 continuation byte: a new character
			s.col++
		}
	}
}

func (s *scanner) fault(kind error, limit int64, detail string) *Error {
	return &Error{Err: kind, Offset: int64(s.i), Line: s.line, Col: s.col, Limit: limit, Detail: detail}
}

// escape steps over the escape sequence at i (inside a string), refusing a
// \u escape that names an unpaired UTF-16 surrogate. A malformed escape is
// left for the decoder to report.
func (s *scanner) escape() error {
	if s.i+1 >= len(s.data) || s.data[s.i+1] != 'u' {
		n := min(2, len(s.data)-s.i)
		if n == 2 && s.data[s.i+1] >= utf8.RuneSelf {
			n = 1 // let the main loop check the UTF-8 that follows
		}
		s.advance(n)
		return nil
	}
	r, ok := hex4(s.data, s.i+2)
	if !ok {
		s.advance(2)
		return nil
	}
	switch {
	case r >= 0xDC00 && r <= 0xDFFF:
		return s.fault(ErrInvalidUTF8, 0, fmt.Sprintf(`\u%04x is the second half of a UTF-16 surrogate pair without its first half`, r))
	case r >= 0xD800 && r <= 0xDBFF:
		lo, ok := -1, false
		if s.i+7 < len(s.data) && s.data[s.i+6] == '\\' && s.data[s.i+7] == 'u' {
			lo, ok = hex4(s.data, s.i+8)
		}
		if !ok || lo < 0xDC00 || lo > 0xDFFF {
			return s.fault(ErrInvalidUTF8, 0, fmt.Sprintf(`\u%04x is the first half of a UTF-16 surrogate pair without its second half`, r))
		}
		s.advance(12)
		return nil
	}
	s.advance(6)
	return nil
}

// hex4 decodes the four hex digits at data[i:i+4].
func hex4(data []byte, i int) (int, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	v := 0
	for _, c := range data[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		v = v<<4 | int(c)
	}
	return v, true
}
