package docker

import (
	"context"
	"fmt"
	"net/url"
)

// SecretList lists secrets (without their data), asked of a manager.
// Filters are keys of the Engine API: "id", "label", "name", "names".
func (c *Client) SecretList(ctx context.Context, filters Filters) ([]Secret, error) {
	q := url.Values{}
	if err := filters.addTo(q); err != nil {
		return nil, fmt.Errorf("docker secret list: encode filters: %w", err)
	}
	var out []Secret
	err := c.do(ctx, request{method: "GET", path: "/secrets", query: q}, &out)
	return out, err
}
