package notion

import (
	"context"
	"encoding/json"
	"fmt"
)

// DatabaseQuery is one POST /databases/{id}/query.
type DatabaseQuery struct {
	// Filter and Sorts are Notion's filter object and sorts array, passed
	// as they are; nil sends none.
	Filter json.RawMessage
	Sorts  json.RawMessage
	// PageSize is 1 to MaxPageSize; 0 means Notion's default (100).
	PageSize    int
	StartCursor string
}

// Row is one page of a database, its properties as text.
type Row struct {
	ID         string
	URL        string
	Title      string
	Properties []Property
}

// Rows is one page of a query's results.
type Rows struct {
	Rows       []Row
	NextCursor string
}

// QueryDatabase runs POST /databases/{id}/query.
func (c *Client) QueryDatabase(ctx context.Context, id string, q DatabaseQuery) (*Rows, error) {
	where := "POST " + c.api.Base.Host + c.api.Base.Path + "/databases"
	id, err := ParseID(id)
	if err != nil {
		return nil, &APIError{Endpoint: where, Message: err.Error()}
	}
	if q.PageSize < 0 || q.PageSize > MaxPageSize {
		return nil, &APIError{Endpoint: where, Message: fmt.Sprintf("page size %d: want 1 to %d", q.PageSize, MaxPageSize)}
	}
	body := map[string]any{}
	for name, raw := range map[string]json.RawMessage{"filter": q.Filter, "sorts": q.Sorts} {
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		if !json.Valid(raw) {
			return nil, &APIError{Endpoint: where, Message: name + " is not valid JSON"}
		}
		body[name] = raw
	}
	if q.PageSize > 0 {
		body["page_size"] = q.PageSize
	}
	if q.StartCursor != "" {
		body["start_cursor"] = q.StartCursor
	}
	var l list
	if err := c.do(ctx, "POST", "/databases/"+id+"/query", nil, body, &l); err != nil {
		return nil, err
	}
	out := &Rows{NextCursor: l.cursor()}
	for _, raw := range l.Results {
		var p struct {
			ID         string                     `json:"id"`
			URL        string                     `json:"url"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		json.Unmarshal(raw, &p)
		r := Row{ID: p.ID, URL: p.URL}
		r.Title, r.Properties = properties(p.Properties)
		out.Rows = append(out.Rows, r)
	}
	return out, nil
}
