package notion

import (
	"context"
	"encoding/json"
)

// Page is a page's metadata and properties.
type Page struct {
	ID         string
	URL        string
	Title      string
	Archived   bool
	Properties []Property
}

// Page runs GET /pages/{id}; id is anything ParseID takes.
func (c *Client) Page(ctx context.Context, id string) (*Page, error) {
	id, err := ParseID(id)
	if err != nil {
		return nil, &APIError{Endpoint: "GET " + c.api.Base.Host + c.api.Base.Path + "/pages", Message: err.Error()}
	}
	var p struct {
		Object     string                     `json:"object"`
		ID         string                     `json:"id"`
		URL        string                     `json:"url"`
		Archived   bool                       `json:"archived"`
		InTrash    bool                       `json:"in_trash"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := c.do(ctx, "GET", "/pages/"+id, nil, nil, &p); err != nil {
		return nil, err
	}
	if p.Object != "page" || p.ID == "" {
		return nil, &APIError{Endpoint: "GET " + c.api.Base.Host + c.api.Base.Path + "/pages/" + id, Status: 200, Message: `the answer is not a page object (want "object":"page")`}
	}
	page := &Page{ID: p.ID, URL: p.URL, Archived: p.Archived || p.InTrash}
	page.Title, page.Properties = properties(p.Properties)
	return page, nil
}
