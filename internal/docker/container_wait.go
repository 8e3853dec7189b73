package docker

import (
	"context"
	"net/url"
)

// WaitCondition says what ContainerWait waits for.
type WaitCondition string

// Wait conditions.
const (
	WaitNotRunning WaitCondition = "not-running" // returns at once if the container is not running
	WaitNextExit   WaitCondition = "next-exit"   // waits for the next exit even if not running now
	WaitRemoved    WaitCondition = "removed"     // waits until the container is removed
)

// WaitResponse is how the container exited.
type WaitResponse struct {
	StatusCode int64 // exit status: 128+n when killed by signal n (137 for SIGKILL)
	Error      *WaitError
}

// WaitError is the engine's report of a failure while waiting.
type WaitError struct {
	Message string
}

// ContainerWait blocks until the container meets condition ("" means
// WaitNotRunning) or ctx ends, and returns its exit status.
func (c *Client) ContainerWait(ctx context.Context, id string, condition WaitCondition) (WaitResponse, error) {
	p, err := containerPath(id, "/wait")
	if err != nil {
		return WaitResponse{}, err
	}
	q := url.Values{}
	if condition != "" {
		q.Set("condition", string(condition))
	}
	var out WaitResponse
	err = c.do(ctx, request{method: "POST", path: p, query: q}, &out)
	return out, err
}
