package docker

import (
	"context"
	"fmt"
	"net/url"
	"time"
)

// Task states, in the order a task goes through them; a task ends in one
// of the last five.
const (
	TaskNew       = "new"
	TaskPending   = "pending" // waiting for a node that fits its constraints and resources
	TaskAssigned  = "assigned"
	TaskAccepted  = "accepted"
	TaskPreparing = "preparing" // pulling the image
	TaskStarting  = "starting"
	TaskRunning   = "running"
	TaskComplete  = "complete" // exited 0
	TaskFailed    = "failed"   // exited non-zero, or could not start (Status.Err says why)
	TaskShutdown  = "shutdown" // stopped because the service was removed or updated
	TaskRejected  = "rejected" // the node could not run it (e.g. the image could not be pulled)
	TaskOrphaned  = "orphaned" // its node was gone too long
)

// Task is one run of a service's container on one node.
type Task struct {
	ID           string
	Version      ObjectVersion
	CreatedAt    time.Time
	UpdatedAt    time.Time
	ServiceID    string
	Slot         int
	NodeID       string // "" until the scheduler assigns it
	Status       TaskStatus
	DesiredState string // what Swarm wants: "running", or "shutdown" once the service goes
}

// TaskStatus is where a task stands.
type TaskStatus struct {
	Timestamp       time.Time
	State           string           // one of the Task* constants
	Message         string           // e.g. "started", "finished"
	Err             string           // why it failed or was rejected
	ContainerStatus *ContainerStatus `json:",omitempty"`
}

// ContainerStatus is the task's container on its node.
type ContainerStatus struct {
	ContainerID string // the container's id on the task's node (ask that node's engine)
	PID         int
	ExitCode    int
}

// Ended reports whether the task is over: complete, failed, shut down,
// rejected or orphaned.
func (s TaskStatus) Ended() bool {
	switch s.State {
	case TaskComplete, TaskFailed, TaskShutdown, TaskRejected, TaskOrphaned:
		return true
	}
	return false
}

// TaskList lists tasks, asked of a manager. Filters are keys of the Engine
// API: "service" (name or id), "desired-state" ("running", "shutdown",
// "accept"), "node", "id", "name", "label".
func (c *Client) TaskList(ctx context.Context, filters Filters) ([]Task, error) {
	q := url.Values{}
	if err := filters.addTo(q); err != nil {
		return nil, fmt.Errorf("docker task list: encode filters: %w", err)
	}
	var out []Task
	err := c.do(ctx, request{method: "GET", path: "/tasks", query: q}, &out)
	return out, err
}
