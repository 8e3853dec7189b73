package docker

import (
	"context"
	"net/url"
)

// ContainerRemoveOptions are the parameters of DELETE /containers/{id}.
type ContainerRemoveOptions struct {
	Force         bool // kill a running container first
	RemoveVolumes bool // v: remove the anonymous volumes it used
}

// ContainerRemove removes a container. A running container without Force is
// an *APIError for which IsConflict is true; a missing one, IsNotFound.
func (c *Client) ContainerRemove(ctx context.Context, id string, opts ContainerRemoveOptions) error {
	p, err := containerPath(id, "")
	if err != nil {
		return err
	}
	q := url.Values{}
	if opts.Force {
		q.Set("force", "1")
	}
	if opts.RemoveVolumes {
		q.Set("v", "1")
	}
	return c.do(ctx, request{method: "DELETE", path: p, query: q}, nil)
}
