package notion

import (
	"encoding/json"
	"regexp"
	"testing"
)

var dashedRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// FuzzParseID: an accepted id is always the dashed lowercase form, and
// parsing it again gives itself; nothing else (a path, a query) gets through.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{"0123abcd456789abcdef0123456789ab", "https://www.notion.so/a-0123abcd456789abcdef0123456789ab?v=1", "../x", "http://[::1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseID(s)
		if err != nil {
			return
		}
		if !dashedRE.MatchString(id) {
			t.Fatalf("ParseID(%q) = %q; not a dashed id", s, id)
		}
		if again, err := ParseID(id); again != id || err != nil {
			t.Fatalf("ParseID(%q) = %q, %v; want itself", id, again, err)
		}
	})
}

// FuzzRender: property values and blocks of any shape render without a
// panic.
func FuzzRender(f *testing.F) {
	for _, s := range []string{`{"type":"rollup","rollup":{"type":"array","array":[{"type":"number","number":1}]}}`,
		`{"type":"formula","formula":{"type":"formula","formula":{}}}`, `{"type":"title","title":[{"plain_text":"x"}]}`, `[]`, `null`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		propertyText(json.RawMessage(s))
		richText(json.RawMessage(s))
		for _, typ := range []string{"paragraph", "code", "table_row", "image", "callout", "x"} {
			Block{Type: typ, Content: json.RawMessage(s)}.Line(3)
		}
		parseError(400, []byte(s))
	})
}
