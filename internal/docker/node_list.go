package docker

import (
	"context"
	"fmt"
	"net/url"
)

// NodeList lists the swarm's nodes, asked of a manager. Filters are keys
// of the Engine API: "id", "label" (engine labels), "node.label" (the
// Spec's labels, API 1.41), "membership", "name", "role".
func (c *Client) NodeList(ctx context.Context, filters Filters) ([]Node, error) {
	q := url.Values{}
	if err := filters.addTo(q); err != nil {
		return nil, fmt.Errorf("docker node list: encode filters: %w", err)
	}
	var out []Node
	err := c.do(ctx, request{method: "GET", path: "/nodes", query: q}, &out)
	return out, err
}
