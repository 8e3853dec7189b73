package ctl

import (
	"context"
	"fmt"
	"net/url"

	"choir/internal/rpc"
)

// MemorySearch searches an agent's session or knowledge memory: the input
// of choir.memory.query, run by the same handler in choird.
func (c *Client) MemorySearch(ctx context.Context, agentID string, q rpc.MemoryQuery) (*rpc.MemoryAnswer, error) {
	var out rpc.MemoryAnswer
	if err := c.postJSON(ctx, "/v1/memory/"+url.PathEscape(agentID)+"/search", q, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// MemoryUpsert adds, replaces or deletes a document of an agent's
// knowledge: the input of choir.memory.upsert, written as that agent.
func (c *Client) MemoryUpsert(ctx context.Context, agentID string, u rpc.MemoryUpsert) (*rpc.MemoryAnswer, error) {
	var out rpc.MemoryAnswer
	if err := c.postJSON(ctx, "/v1/memory/"+url.PathEscape(agentID)+"/upsert", u, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// MemoryKnowledge lists an agent's newest knowledge documents (limit 0:
// choird's default).
func (c *Client) MemoryKnowledge(ctx context.Context, agentID string, limit int) (*rpc.MemoryAnswer, error) {
	var out rpc.MemoryAnswer
	path := "/v1/memory/" + url.PathEscape(agentID) + "/knowledge"
	if limit != 0 {
		path += fmt.Sprintf("?limit=%d", limit)
	}
	if err := c.getJSON(ctx, path, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
