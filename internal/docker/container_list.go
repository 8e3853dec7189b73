package docker

import (
	"context"
	"fmt"
	"net/url"
)

// ContainerListOptions are the parameters of GET /containers/json.
type ContainerListOptions struct {
	All     bool    // include stopped containers; by default only running ones
	Filters Filters // e.g. {"label": {"choir.agent=alice"}}, {"status": {"exited"}}, {"name": {"choir-"}}
}

// ContainerSummary is one entry of a container list.
type ContainerSummary struct {
	ID      string   `json:"Id"`
	Names   []string // with a leading "/"
	Image   string
	ImageID string
	Command string
	Created int64  // Unix seconds
	State   string // "created", "running", "exited", ...
	Status  string // human text: "Up 2 minutes", "Exited (0) 1 second ago"
	Labels  map[string]string
}

// ContainerList lists containers.
func (c *Client) ContainerList(ctx context.Context, opts ContainerListOptions) ([]ContainerSummary, error) {
	q := url.Values{}
	if opts.All {
		q.Set("all", "1")
	}
	if err := opts.Filters.addTo(q); err != nil {
		return nil, fmt.Errorf("docker container list: encode filters: %w", err)
	}
	var out []ContainerSummary
	err := c.do(ctx, request{method: "GET", path: "/containers/json", query: q}, &out)
	return out, err
}
