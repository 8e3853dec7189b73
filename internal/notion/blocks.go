package notion

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
)

// Block is one block, with its raw content: Line renders it.
type Block struct {
	ID          string
	Type        string
	HasChildren bool
	// Content is the member named after the type ({"rich_text":...}).
	Content json.RawMessage
}

// BlockList is one page of a block's children.
type BlockList struct {
	Blocks     []Block
	NextCursor string
}

// BlockChildren runs GET /blocks/{id}/children for one page of children.
func (c *Client) BlockChildren(ctx context.Context, id, cursor string, pageSize int) (*BlockList, error) {
	id, err := ParseID(id)
	if err != nil {
		return nil, &APIError{Endpoint: "GET " + c.api.Base.Host + c.api.Base.Path + "/blocks", Message: err.Error()}
	}
	q := url.Values{}
	if pageSize > 0 {
		q.Set("page_size", strconv.Itoa(min(pageSize, MaxPageSize)))
	}
	if cursor != "" {
		q.Set("start_cursor", cursor)
	}
	var l list
	if err := c.do(ctx, "GET", "/blocks/"+id+"/children", q, nil, &l); err != nil {
		return nil, err
	}
	out := &BlockList{NextCursor: l.cursor()}
	for _, raw := range l.Results {
		var b struct {
			ID          string `json:"id"`
			Type        string `json:"type"`
			HasChildren bool   `json:"has_children"`
		}
		json.Unmarshal(raw, &b)
		var members map[string]json.RawMessage
		json.Unmarshal(raw, &members)
		out.Blocks = append(out.Blocks, Block{ID: b.ID, Type: b.Type, HasChildren: b.HasChildren, Content: members[b.Type]})
	}
	return out, nil
}
