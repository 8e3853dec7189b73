package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// ModelRequest is a model's request template (§6.3): extra JSON fields
// merged into every chat request body and extra HTTP headers. The client
// owns the members that make the call what it is (ReservedBodyFields) and
// the headers that frame it (ReservedHeaders); validation refuses both.
type ModelRequest struct {
	Body    map[string]json.RawMessage `json:"body,omitempty"`
	Headers map[string]HeaderValue     `json:"headers,omitempty"`
}

// HeaderValue is one template header: a literal string, or a named secret
// ({"secret": "<name>", "format": "Bearer %s"}) whose value is put in the
// format's single %s (format absent: the value alone). The secret is
// granted to the agents that may call the model, like models.<name>.secret.
type HeaderValue struct {
	Value  string // the literal, when Secret is empty
	Secret string // secrets.json name
	Format string // "" means "%s"
}

// Render is the header's value on the wire, given the secret's value when
// the header names one.
func (h HeaderValue) Render(secret string) string {
	if h.Secret == "" {
		return h.Value
	}
	if h.Format == "" {
		return secret
	}
	return strings.Replace(h.Format, "%s", secret, 1)
}

type headerSecret struct {
	Secret string `json:"secret"`
	Format string `json:"format,omitempty"`
}

// UnmarshalJSON takes a string or a {"secret", "format"} object.
func (h *HeaderValue) UnmarshalJSON(b []byte) error {
	*h = HeaderValue{}
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &h.Value)
	}
	var s headerSecret
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return errors.New(`a header value is a string or {"secret": "<name>", "format": "Bearer %s"}`)
	}
	h.Secret, h.Format = s.Secret, s.Format
	return nil
}

// MarshalJSON writes the form it was read from.
func (h HeaderValue) MarshalJSON() ([]byte, error) {
	if h.Secret == "" {
		return json.Marshal(h.Value)
	}
	return json.Marshal(headerSecret{Secret: h.Secret, Format: h.Format})
}

// checkShape lets the structural pass accept both forms of a header value.
func (HeaderValue) checkShape(file string, n *node, path string, ps *Problems) {
	switch n.kind {
	case 's':
		return
	case 'o':
		checkShape(file, n, jsonShapeOf[headerSecret](), path, ps)
	default:
		ps.add(file, path, n.text(), `want a string or {"secret": "<name>", "format": "Bearer %%s"}, got %s`, n.kindName())
	}
}

// ReservedBodyFields are the request members a template may not set: the
// client writes them from the call itself (model, messages, tools and the
// tool choice), reads one non-streamed choice (stream, stream_options, n),
// or has its own config key (temperature, reasoning_effort).
var ReservedBodyFields = map[string]string{
	"model":            "the client sends models.<name>.model",
	"messages":         "the client sends the conversation",
	"tools":            "the client sends the tools of the lane",
	"tool_choice":      "the client sets it per call",
	"functions":        "the legacy form of tools, which the client owns",
	"function_call":    "the legacy form of tool_choice, which the client owns",
	"stream":           "choir reads whole answers, never a stream",
	"stream_options":   "choir reads whole answers, never a stream",
	"n":                "choir reads one choice",
	"temperature":      "set models.<name>.temperature instead",
	"reasoning_effort": "set models.<name>.reasoning_effort instead",
}

// ReservedHeaders are the headers the client frames every request with.
// Authorization is refused only when the model has a secret (the client
// sends "Bearer <key>" for it); without one a template may send its own.
var ReservedHeaders = []string{"Accept", "Connection", "Content-Length", "Content-Type", "Host", "Transfer-Encoding"}

// MaxFallbacks bounds a model's fallback list.
const MaxFallbacks = 4

// modelExtras checks a model's fallback list and request template. A
// fallback is used one level deep: when the model fails, its fallbacks are
// tried in order and a fallback's own fallbacks are never followed, so two
// models may name each other and no cycle can form.
func (v *validator) modelExtras(name string, m Model) {
	p := "models." + name
	seen := map[string]bool{}
	if len(m.Fallback) > MaxFallbacks {
		v.add(p+".fallback", fmt.Sprint(len(m.Fallback)), "at most %d fallbacks", MaxFallbacks)
	}
	for i, f := range m.Fallback {
		fp := fmt.Sprintf("%s.fallback[%d]", p, i)
		switch _, ok := v.c.Models[f]; {
		case f == name:
			v.add(fp, quote(f), "a model cannot be its own fallback; name another model")
		case seen[f]:
			v.add(fp, quote(f), "named twice in the list; keep one")
		case !ok:
			v.add(fp, quote(f), "no model named %q (have: %s)", f, list(sortedKeys(v.c.Models)))
		}
		seen[f] = true
	}
	if m.Request == nil {
		return
	}
	for _, k := range sortedKeys(m.Request.Body) {
		bp := p + ".request.body." + k
		if why, ok := ReservedBodyFields[k]; ok {
			v.add(bp, "", "a request template cannot set %q: %s; remove it", k, why)
			continue
		}
		if strings.TrimSpace(k) == "" {
			v.add(bp, quote(k), "a body field needs a name")
		}
	}
	for _, k := range sortedKeys(m.Request.Headers) {
		h, hp := m.Request.Headers[k], p+".request.headers."+k
		canon := http.CanonicalHeaderKey(k)
		switch {
		case !validHeaderName(k):
			v.add(hp, quote(k), "not a valid HTTP header name (letters, digits and !#$%%&'*+-.^_`|~)")
			continue
		case slices.Contains(ReservedHeaders, canon):
			v.add(hp, "", "the client sets %s itself; remove it", canon)
			continue
		case canon == "Authorization" && m.Secret != "":
			v.add(hp, "", "the client sends models.%s.secret as Authorization: remove the header or the secret", name)
			continue
		}
		for _, o := range sortedKeys(m.Request.Headers) {
			if o < k && http.CanonicalHeaderKey(o) == canon {
				v.add(hp, "", "the header %s is also given as %q; keep one", canon, o)
			}
		}
		if h.Secret == "" {
			if strings.ContainsAny(h.Value, "\r\n\x00") {
				v.add(hp, quote(h.Value), "a header value cannot hold a line break or NUL")
			}
			continue
		}
		v.secret(hp+".secret", h.Secret, true)
		if h.Format != "" && (strings.Count(h.Format, "%s") != 1 || strings.Count(h.Format, "%") != 1) {
			v.add(hp+".format", quote(h.Format), `want exactly one %%s where the secret goes and no other %%, e.g. "Bearer %%s"`)
		}
		if strings.ContainsAny(h.Format, "\r\n\x00") {
			v.add(hp+".format", quote(h.Format), "a header value cannot hold a line break or NUL")
		}
		if s, ok := v.secrets[h.Secret]; ok && strings.ContainsAny(s, "\r\n\x00") {
			v.add(hp+".secret", quote(h.Secret), "the secret's value holds a line break or NUL and cannot be sent in a header (value not shown)")
		}
	}
}

// validHeaderName is RFC 9110's token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 0x7e || !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)) {
			return false
		}
	}
	return true
}

// modelSecrets names the secrets a call to the model may use: its key and
// its template's header secrets.
func (m Model) modelSecrets() []string {
	out := []string{m.Secret}
	if m.Request != nil {
		for _, k := range sortedKeys(m.Request.Headers) {
			out = append(out, m.Request.Headers[k].Secret)
		}
	}
	return out
}
