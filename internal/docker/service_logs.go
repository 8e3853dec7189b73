package docker

import (
	"context"
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
	return c.logStream(ctx, p, logsQuery(opts), tty)
}
