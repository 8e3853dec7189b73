package notion_test

import (
	"context"
	"strings"
	"testing"

	"choir/internal/notion"
	"choir/testkit/notiontest"
)

func TestPageTextRendersBlocksNestedAndPaginated(t *testing.T) {
	fake := notiontest.New(t, token)
	id := fake.AddPage(notiontest.Page{Title: "Trip plan", Blocks: []notiontest.Block{
		notiontest.Heading(1, "Before"),
		notiontest.Paragraph("Book the train."),
		notiontest.Bullet("Pack", notiontest.Bullet("socks"), notiontest.ToDo("passport", true)),
		notiontest.Numbered("Leave"),
		notiontest.Numbered("Arrive"),
		notiontest.Quote("Travel light"),
		notiontest.Code("bash", "echo hi\necho bye"),
		notiontest.Divider(),
		notiontest.ChildPage("Hotels"),
		notiontest.ToDo("insurance", false),
	}})
	fake.SetMaxPageSize(3) // the page's blocks come in four pages
	pt, err := client(t, fake, nil).PageText(context.Background(), strings.ReplaceAll(id, "-", ""), notion.TextLimits{})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"# Trip plan",
		"# Before",
		"Book the train.",
		"- Pack",
		"  - socks",
		"  [x] passport",
		"1. Leave",
		"2. Arrive",
		"> Travel light",
		"```bash",
		"echo hi",
		"echo bye",
		"```",
		"---",
		"[page: Hotels] (id ",
	}, "\n")
	if !strings.HasPrefix(pt.Text, want) || !strings.HasSuffix(pt.Text, "[ ] insurance") {
		t.Errorf("PageText =\n%s\nwant it to begin\n%s\nand end with the open to-do", pt.Text, want)
	}
	if pt.Truncated || pt.Blocks != 12 || pt.Page.Title != "Trip plan" || pt.Page.ID != id {
		t.Errorf("PageText = truncated %v, %d blocks, page %+v; want whole, 12 blocks", pt.Truncated, pt.Blocks, pt.Page)
	}
	for _, r := range fake.Requests() {
		if r.Method == "GET" && strings.HasPrefix(r.Path, "/v1/blocks/") && r.Query.Get("page_size") != "100" {
			t.Errorf("%s asked page_size %q; want 100", r.Path, r.Query.Get("page_size"))
		}
	}
}

func TestPageTextStopsAtItsLimits(t *testing.T) {
	fake := notiontest.New(t, token)
	var blocks []notiontest.Block
	for range 50 {
		blocks = append(blocks, notiontest.Paragraph(strings.Repeat("word ", 20)))
	}
	blocks = append(blocks, notiontest.Bullet("deep", notiontest.Bullet("deeper", notiontest.Bullet("deepest"))))
	id := fake.AddPage(notiontest.Page{Title: "Long", Blocks: blocks})
	c := client(t, fake, nil)

	pt, err := c.PageText(context.Background(), id, notion.TextLimits{MaxChars: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if !pt.Truncated || len(pt.Text) > 1100 || !strings.HasSuffix(pt.Text, "[truncated: the text reached 1000 characters]") {
		t.Errorf("PageText with MaxChars 1000 = %d chars, truncated %v, ending %q", len(pt.Text), pt.Truncated, pt.Text[max(0, len(pt.Text)-60):])
	}
	pt, err = c.PageText(context.Background(), id, notion.TextLimits{MaxBlocks: 10})
	if err != nil || !pt.Truncated || pt.Blocks != 10 || !strings.Contains(pt.Text, "more than 10 blocks") {
		t.Errorf("PageText with MaxBlocks 10 = %d blocks, truncated %v, %v", pt.Blocks, pt.Truncated, err)
	}
	pt, err = c.PageText(context.Background(), id, notion.TextLimits{MaxDepth: 2})
	if err != nil || !strings.Contains(pt.Text, "- deep\n  - deeper\n    [nested blocks not shown]") || strings.Contains(pt.Text, "deepest") {
		t.Errorf("PageText with MaxDepth 2 = %v\n%s", err, pt.Text[max(0, len(pt.Text)-120):])
	}
}
