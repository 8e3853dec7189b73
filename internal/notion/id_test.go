package notion_test

import (
	"testing"

	"choir/internal/notion"
)

func TestParseID(t *testing.T) {
	const want = "0123abcd-4567-89ab-cdef-0123456789ab"
	for _, in := range []string{
		want,
		"0123ABCD456789abcdef0123456789ab",
		" 0123abcd456789abcdef0123456789ab ",
		"https://www.notion.so/Trip-plan-0123abcd456789abcdef0123456789ab",
		"https://www.notion.so/team/0123abcd456789abcdef0123456789ab?v=ffff",
		"https://acme.notion.site/Cafe-0123abcd456789abcdef0123456789ab/",
	} {
		if got, err := notion.ParseID(in); got != want || err != nil {
			t.Errorf("ParseID(%q) = %q, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "trip plan", "0123abcd", "0123abcd456789abcdef0123456789abff", "../../users", "https://www.notion.so/Trip-plan", "0123abcd456789abcdef0123456789ag"} {
		if got, err := notion.ParseID(in); err == nil {
			t.Errorf("ParseID(%q) = %q; want an error", in, got)
		}
	}
}
