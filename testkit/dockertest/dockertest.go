// Package dockertest gives tests a real Docker engine, and images to run in
// it, without any registry.
//
// Engine finds an engine that answers /_ping: the one DOCKER_HOST names, else
// /var/run/docker.sock. With neither, and when dockerd is installed and the
// test runs as root, it starts a private engine under /tmp/choir-dockertest,
// shared by every test binary that runs at the same time (so that parallel
// packages do not each start a dockerd fighting over the docker0 bridge) and
// stopped by the last one to leave: a package using it declares
//
//	func TestMain(m *testing.M) { dockertest.Main(m) }
//
// Without an engine the test is unavailable (testkit.Unavailable): skipped
// under go test, failed under make test. make test starts one engine for the
// whole run with engine.sh and exports its DOCKER_HOST.
//
// BusyboxImage imports a small image built in memory from the host's static
// busybox (package busybox-static), optionally with extra files such as a
// static choir-agent binary. Labels marks the containers a test creates so
// that they are removed when the test ends.
package dockertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"choir/internal/docker"
	"choir/testkit"
)

// InstallHint tells a user how to get an engine.
const InstallHint = "set DOCKER_HOST or install docker.io (apt-get install -y --no-install-recommends docker.io busybox-static)"

var (
	once      sync.Once
	client    *docker.Client
	setupErr  error
	needsMain bool // setupErr is a missing TestMain, a bug rather than a missing backend
	private   *privateEngine
	mainUsed  atomic.Bool
)

// Engine returns a client of a Docker engine that answers, the same one for
// every test of the binary, or stops the test through testkit.Unavailable.
// The client must not be closed by tests.
func Engine(t testing.TB) *docker.Client {
	t.Helper()
	once.Do(setup)
	if setupErr != nil {
		if needsMain {
			t.Fatal(setupErr)
		}
		testkit.Unavailable(t, "%v", setupErr)
	}
	return client
}

// Main runs the tests of a package that uses Engine and then releases what
// Engine set up: the containers this binary labelled, and its share of the
// private engine, which the last binary to leave stops. Call it from
// TestMain; the testing package exits with the tests' status.
func Main(m *testing.M) {
	mainUsed.Store(true)
	m.Run()
	shutdown()
}

func setup() {
	if testkit.NoBackends() {
		setupErr = fmt.Errorf("no Docker engine: %w", testkit.ErrNoBackends)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if h := os.Getenv(docker.HostEnv); h != "" {
		c, err := connect(ctx, h)
		if err != nil {
			setupErr = fmt.Errorf("no Docker engine: %s=%s does not answer (%v): start that engine, or unset %s to use /var/run/docker.sock or a private engine", docker.HostEnv, h, err, docker.HostEnv)
			return
		}
		client = c
	} else if c, err := connect(ctx, docker.DefaultHost); err == nil {
		client = c
	} else {
		dockerd := findDockerd()
		if dockerd == "" {
			setupErr = errors.New("no Docker engine: " + InstallHint)
			return
		}
		if os.Geteuid() != 0 {
			setupErr = fmt.Errorf("no Docker engine: %s is installed but only root can start a private engine; start one (sudo testkit/dockertest/engine.sh start /tmp/choir-engine) and set DOCKER_HOST", dockerd)
			return
		}
		if !mainUsed.Load() {
			needsMain = true
			setupErr = errors.New("dockertest: this test needs a private Docker engine, which only dockertest.Main can stop: add `func TestMain(m *testing.M) { dockertest.Main(m) }` to the package (or set DOCKER_HOST)")
			return
		}
		pe, host, err := acquirePrivate(ctx, dockerd)
		if err != nil {
			setupErr = fmt.Errorf("no Docker engine: starting a private dockerd: %v", err)
			return
		}
		c, err := connect(ctx, host)
		if err != nil {
			pe.release()
			setupErr = fmt.Errorf("no Docker engine: the private dockerd at %s does not answer: %v", host, err)
			return
		}
		private, client = pe, c
	}
	removeOrphans(ctx, client)
}

// connect returns a client of the engine at host once it answers /_ping.
func connect(ctx context.Context, host string) (*docker.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := docker.New(ctx, host)
	if err != nil {
		return nil, err
	}
	if _, err := c.Ping(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func shutdown() {
	if client == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := removeLabelled(ctx, client, labelPID+"="+strconv.Itoa(os.Getpid())); err != nil {
		fmt.Fprintf(os.Stderr, "dockertest: removing this run's containers: %v\n", err)
	}
	client.Close()
	if private != nil {
		private.release()
	}
}

// findDockerd returns the path of dockerd, looking in the sbin directories
// that a non-login PATH may lack, or "".
func findDockerd() string {
	if p, err := exec.LookPath("dockerd"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/dockerd", "/usr/bin/dockerd", "/usr/local/sbin/dockerd", "/usr/local/bin/dockerd"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}
