package docker_test

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	"choir/internal/docker"
)

// TestNoLeakedConnections makes ~200 calls of every kind, including error
// answers, streams closed early and calls cancelled midway, and checks that
// open file descriptors and goroutines come back to where they were once
// idle connections are closed.
func TestNoLeakedConnections(t *testing.T) {
	shared := engine(t)
	ctx := testCtx(t)
	c, err := docker.New(ctx, shared.Host())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id := create(t, c, nil, nil, "sh", "-c", "echo out; echo err >&2")
	if err := c.ContainerStart(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ContainerWait(ctx, id, docker.WaitNotRunning); err != nil {
		t.Fatal(err)
	}

	c.Close()
	fds0, gor0 := countFDs(t), runtime.NumGoroutine()
	for i := range 200 {
		must := func(what string, err error) {
			if err != nil {
				t.Fatalf("call %d: %s = %v", i, what, err)
			}
		}
		_, err := c.Ping(ctx)
		must("Ping", err)
		_, err = c.ContainerInspect(ctx, id)
		must("ContainerInspect", err)
		_, err = c.ContainerList(ctx, docker.ContainerListOptions{All: true, Filters: docker.Filters{"label": {"choir.test"}}})
		must("ContainerList", err)
		_, err = c.ImageInspect(ctx, busybox)
		must("ImageInspect", err)
		if _, err := c.ContainerInspect(ctx, "choir-test-absent"); !docker.IsNotFound(err) {
			t.Fatalf("ContainerInspect(absent) = %v", err)
		}
		switch i % 20 {
		case 0: // create and remove
			res, err := c.ContainerCreate(ctx, "", &docker.ContainerConfig{Image: busybox, Cmd: []string{"true"}}, nil)
			must("ContainerCreate", err)
			must("ContainerRemove", c.ContainerRemove(ctx, res.ID, docker.ContainerRemoveOptions{Force: true}))
		case 5: // a log stream read fully
			s, err := c.ContainerLogs(ctx, id, docker.LogsOptions{})
			must("ContainerLogs", err)
			must("Copy", s.Copy(nil, nil))
			s.Close()
		case 10: // a log stream closed unread
			s, err := c.ContainerLogs(ctx, id, docker.LogsOptions{Follow: true})
			must("ContainerLogs", err)
			s.Close()
		case 15: // a call cancelled while the engine waits
			cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			_, err := c.ContainerWait(cctx, id, docker.WaitNextExit)
			cancel()
			if err == nil {
				t.Fatalf("ContainerWait(next-exit) on a stopped container returned")
			}
		}
	}

	// Connections go back to the pool asynchronously: close idle ones until
	// the counts settle, or give up after a deadline.
	const slack = 3
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.Close()
		fds, gor := countFDs(t), runtime.NumGoroutine()
		if fds <= fds0+slack && gor <= gor0+slack {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 200 rounds of calls: %d open fds (was %d), %d goroutines (was %d)", fds, fds0, gor, gor0)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func countFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count fds: %v", err)
	}
	return len(ents)
}

func BenchmarkContainerInspect(b *testing.B) {
	c := engine(b)
	id := create(b, c, nil, nil, "true")
	ctx := b.Context()
	for b.Loop() {
		if _, err := c.ContainerInspect(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPing(b *testing.B) {
	c := engine(b)
	ctx := b.Context()
	for b.Loop() {
		if _, err := c.Ping(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
