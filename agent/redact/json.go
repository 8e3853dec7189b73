package redact

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
)

// JSON returns the JSON document raw with every secret value replaced inside
// its strings, member names included, so the result is still valid JSON:
// raw itself when it holds no secret. A changed document is re-encoded by
// encoding/json (members sorted, numbers as written). A document that is not
// JSON is redacted as text.
func (r *Redactor) JSON(raw []byte) []byte { return redactJSON(r.load(), raw) }

func redactJSON(m *matcher, raw []byte) []byte {
	if m == nil || len(scan(m, raw, true)) == 0 {
		return raw // the common case: one pass, nothing allocated
	}
	if !json.Valid(raw) {
		return rewrite(m, make([]byte, 0, len(raw)), raw, scan(m, raw, false))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return rewrite(m, make([]byte, 0, len(raw)), raw, scan(m, raw, false))
	}
	out, err := json.Marshal(m.walk(v))
	if err != nil {
		return rewrite(m, make([]byte, 0, len(raw)), raw, scan(m, raw, false))
	}
	return out
}

// str redacts one string.
func (m *matcher) str(s string) string {
	spans := scan(m, s, false)
	if len(spans) == 0 {
		return s
	}
	return string(rewrite(m, make([]byte, 0, len(s)), s, spans))
}

// walk redacts every string of a decoded document. Two member names that
// become one after redaction are kept apart by a suffix (" 2", " 3", ...).
func (m *matcher) walk(v any) any {
	switch x := v.(type) {
	case string:
		return m.str(x)
	case []any:
		for i := range x {
			x[i] = m.walk(x[i])
		}
		return x
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make(map[string]any, len(x))
		for _, k := range keys {
			nk := m.str(k)
			for n := 2; ; n++ {
				if _, dup := out[nk]; !dup {
					break
				}
				nk = m.str(k) + " " + strconv.Itoa(n)
			}
			out[nk] = m.walk(x[k])
		}
		return out
	}
	return v
}
