package docker

import "context"

// ServiceRemove removes a service, by id or name: Swarm then shuts its
// tasks down (their containers are stopped and removed on their nodes
// shortly after the call returns). A missing service is an *APIError for
// which IsNotFound is true.
func (c *Client) ServiceRemove(ctx context.Context, id string) error {
	p, err := objectPath("services", id, "")
	if err != nil {
		return err
	}
	return c.do(ctx, request{method: "DELETE", path: p}, nil)
}
