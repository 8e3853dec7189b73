package docker

import (
	"context"
	"net/url"
)

// ContainerKill sends signal ("SIGKILL", "TERM", "9"; "" means SIGKILL) to
// the container's main process. A container that is not running is an
// *APIError for which IsConflict is true.
func (c *Client) ContainerKill(ctx context.Context, id, signal string) error {
	p, err := containerPath(id, "/kill")
	if err != nil {
		return err
	}
	q := url.Values{}
	if signal != "" {
		q.Set("signal", signal)
	}
	return c.do(ctx, request{method: "POST", path: p, query: q}, nil)
}
