package notion_test

import (
	"context"
	"encoding/json"
	"testing"

	"choir/internal/notion"
	"choir/testkit/notiontest"
)

func TestBlockChildrenPaginates(t *testing.T) {
	fake := notiontest.New(t, token)
	id := fake.AddPage(notiontest.Page{Title: "p", Blocks: []notiontest.Block{
		notiontest.Paragraph("one"), notiontest.Paragraph("two", notiontest.Paragraph("nested")), notiontest.Divider(),
	}})
	c := client(t, fake, nil)
	l, err := c.BlockChildren(context.Background(), id, "", 2)
	if err != nil || len(l.Blocks) != 2 || l.NextCursor == "" {
		t.Fatalf("BlockChildren page 1 = %+v, %v; want two blocks and a cursor", l, err)
	}
	if b := l.Blocks[1]; b.Type != "paragraph" || !b.HasChildren || b.Line(0) != "two" {
		t.Errorf("second block = %+v", b)
	}
	l, err = c.BlockChildren(context.Background(), id, l.NextCursor, 2)
	if err != nil || len(l.Blocks) != 1 || l.Blocks[0].Type != "divider" || l.NextCursor != "" {
		t.Errorf("BlockChildren page 2 = %+v, %v; want the divider and the end", l, err)
	}
	if q := fake.Requests()[0].Query; q.Get("page_size") != "2" || q.Has("start_cursor") {
		t.Errorf("first request query %v", q)
	}
}

func TestBlockLine(t *testing.T) {
	rt := `[{"type":"text","plain_text":"hi | there"}]`
	cases := []struct {
		typ, content string
		want         string
	}{
		{"callout", `{"rich_text":` + rt + `,"icon":{"type":"emoji","emoji":"💡"}}`, "> 💡 hi | there"},
		{"bookmark", `{"url":"https://x.example","caption":[{"plain_text":"x"}]}`, "https://x.example (x)"},
		{"image", `{"type":"external","external":{"url":"https://x.example/a.png"},"caption":[]}`, "[image] https://x.example/a.png"},
		{"table_row", `{"cells":[` + rt + `,[{"plain_text":"b"}]]}`, `| hi \| there | b |`},
		{"equation", `{"expression":"e=mc^2"}`, "$$e=mc^2$$"},
		{"toggle", `{"rich_text":` + rt + `}`, "- hi | there"},
		{"column_list", `{}`, ""},
		{"ai_block", `{}`, "[ai_block]"},
		{"paragraph", `"not an object"`, ""},
		{"paragraph", `{"rich_text":[{"text":{"content":"no plain"}}]}`, "no plain"},
	}
	for _, tc := range cases {
		b := notion.Block{Type: tc.typ, Content: json.RawMessage(tc.content)}
		if got := b.Line(0); got != tc.want {
			t.Errorf("Block{%s %s}.Line = %q; want %q", tc.typ, tc.content, got, tc.want)
		}
	}
}
