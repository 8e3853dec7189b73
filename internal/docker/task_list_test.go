package docker

import (
	"context"
	"io"
	"net/http"
	"testing"
)

// TestTaskList reads a real 20.10 answer (trimmed): a task that ran and
// exited 1 on a node, and one still waiting for a node.
func TestTaskList(t *testing.T) {
	var filters string
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1.41/tasks" {
			t.Errorf("path = %s; want /v1.41/tasks", r.URL.Path)
		}
		filters = r.URL.Query().Get("filters")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `[{"ID":"7c0f","Version":{"Index":44},"CreatedAt":"2026-11-29T04:25:48.756618404Z","UpdatedAt":"2026-11-29T04:25:49.8Z","Labels":{},
			"Spec":{"ContainerSpec":{"Image":"b@sha256:1"}},"ServiceID":"z4z9","Slot":1,"NodeID":"wyhk",
			"Status":{"Timestamp":"2026-11-29T04:25:49.8Z","State":"failed","Message":"started","Err":"task: non-zero exit (1)",
			"ContainerStatus":{"ContainerID":"c0ffee","PID":0,"ExitCode":1},"PortStatus":{}},"DesiredState":"shutdown"},
			{"ID":"8d1a","Version":{"Index":45},"ServiceID":"z4z9","Slot":1,"Status":{"Timestamp":"2026-11-29T04:25:50Z","State":"pending",
			"Message":"pending task scheduling","Err":"no suitable node (scheduling constraints not satisfied on 2 nodes)","PortStatus":{}},"DesiredState":"running"}]`)
	})
	tasks, err := c.TaskList(context.Background(), Filters{"service": {"z4z9"}, "desired-state": {"running", "shutdown"}})
	if err != nil {
		t.Fatalf("TaskList = %v", err)
	}
	if !sameJSON(t, []byte(filters), `{"service":["z4z9"],"desired-state":["running","shutdown"]}`) {
		t.Errorf("filters = %s; want service and desired-state", filters)
	}
	if len(tasks) != 2 {
		t.Fatalf("TaskList = %d tasks; want 2", len(tasks))
	}
	ran, waiting := tasks[0], tasks[1]
	if ran.ID != "7c0f" || ran.NodeID != "wyhk" || ran.ServiceID != "z4z9" || ran.DesiredState != "shutdown" ||
		ran.Status.State != TaskFailed || ran.Status.Err != "task: non-zero exit (1)" || ran.Status.ContainerStatus == nil ||
		ran.Status.ContainerStatus.ContainerID != "c0ffee" || ran.Status.ContainerStatus.ExitCode != 1 || !ran.Status.Ended() {
		t.Errorf("task 0 = %+v (container %+v); want failed on wyhk with exit code 1", ran, ran.Status.ContainerStatus)
	}
	if waiting.NodeID != "" || waiting.Status.State != TaskPending || waiting.Status.ContainerStatus != nil || waiting.Status.Ended() {
		t.Errorf("task 1 = %+v; want pending with no node or container", waiting)
	}
}
