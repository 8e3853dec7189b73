package notion_test

import (
	"context"
	"testing"

	"choir/internal/notion"
	"choir/testkit/notiontest"
)

func TestSearchFindsPagesAndDatabasesByTitleAcrossPages(t *testing.T) {
	fake := notiontest.New(t, token)
	p1 := fake.AddPage(notiontest.Page{Title: "Trip plan"})
	fake.AddPage(notiontest.Page{Title: "Groceries"})
	db := fake.AddDatabase("Trip budget")
	fake.SetMaxPageSize(1)
	c := client(t, fake, nil)

	res, err := c.Search(context.Background(), notion.SearchRequest{Query: "trip"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 1 || res.Results[0].Kind != "page" || res.Results[0].ID != p1 || res.Results[0].Title != "Trip plan" ||
		res.Results[0].URL == "" || res.NextCursor == "" {
		t.Fatalf("Search page 1 = %+v; want the page Trip plan and a cursor", res)
	}
	res, err = c.Search(context.Background(), notion.SearchRequest{Query: "trip", StartCursor: res.NextCursor})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 1 || res.Results[0].Kind != "database" || res.Results[0].ID != db || res.Results[0].Title != "Trip budget" || res.NextCursor != "" {
		t.Fatalf("Search page 2 = %+v; want the database Trip budget and no cursor", res)
	}

	res, err = c.Search(context.Background(), notion.SearchRequest{Filter: "database", PageSize: 10})
	if err != nil || len(res.Results) != 1 || res.Results[0].ID != db {
		t.Errorf("Search for databases = %+v, %v; want only the database", res, err)
	}
	req := fake.Requests()[2]
	if req.Method != "POST" || req.Path != "/v1/search" || req.Version != notion.Version || req.Token != token ||
		req.Body["page_size"] != float64(10) || req.Body["filter"].(map[string]any)["value"] != "database" {
		t.Errorf("search request = %+v", req)
	}

	for _, bad := range []notion.SearchRequest{{Filter: "block"}, {PageSize: 101}, {PageSize: -1}} {
		if _, err := c.Search(context.Background(), bad); err == nil {
			t.Errorf("Search(%+v) = nil error; want a refusal", bad)
		}
	}
	if n := len(fake.Requests()); n != 3 {
		t.Errorf("%d requests; want the refused searches never sent", n)
	}
}
