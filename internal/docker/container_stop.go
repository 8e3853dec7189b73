package docker

import (
	"context"
	"net/url"
	"strconv"
	"time"
)

// ContainerStop sends the container its stop signal (SIGTERM unless its
// StopSignal says otherwise), waits up to timeout for it to exit and then
// kills it. timeout is rounded up to whole seconds (the t parameter); a
// negative timeout uses the container's StopTimeout, or the engine's 10 s.
// Stopping a stopped container is not an error. ctx must allow for the
// timeout: the call returns only when the container is down.
func (c *Client) ContainerStop(ctx context.Context, id string, timeout time.Duration) error {
	p, err := containerPath(id, "/stop")
	if err != nil {
		return err
	}
	q := url.Values{}
	if timeout >= 0 {
		secs := (timeout + time.Second - 1) / time.Second
		q.Set("t", strconv.FormatInt(int64(secs), 10))
	}
	return c.do(ctx, request{method: "POST", path: p, query: q}, nil)
}
