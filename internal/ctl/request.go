package ctl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"choir/internal/jsonlimit"
)

// DecodeRequest reads the JSON body of an admin request into v, as every
// handler of choird's admin API does: at most max bytes (413 beyond),
// objects and arrays nested at most jsonlimit.DefaultMaxDepth levels, valid
// UTF-8 (encoding/json would silently replace what is not), one value with
// no unknown field and nothing after it (400 otherwise). what names the
// request in the error, which says where the fault is and the limit. A
// refused body leaves v as it was, except for an unknown field or a wrong
// type, which the caller must not act on anyway. The error is an *Error.
func DecodeRequest(w http.ResponseWriter, r *http.Request, max int64, what string, v any) error {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return Errorf(http.StatusRequestEntityTooLarge, "too_large", "%s: the body is larger than the limit of %d bytes", what, max)
		}
		return Errorf(http.StatusBadRequest, "bad_request", "%s: read the body: %v", what, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return Errorf(http.StatusBadRequest, "bad_request", "%s: empty body: want a JSON object", what)
	}
	if err := jsonlimit.Check(data, jsonlimit.Limits{MaxDepth: jsonlimit.DefaultMaxDepth}); err != nil {
		return Errorf(http.StatusBadRequest, "bad_request", "%s: %v", what, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return Errorf(http.StatusBadRequest, "bad_request", "%s: malformed JSON: %s", what, jsonProblem(data, err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return Errorf(http.StatusBadRequest, "bad_request", "%s: malformed JSON: data after the JSON value", what)
	}
	return nil
}

// jsonProblem words a decoding error, with the line and column of a syntax
// error.
func jsonProblem(data []byte, err error) string {
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		// Offset counts the bytes read, the offending one included.
		off := min(max(se.Offset-1, 0), int64(len(data)))
		line, col := 1, 1
		for _, c := range data[:off] {
			if c == '\n' {
				line, col = line+1, 1
			} else if c&0xC0 != 0x80 {
				col++
			}
		}
		return fmt.Sprintf("line %d:%d (byte %d): %s", line, col, off, msg)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "the body ends in the middle of a value"
	}
	return msg
}
