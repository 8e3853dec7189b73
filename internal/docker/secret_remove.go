package docker

import "context"

// SecretRemove removes a secret, by id or name. A secret a service still
// uses is refused (an *APIError for which IsBadRequest is true: "secret 'x' is in use by the following service"); a missing one is an
// *APIError for which IsNotFound is true.
func (c *Client) SecretRemove(ctx context.Context, id string) error {
	p, err := objectPath("secrets", id, "")
	if err != nil {
		return err
	}
	return c.do(ctx, request{method: "DELETE", path: p}, nil)
}
