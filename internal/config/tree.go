package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"choir/internal/jsonlimit"
)

// node is a parsed JSON value that keeps what encoding/json throws away:
// key order, duplicate keys and the raw text of scalars.
type node struct {
	kind  byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	keys  []string
	vals  []*node // object values, parallel to keys; array elements
	str   string  // string value
	raw   string  // scalar as written (numbers, bools)
	dupes []string
}

// parseTree parses one JSON document strictly: a syntax error names the line
// and column, duplicate object keys are remembered, trailing data is an error.
// The document is first held to maxBytes, MaxDepth and valid UTF-8, which
// also bounds parseValue's recursion.
func parseTree(data []byte, maxBytes int64) (*node, error) {
	if err := jsonlimit.Check(data, jsonlimit.Limits{MaxBytes: maxBytes, MaxDepth: MaxDepth}); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := parseValue(dec)
	if err != nil {
		return nil, positioned(data, dec, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("line %s: unexpected data after the top-level value", lineCol(data, dec.InputOffset()))
	}
	return n, nil
}

func parseValue(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			n := &node{kind: 'o'}
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ := kt.(string)
				val, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				if seen[key] {
					n.dupes = append(n.dupes, key)
				}
				seen[key] = true
				n.keys = append(n.keys, key)
				n.vals = append(n.vals, val)
			}
			_, err := dec.Token() // '}'
			return n, err
		case '[':
			n := &node{kind: 'a'}
			for dec.More() {
				val, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				n.vals = append(n.vals, val)
			}
			_, err := dec.Token() // ']'
			return n, err
		}
		return nil, fmt.Errorf("unexpected %q", v)
	case string:
		return &node{kind: 's', str: v}, nil
	case json.Number:
		return &node{kind: 'n', raw: string(v)}, nil
	case bool:
		return &node{kind: 'b', raw: fmt.Sprint(v)}, nil
	case nil:
		return &node{kind: 'z', raw: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

func positioned(data []byte, dec *json.Decoder, err error) error {
	off := dec.InputOffset()
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = se.Offset
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("line %s: the file ends in the middle of a value (a missing } or ]?)", lineCol(data, off))
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	return fmt.Errorf("line %s: %s", lineCol(data, off), msg)
}

func lineCol(data []byte, off int64) string {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line, col := 1, 1
	for _, c := range data[:off] {
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("%d:%d", line, col)
}

// text renders a node for an error message.
func (n *node) text() string {
	switch n.kind {
	case 'o':
		return "{…}"
	case 'a':
		return "[…]"
	case 's':
		return quote(n.str)
	}
	return n.raw
}

func (n *node) kindName() string {
	switch n.kind {
	case 'o':
		return "an object"
	case 'a':
		return "an array"
	case 's':
		return "a string"
	case 'n':
		return "a number"
	case 'b':
		return "a boolean"
	}
	return "null"
}
