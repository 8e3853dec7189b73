package dockertest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"choir/internal/docker"
)

// Labels on the containers tests create.
const (
	LabelTest = "choir.test"      // "1" on every container a test created
	labelPID  = "choir.test.pid"  // the test binary's pid, to find leftovers of dead runs
	labelCase = "choir.test.case" // one test: removed when it ends
)

var caseSeq atomic.Int64

// Labels returns labels to put on every container the test creates (add
// your own to the map), and arranges for the containers carrying them to be
// force-removed when the test ends. Containers of other tests, and of other
// test binaries sharing the engine, are left alone.
func Labels(t testing.TB, c *docker.Client) map[string]string {
	t.Helper()
	id := fmt.Sprintf("%d.%d", os.Getpid(), caseSeq.Add(1))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := removeLabelled(ctx, c, labelCase+"="+id); err != nil {
			t.Errorf("dockertest: removing the test's containers: %v", err)
		}
	})
	return map[string]string{
		LabelTest: "1",
		labelPID:  strconv.Itoa(os.Getpid()),
		labelCase: id,
	}
}

// removeLabelled force-removes every container carrying label ("k=v").
func removeLabelled(ctx context.Context, c *docker.Client, label string) error {
	list, err := c.ContainerList(ctx, docker.ContainerListOptions{All: true, Filters: docker.Filters{"label": {label}}})
	if err != nil {
		return err
	}
	for _, ctr := range list {
		err := c.ContainerRemove(ctx, ctr.ID, docker.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !docker.IsNotFound(err) && !docker.IsConflict(err) { // 409: removal already in progress
			return err
		}
	}
	return nil
}

// removeOrphans removes test containers whose test binary is gone (killed
// before its cleanup ran), leaving those of live binaries sharing the engine.
func removeOrphans(ctx context.Context, c *docker.Client) {
	list, err := c.ContainerList(ctx, docker.ContainerListOptions{All: true, Filters: docker.Filters{"label": {LabelTest}}})
	if err != nil {
		return
	}
	for _, ctr := range list {
		pid, err := strconv.Atoi(ctr.Labels[labelPID])
		if err == nil && pid > 0 && alive(pid) {
			continue
		}
		_ = c.ContainerRemove(ctx, ctr.ID, docker.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	}
}
