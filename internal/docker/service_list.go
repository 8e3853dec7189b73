package docker

import (
	"context"
	"fmt"
	"net/url"
)

// ServiceList lists services, asked of a manager. Filters are keys of the
// Engine API: "id", "label", "mode", "name".
func (c *Client) ServiceList(ctx context.Context, filters Filters) ([]Service, error) {
	q := url.Values{}
	if err := filters.addTo(q); err != nil {
		return nil, fmt.Errorf("docker service list: encode filters: %w", err)
	}
	var out []Service
	err := c.do(ctx, request{method: "GET", path: "/services", query: q}, &out)
	return out, err
}
