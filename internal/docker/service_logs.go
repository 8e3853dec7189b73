package docker

import (
	"context"
	"net/url"
)

// ServiceLogs opens the log stream of every task of a service, gathered by
// the manager from the nodes that ran them (GET /services/{id}/logs). As
// for ContainerLogs, it inspects the service first: a service with a TTY
// answers a raw stream, any other a multiplexed one. opts.Until is
// ignored: services have no until. Read it with Copy; close it when done.
//
// The manager answers from the nodes' log drivers: a task's last lines can
// arrive a moment after the task is reported complete.
func (c *Client) ServiceLogs(ctx context.Context, id string, opts LogsOptions) (*LogStream, error) {
	p, err := objectPath("services", id, "/logs")
	if err != nil {
		return nil, err
	}
	svc, err := c.ServiceInspect(ctx, id)
	if err != nil {
		return nil, err
	}
	tty := svc.Spec.TaskTemplate.ContainerSpec != nil && svc.Spec.TaskTemplate.ContainerSpec.TTY
	q := url.Values{}
	if !opts.Stdout && !opts.Stderr {
		opts.Stdout, opts.Stderr = true, true
	}
	q.Set("stdout", boolString(opts.Stdout))
	q.Set("stderr", boolString(opts.Stderr))
	if opts.Follow {
		q.Set("follow", "1")
	}
	if opts.Timestamps {
		q.Set("timestamps", "1")
	}
	if opts.Tail != "" {
		q.Set("tail", opts.Tail)
	}
	if !opts.Since.IsZero() {
		q.Set("since", unixString(opts.Since))
	}
	resp, err := c.send(ctx, request{method: "GET", path: p, query: q})
	if err != nil {
		return nil, err
	}
	switch resp.Header.Get("Content-Type") { // set by engines serving API 1.42+
	case "application/vnd.docker.multiplexed-stream":
		tty = false
	case "application/vnd.docker.raw-stream":
		tty = true
	}
	return &LogStream{TTY: tty, body: resp.Body}, nil
}
