package docker

import "context"

// ContainerStart starts a created or stopped container. Starting a running
// container is not an error.
func (c *Client) ContainerStart(ctx context.Context, id string) error {
	p, err := containerPath(id, "/start")
	if err != nil {
		return err
	}
	return c.do(ctx, request{method: "POST", path: p}, nil)
}
