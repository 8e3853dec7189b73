package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
)

// forms returns the texts a value v may appear as, without duplicates: the
// raw value; JSON-escaped once and twice (a tool result quoted in a model
// request), with and without HTML escaping; URL-escaped (query and path);
// lower- and upper-case hex; and base64 (standard and URL alphabets) at each
// of the three byte alignments v can have inside a longer encoded text, cut
// to the characters that depend on v alone (an HTTP Basic header, a
// base64-dumped config).
func forms(v string) []string {
	out := []string{v}
	seen := map[string]bool{v: true}
	add := func(f string) {
		if f != "" && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	for _, html := range []bool{true, false} {
		once := jsonEscape(v, html)
		add(once)
		add(jsonEscape(once, html))
	}
	add(url.QueryEscape(v))
	add(url.PathEscape(v))
	h := hex.EncodeToString([]byte(v))
	add(h)
	add(strings.ToUpper(h))
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for pad := 0; pad < 3; pad++ {
			add(base64Core(enc, v, pad))
		}
	}
	return out
}

// jsonEscape is v as it appears between the quotes of a JSON string.
func jsonEscape(v string, html bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	q := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	return string(q[1 : len(q)-1])
}

// base64Core is the part of the base64 encoding of v, preceded by pad bytes
// of the same encoded text, that depends on v alone: the characters touching
// the pad bytes and the last partial group are cut. It is empty when v is
// too short to leave any.
func base64Core(enc *base64.Encoding, v string, pad int) string {
	src := append(make([]byte, pad, pad+len(v)), v...)
	e := strings.TrimRight(enc.EncodeToString(src), "=")
	// Characters 0..skip-1 carry bits of the pad bytes.
	skip := 0
	if pad > 0 {
		skip = (pad*8 + 5) / 6
	}
	// The characters after them hold bits of v alone, up to the last one
	// that ends inside v: a partial one depends on what follows v.
	full := 8 * len(src) / 6
	if full > len(e) {
		full = len(e)
	}
	if full-skip < MinLen {
		return ""
	}
	return e[skip:full]
}
