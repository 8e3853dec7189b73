package notion

import (
	"context"
	"encoding/json"
	"fmt"
)

// SearchRequest is one POST /search.
type SearchRequest struct {
	// Query matches titles; "" lists everything shared with the
	// integration.
	Query string
	// Filter is "page", "database" or "" for both.
	Filter string
	// PageSize is 1 to MaxPageSize; 0 means Notion's default (100).
	PageSize    int
	StartCursor string
}

// Object is a page or database found by a search.
type Object struct {
	// Kind is "page" or "database".
	Kind           string
	ID             string
	URL            string
	Title          string
	LastEditedTime string
	Archived       bool
}

// SearchResult is one page of search results.
type SearchResult struct {
	Results []Object
	// NextCursor is the StartCursor of the next page; "" when none.
	NextCursor string
}

// Search runs POST /search.
func (c *Client) Search(ctx context.Context, r SearchRequest) (*SearchResult, error) {
	if r.Filter != "" && r.Filter != "page" && r.Filter != "database" {
		return nil, &APIError{Endpoint: "POST " + c.api.Base.Host + c.api.Base.Path + "/search", Message: fmt.Sprintf("filter %q: want page, database or nothing", r.Filter)}
	}
	if r.PageSize < 0 || r.PageSize > MaxPageSize {
		return nil, &APIError{Endpoint: "POST " + c.api.Base.Host + c.api.Base.Path + "/search", Message: fmt.Sprintf("page size %d: want 1 to %d", r.PageSize, MaxPageSize)}
	}
	body := map[string]any{}
	if r.Query != "" {
		body["query"] = r.Query
	}
	if r.Filter != "" {
		body["filter"] = map[string]string{"property": "object", "value": r.Filter}
	}
	if r.PageSize > 0 {
		body["page_size"] = r.PageSize
	}
	if r.StartCursor != "" {
		body["start_cursor"] = r.StartCursor
	}
	var l list
	if err := c.do(ctx, "POST", "/search", nil, body, &l); err != nil {
		return nil, err
	}
	out := &SearchResult{NextCursor: l.cursor()}
	for _, raw := range l.Results {
		out.Results = append(out.Results, object(raw))
	}
	return out, nil
}

// object reads a page or database object.
func object(raw json.RawMessage) Object {
	var o struct {
		Object         string                     `json:"object"`
		ID             string                     `json:"id"`
		URL            string                     `json:"url"`
		LastEditedTime string                     `json:"last_edited_time"`
		Archived       bool                       `json:"archived"`
		InTrash        bool                       `json:"in_trash"`
		Title          json.RawMessage            `json:"title"` // databases
		Properties     map[string]json.RawMessage `json:"properties"`
	}
	json.Unmarshal(raw, &o)
	obj := Object{Kind: o.Object, ID: o.ID, URL: o.URL, LastEditedTime: o.LastEditedTime, Archived: o.Archived || o.InTrash}
	if o.Object == "database" {
		obj.Title = richText(o.Title)
	} else {
		obj.Title, _ = properties(o.Properties)
	}
	return obj
}
