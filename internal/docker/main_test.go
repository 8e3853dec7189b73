package docker_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"choir/internal/docker"
	"choir/testkit/dockertest"
)

// The tests in package docker_test run against a real engine found or
// started by dockertest; the fakes for framing and error decoding are in
// package docker.

func TestMain(m *testing.M) { dockertest.Main(m) }

// busybox is the image the container tests run.
const busybox = "choir-test/busybox:1"

// engine returns the test engine with the busybox image imported.
func engine(t testing.TB) *docker.Client {
	t.Helper()
	c := dockertest.Engine(t)
	dockertest.BusyboxImage(t, c, busybox)
	return c
}

// testCtx bounds a test's engine calls.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// cleanupCtx bounds engine calls in a t.Cleanup, when t.Context is over.
func cleanupCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// create creates a busybox container running cmd, labelled so that it is
// removed when the test ends. cfg and host may be nil.
func create(t testing.TB, c *docker.Client, cfg *docker.ContainerConfig, host *docker.HostConfig, cmd ...string) string {
	t.Helper()
	if cfg == nil {
		cfg = &docker.ContainerConfig{}
	}
	if cfg.Image == "" {
		cfg.Image = busybox
	}
	if len(cmd) > 0 {
		cfg.Cmd = cmd
	}
	labels := dockertest.Labels(t, c)
	maps.Copy(labels, cfg.Labels)
	cfg.Labels = labels
	res, err := c.ContainerCreate(testCtx(t), "", cfg, host)
	if err != nil {
		t.Fatalf("ContainerCreate(%v) = %v", cmd, err)
	}
	return res.ID
}

// run creates and starts a container and waits for it to exit, returning
// its exit status, stdout and stderr.
func run(t testing.TB, c *docker.Client, cfg *docker.ContainerConfig, host *docker.HostConfig, cmd ...string) (int64, string, string) {
	t.Helper()
	ctx := testCtx(t)
	id := create(t, c, cfg, host, cmd...)
	if err := c.ContainerStart(ctx, id); err != nil {
		t.Fatalf("ContainerStart = %v", err)
	}
	w, err := c.ContainerWait(ctx, id, docker.WaitNotRunning)
	if err != nil {
		t.Fatalf("ContainerWait = %v", err)
	}
	stdout, stderr := logs(t, c, id)
	return w.StatusCode, stdout, stderr
}

// logs returns everything the container wrote so far.
func logs(t testing.TB, c *docker.Client, id string) (string, string) {
	t.Helper()
	s, err := c.ContainerLogs(testCtx(t), id, docker.LogsOptions{})
	if err != nil {
		t.Fatalf("ContainerLogs = %v", err)
	}
	defer s.Close()
	var out, errw bytes.Buffer
	if err := s.Copy(&out, &errw); err != nil {
		t.Fatalf("LogStream.Copy = %v", err)
	}
	return out.String(), errw.String()
}

var seq atomic.Int64

// uniq makes a name (for an image tag or a container) that no other test,
// nor another test binary sharing the engine, uses.
func uniq(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), seq.Add(1))
}
