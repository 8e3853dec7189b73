package docker

import (
	"context"
	"fmt"
	"net/url"
)

// ImageListOptions are the parameters of GET /images/json.
type ImageListOptions struct {
	All     bool    // include intermediate images
	Filters Filters // e.g. {"label": {"choir.agent=alice"}}, {"reference": {"choir/*"}}, {"dangling": {"true"}}
}

// ImageSummary is one entry of an image list.
type ImageSummary struct {
	ID          string `json:"Id"`
	ParentID    string `json:"ParentId"`
	RepoTags    []string
	RepoDigests []string
	Created     int64 // Unix seconds
	Size        int64
	Labels      map[string]string
	Containers  int64 // -1 when the engine did not count them
}

// ImageList lists images.
func (c *Client) ImageList(ctx context.Context, opts ImageListOptions) ([]ImageSummary, error) {
	q := url.Values{}
	if opts.All {
		q.Set("all", "1")
	}
	if err := opts.Filters.addTo(q); err != nil {
		return nil, fmt.Errorf("docker image list: encode filters: %w", err)
	}
	var out []ImageSummary
	err := c.do(ctx, request{method: "GET", path: "/images/json", query: q}, &out)
	return out, err
}
