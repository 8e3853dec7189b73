package docker

import (
	"context"
	"net/url"
	"strconv"
)

// NodeUpdate replaces node id's spec (its labels, role and availability)
// with spec, provided the node is still at version (the Version.Index a
// NodeInspect returned): a node changed since then is refused, and the
// caller inspects it again and retries.
//
// To add a label:
//
//	n, _ := c.NodeInspect(ctx, id)
//	n.Spec.Labels = map[string]string{"choir.node": "worker"} // keep the others: copy n.Spec.Labels
//	c.NodeUpdate(ctx, n.ID, n.Version.Index, n.Spec)
func (c *Client) NodeUpdate(ctx context.Context, id string, version uint64, spec NodeSpec) error {
	p, err := objectPath("nodes", id, "/update")
	if err != nil {
		return err
	}
	q := url.Values{}
	q.Set("version", strconv.FormatUint(version, 10))
	r, err := jsonRequest("POST", p, q, spec)
	if err != nil {
		return err
	}
	return c.do(ctx, r, nil)
}
