package docker

import (
	"context"
	"net/url"
)

// ImageRemoveOptions are the parameters of DELETE /images/{name}.
type ImageRemoveOptions struct {
	Force   bool // remove even when tagged several times or used by a stopped container
	NoPrune bool // keep untagged parent images
}

// ImageDeleted is one effect of an image removal: a name removed
// (Untagged) or an image deleted (Deleted).
type ImageDeleted struct {
	Untagged string `json:",omitempty"`
	Deleted  string `json:",omitempty"`
}

// ImageRemove removes the name ref, and the image when no name is left. An
// image a container uses is an *APIError for which IsConflict is true.
func (c *Client) ImageRemove(ctx context.Context, ref string, opts ImageRemoveOptions) ([]ImageDeleted, error) {
	q := url.Values{}
	if opts.Force {
		q.Set("force", "1")
	}
	if opts.NoPrune {
		q.Set("noprune", "1")
	}
	p, err := imagePath(ref, "")
	if err != nil {
		return nil, err
	}
	var out []ImageDeleted
	err = c.do(ctx, request{method: "DELETE", path: p, query: q}, &out)
	return out, err
}
