package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
)

// Status is a result's outcome.
type Status string

const (
	StatusSuccess Status = "success"
	StatusError   Status = "error"
)

// Result is what a call returns to the model (design §8.5). It marshals to
// one flat JSON object:
//
//	{"status":"success","summary":"read 12 lines","artifact_ref":"...", <fields>}
//	{"status":"error","summary":"...","error":{"code":"not_found","message":"...","path":"a.go"}, <fields>}
//
// Fields holds the tool's own members; its keys status, summary, artifact_ref
// and error are ignored in favour of the struct's.
type Result struct {
	Status      Status
	Summary     string
	ArtifactRef string
	Error       *Error
	Fields      map[string]any
}

// Success returns a success result with the given summary and fields.
func Success(summary string, fields map[string]any) Result {
	return Result{Status: StatusSuccess, Summary: summary, Fields: fields}
}

// Failure returns the error result for err: an *Error (found with errors.As)
// as it is, anything else as an "internal" error.
func ErrorResult(err error) Result {
	var te *Error
	if !errors.As(err, &te) {
		te = &Error{Code: CodeInternal, Message: err.Error()}
	}
	return Result{Status: StatusError, Summary: te.Message, Error: te}
}

var reserved = map[string]bool{"status": true, "summary": true, "artifact_ref": true, "error": true}

// MarshalJSON renders the flat object, members in sorted order after status,
// summary, artifact_ref and error.
func (r Result) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	status := r.Status
	if status == "" {
		status = StatusSuccess
	}
	write := func(key string, v any) error {
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("marshal result member %q: %w", key, err)
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(raw)
		return nil
	}
	if err := write("status", status); err != nil {
		return nil, err
	}
	if err := write("summary", r.Summary); err != nil {
		return nil, err
	}
	if r.ArtifactRef != "" {
		if err := write("artifact_ref", r.ArtifactRef); err != nil {
			return nil, err
		}
	}
	if r.Error != nil {
		if err := write("error", r.Error); err != nil {
			return nil, err
		}
	}
	keys := make([]string, 0, len(r.Fields))
	for k := range r.Fields {
		if !reserved[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := write(k, r.Fields[k]); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// ParseResult reads the result object an external or host tool printed. The
// object's status must be "success" or "error" when present (absent means
// success); summary and artifact_ref must be strings. An error result should
// carry {"error":{"code","message"}}; one that does not gets the code
// tool_error. Other members become Fields, as raw JSON.
func ParseResult(raw []byte) (Result, error) {
	var members map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&members); err != nil || members == nil {
		return Result{}, fmt.Errorf("want one JSON object: %s", describeJSONError(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return Result{}, errors.New("want one JSON object: unexpected data after it")
	}
	var r Result
	if s, ok := members["status"]; ok {
		if err := json.Unmarshal(s, &r.Status); err != nil || (r.Status != StatusSuccess && r.Status != StatusError) {
			return Result{}, fmt.Errorf(`/status: want "success" or "error", got %s`, short(s))
		}
	} else {
		r.Status = StatusSuccess
	}
	if s, ok := members["summary"]; ok {
		if err := json.Unmarshal(s, &r.Summary); err != nil {
			return Result{}, fmt.Errorf("/summary: want a string, got %s", short(s))
		}
	}
	if s, ok := members["artifact_ref"]; ok {
		if err := json.Unmarshal(s, &r.ArtifactRef); err != nil {
			return Result{}, fmt.Errorf("/artifact_ref: want a string, got %s", short(s))
		}
	}
	if r.Status == StatusError {
		var e Error
		if s, ok := members["error"]; ok && json.Unmarshal(s, &e) == nil && e.Code != "" {
			r.Error = &e
		} else {
			msg := r.Summary
			if msg == "" {
				msg = "the tool reported an error without a message"
			}
			r.Error = &Error{Code: CodeToolError, Message: msg}
		}
		if r.Summary == "" {
			r.Summary = r.Error.Message
		}
	}
	for k, v := range members {
		if reserved[k] {
			continue
		}
		if r.Fields == nil {
			r.Fields = make(map[string]any)
		}
		r.Fields[k] = v
	}
	return r, nil
}

func describeJSONError(err error) string {
	if err == nil {
		return "got null"
	}
	return err.Error()
}

// short quotes at most 80 bytes of raw JSON for a message.
func short(raw []byte) string {
	const max = 80
	if len(raw) > max {
		return string(raw[:max]) + "..."
	}
	return string(raw)
}
