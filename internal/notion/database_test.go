package notion_test

import (
	"context"
	"encoding/json"
	"testing"

	"choir/internal/notion"
	"choir/testkit/notiontest"
)

func TestQueryDatabaseReturnsRowsAsText(t *testing.T) {
	fake := notiontest.New(t, token)
	db := fake.AddDatabase("Tasks",
		notiontest.Page{Title: "Write report", Properties: map[string]map[string]any{
			"Status": notiontest.Status("Done"), "Hours": notiontest.Number(2.5), "Due": notiontest.Date("2026-12-01"),
			"Urgent": notiontest.Checkbox(true), "Tag": notiontest.Select("work"), "Note": notiontest.Text("first draft"),
		}},
		notiontest.Page{Title: "Call bank", Properties: map[string]map[string]any{"Status": notiontest.Status("Todo")}},
	)
	c := client(t, fake, nil)
	rows, err := c.QueryDatabase(context.Background(), db, notion.DatabaseQuery{
		Filter: json.RawMessage(`{"property":"Status","status":{"equals":"Done"}}`),
		Sorts:  json.RawMessage(`[{"property":"Due","direction":"ascending"}]`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows.Rows) != 1 || rows.NextCursor != "" {
		t.Fatalf("QueryDatabase = %+v; want the one Done row", rows)
	}
	r := rows.Rows[0]
	got := map[string]string{}
	for _, p := range r.Properties {
		got[p.Name] = p.Text
	}
	want := map[string]string{"Name": "Write report", "Status": "Done", "Hours": "2.5", "Due": "2026-12-01", "Urgent": "yes", "Tag": "work", "Note": "first draft"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("row property %s = %q; want %q", k, got[k], v)
		}
	}
	if r.Title != "Write report" || r.Properties[0].Name != "Name" {
		t.Errorf("row title %q, first property %q; want the title first", r.Title, r.Properties[0].Name)
	}
	body := fake.Requests()[0].Body
	if _, ok := body["sorts"].([]any); !ok {
		t.Errorf("query body %v; want the sorts passed on", body)
	}

	// Pagination.
	fake.SetMaxPageSize(1)
	rows, err = c.QueryDatabase(context.Background(), db, notion.DatabaseQuery{})
	if err != nil || len(rows.Rows) != 1 || rows.NextCursor == "" {
		t.Fatalf("first page = %+v, %v", rows, err)
	}
	rows, err = c.QueryDatabase(context.Background(), db, notion.DatabaseQuery{StartCursor: rows.NextCursor})
	if err != nil || len(rows.Rows) != 1 || rows.Rows[0].Title != "Call bank" || rows.NextCursor != "" {
		t.Errorf("second page = %+v, %v; want Call bank and the end", rows, err)
	}

	for _, bad := range []notion.DatabaseQuery{{Filter: json.RawMessage(`{"property":`)}, {PageSize: 500}} {
		if _, err := c.QueryDatabase(context.Background(), db, bad); err == nil {
			t.Errorf("QueryDatabase(%+v) = nil error; want a refusal", bad)
		}
	}
	if _, err := c.QueryDatabase(context.Background(), "not-an-id", notion.DatabaseQuery{}); err == nil {
		t.Error("QueryDatabase with a bad id = nil error")
	}
}
