package notion_test

import (
	"context"
	"testing"

	"choir/testkit/notiontest"
)

// TestPagePropertiesAsText reads every kind of property value Notion sends
// as text, and survives values of the wrong JSON type.
func TestPagePropertiesAsText(t *testing.T) {
	fake := notiontest.New(t, token)
	num := func(n float64) map[string]any { return map[string]any{"type": "number", "number": n} }
	id := fake.AddPage(notiontest.Page{Title: "Everything", Properties: map[string]map[string]any{
		"Tags":     {"type": "multi_select", "multi_select": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}},
		"When":     {"type": "date", "date": map[string]any{"start": "2026-01-01", "end": "2026-01-03"}},
		"Who":      {"type": "people", "people": []any{map[string]any{"object": "user", "id": "u1", "name": "Ada"}}},
		"Links":    {"type": "relation", "relation": []any{map[string]any{"id": "r-1"}}, "has_more": false},
		"Score":    {"type": "formula", "formula": map[string]any{"type": "number", "number": 7}},
		"Label":    {"type": "formula", "formula": map[string]any{"type": "string", "string": "hot"}},
		"Done?":    {"type": "formula", "formula": map[string]any{"type": "boolean", "boolean": true}},
		"Sum":      {"type": "rollup", "rollup": map[string]any{"type": "number", "number": 12.5, "function": "sum"}},
		"Each":     {"type": "rollup", "rollup": map[string]any{"type": "array", "array": []any{num(1), num(2)}}},
		"Ticket":   {"type": "unique_id", "unique_id": map[string]any{"prefix": "T", "number": 42}},
		"Site":     {"type": "url", "url": "https://example.com"},
		"Mail":     {"type": "email", "email": "a@example.com"},
		"Empty":    {"type": "select", "select": nil},
		"NoNumber": {"type": "number", "number": nil},
		"Odd":      {"type": "number", "number": "seven"},
		"Unknown":  {"type": "button", "button": map[string]any{}},
		"Files":    {"type": "files", "files": []any{map[string]any{"name": "plan.pdf", "type": "external"}}},
	}})
	p, err := client(t, fake, nil).Page(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, pr := range p.Properties {
		got[pr.Name] = pr.Text
	}
	want := map[string]string{
		"title": "Everything", "Tags": "a, b", "When": "2026-01-01 → 2026-01-03", "Who": "Ada", "Links": "r-1",
		"Score": "7", "Label": "hot", "Done?": "true", "Sum": "12.5", "Each": "1, 2", "Ticket": "T-42",
		"Site": "https://example.com", "Mail": "a@example.com", "Empty": "", "NoNumber": "", "Odd": "", "Unknown": "", "Files": "plan.pdf",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("property %s = %q; want %q", k, got[k], v)
		}
	}
	if p.Title != "Everything" || p.Properties[0].Name != "title" || p.ID != id || p.URL == "" {
		t.Errorf("Page = %+v; want the title first", p)
	}
}

func TestPageRefusesWhatIsNotAPage(t *testing.T) {
	fake := notiontest.New(t, token)
	db := fake.AddDatabase("A database")
	c := client(t, fake, nil)
	if _, err := c.Page(context.Background(), db); err == nil {
		t.Error("Page(a database id) = nil error; want not found")
	}
	for _, bad := range []string{"", "../../users/me", "0123abcd"} {
		if _, err := c.Page(context.Background(), bad); err == nil {
			t.Errorf("Page(%q) = nil error", bad)
		}
	}
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("%d requests; want only the database id sent", n)
	}
}
