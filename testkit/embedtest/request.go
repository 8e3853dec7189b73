package embedtest

import (
	"fmt"
	"math"
	"net/http"
	"strings"
)

// Request is one request as the server received it, decoded from raw JSON.
type Request struct {
	Number int // 1 for the first request the server received
	Method string
	Path   string
	Header http.Header
	Body   []byte
	// JSON is the body decoded generically; nil when it is not a JSON object.
	JSON map[string]any
}

// Model is the model field.
func (r *Request) Model() string {
	s, _ := r.JSON["model"].(string)
	return s
}

// Inputs is the input field: a string, or an array of strings.
func (r *Request) Inputs() []string {
	switch in := r.JSON["input"].(type) {
	case string:
		return []string{in}
	case []any:
		out := make([]string, 0, len(in))
		for _, x := range in {
			s, _ := x.(string)
			out = append(out, s)
		}
		return out
	}
	return nil
}

// Dimensions is the dimensions field and whether it was sent.
func (r *Request) Dimensions() (int, bool) {
	f, ok := r.JSON["dimensions"].(float64)
	return int(f), ok
}

// EncodingFormat is the encoding_format field, "" when absent.
func (r *Request) EncodingFormat() string {
	s, _ := r.JSON["encoding_format"].(string)
	return s
}

// Authorization is the Authorization header as sent.
func (r *Request) Authorization() string { return r.Header.Get("Authorization") }

// maxInputs is the API's limit on the inputs of one request.
const maxInputs = 2048

// wireProblems lists how the request breaks the embeddings API's rules.
func wireProblems(r *Request) []string {
	var ps []string
	if r.Method != http.MethodPost {
		ps = append(ps, fmt.Sprintf("method %s; want POST", r.Method))
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		ps = append(ps, fmt.Sprintf("Content-Type %q; want application/json", ct))
	}
	if r.JSON == nil {
		return append(ps, fmt.Sprintf("body is not a JSON object: %.80q", r.Body))
	}
	if m, ok := r.JSON["model"].(string); !ok || m == "" {
		ps = append(ps, "model must be a non-empty string")
	}
	switch in := r.JSON["input"].(type) {
	case string:
		if in == "" {
			ps = append(ps, "input must not be an empty string")
		}
	case []any:
		if len(in) == 0 || len(in) > maxInputs {
			ps = append(ps, fmt.Sprintf("input has %d items; want 1 to %d", len(in), maxInputs))
		}
		for i, x := range in {
			if s, ok := x.(string); !ok || s == "" {
				ps = append(ps, fmt.Sprintf("input[%d] must be a non-empty string (this fake takes no token arrays)", i))
			}
		}
	default:
		ps = append(ps, "input must be a string or an array of strings")
	}
	if v, ok := r.JSON["dimensions"]; ok {
		f, isNum := v.(float64)
		if !isNum || f < 1 || f != math.Trunc(f) {
			ps = append(ps, fmt.Sprintf("dimensions %v must be a positive integer", v))
		}
	}
	if v, ok := r.JSON["encoding_format"]; ok && v != "float" && v != "base64" {
		ps = append(ps, fmt.Sprintf("encoding_format %v; want \"float\" or \"base64\"", v))
	}
	return ps
}
