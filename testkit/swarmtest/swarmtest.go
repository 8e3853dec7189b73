// Package swarmtest gives tests a two-node Docker Swarm and a registry on
// this one machine, started by swarm.sh beside this file:
//
//	export $(testkit/swarmtest/swarm.sh start /tmp/choir-swarm)
//	CHOIR_TEST_STRICT=1 go test -tags swarm -run Swarm ./internal/docker/
//	testkit/swarmtest/swarm.sh stop /tmp/choir-swarm
//
// make test does this after the main run (testkit/ci.sh), with the main
// engine stopped first: engines in a swarm beside a plain engine have broken
// that engine's bridge here (FACTS.md).
//
// Get reads the three variables swarm.sh prints, connects to both engines
// and checks what the tests rely on: each engine is in the swarm, the first
// is its manager, the nodes carry the labels choir.node=manager and
// choir.node=worker, and the registry answers. Without them the test is
// unavailable (testkit.Unavailable): skipped under go test, failed under
// make test. The tests that use it carry the build tag swarm, so that the
// main run (which has no swarm) does not even build them.
package swarmtest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"choir/internal/docker"
	"choir/testkit"
)

// The variables swarm.sh start prints.
const (
	ManagerEnv  = "CHOIR_TEST_SWARM_MANAGER"  // DOCKER_HOST of the manager's engine
	WorkerEnv   = "CHOIR_TEST_SWARM_WORKER"   // DOCKER_HOST of the worker's engine
	RegistryEnv = "CHOIR_TEST_SWARM_REGISTRY" // 127.0.0.1:PORT of the registry
)

// NodeLabel is the node label choir places agents by; swarm.sh sets it to
// "manager" and "worker".
const NodeLabel = "choir.node"

// Cluster is the running swarm.
type Cluster struct {
	Manager     *docker.Client // the manager's engine: every Swarm call goes here
	Worker      *docker.Client // the worker's engine: its containers, its images
	ManagerNode string         // the manager's node id
	WorkerNode  string         // the worker's node id
	Registry    string         // "127.0.0.1:PORT", a registry without TLS or credentials
	// HostAddr is this host's address on the manager's bridge (chsw-m):
	// where a server on the host listens for containers of both nodes, as
	// choird's HTTPS endpoint would on a LAN address.
	HostAddr string
}

// managerBridge is the bridge swarm.sh gives the manager's engine.
const managerBridge = "chsw-m"

var (
	once     sync.Once
	cluster  *Cluster
	setupErr error
)

// Get returns the swarm, the same for every test of the binary, or stops
// the test through testkit.Unavailable. Its clients must not be closed.
func Get(t testing.TB) *Cluster {
	t.Helper()
	once.Do(func() { cluster, setupErr = setup() })
	if setupErr != nil {
		testkit.Unavailable(t, "%v", setupErr)
	}
	return cluster
}

const hint = "start one with `export $(testkit/swarmtest/swarm.sh start /tmp/choir-swarm)` (as root)"

func setup() (*Cluster, error) {
	if testkit.NoBackends() {
		return nil, fmt.Errorf("no swarm: %w", testkit.ErrNoBackends)
	}
	mh, wh, reg := os.Getenv(ManagerEnv), os.Getenv(WorkerEnv), os.Getenv(RegistryEnv)
	if mh == "" || wh == "" || reg == "" {
		return nil, fmt.Errorf("no swarm: %s, %s and %s are not all set; %s", ManagerEnv, WorkerEnv, RegistryEnv, hint)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := &Cluster{Registry: reg}
	var err error
	if c.Manager, err = docker.New(ctx, mh); err != nil {
		return nil, fmt.Errorf("no swarm: the manager's engine %s=%s: %v; %s", ManagerEnv, mh, err, hint)
	}
	if c.Worker, err = docker.New(ctx, wh); err != nil {
		return nil, fmt.Errorf("no swarm: the worker's engine %s=%s: %v; %s", WorkerEnv, wh, err, hint)
	}
	mi, err := c.Manager.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("no swarm: %s: %v", mh, err)
	}
	wi, err := c.Worker.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("no swarm: %s: %v", wh, err)
	}
	if mi.Swarm.LocalNodeState != "active" || !mi.Swarm.ControlAvailable {
		return nil, fmt.Errorf("no swarm: the engine at %s is not an active manager (state %q); %s", mh, mi.Swarm.LocalNodeState, hint)
	}
	if wi.Swarm.LocalNodeState != "active" || wi.Swarm.NodeID == mi.Swarm.NodeID {
		return nil, fmt.Errorf("no swarm: the engine at %s is not an active second node (state %q); %s", wh, wi.Swarm.LocalNodeState, hint)
	}
	c.ManagerNode, c.WorkerNode = mi.Swarm.NodeID, wi.Swarm.NodeID
	for id, want := range map[string]string{c.ManagerNode: "manager", c.WorkerNode: "worker"} {
		n, err := c.Manager.NodeInspect(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("no swarm: node %s: %v", id, err)
		}
		if got := n.Spec.Labels[NodeLabel]; got != want || n.Status.State != "ready" {
			return nil, fmt.Errorf("no swarm: node %s is %s with %s=%q; want ready with %q (swarm.sh labels the nodes)", id, n.Status.State, NodeLabel, got, want)
		}
	}
	if c.HostAddr, err = bridgeAddr(managerBridge); err != nil {
		return nil, fmt.Errorf("no swarm: %v; %s", err, hint)
	}
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+reg+"/v2/", nil)
	if err != nil {
		return nil, fmt.Errorf("no swarm: registry %s=%s: %v", RegistryEnv, reg, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("no swarm: the registry %s=%s does not answer: %v; %s", RegistryEnv, reg, err, hint)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("no swarm: the registry at %s answers GET /v2/ with %s", reg, resp.Status)
	}
	return c, nil
}

// bridgeAddr is the IPv4 address of the host's interface name.
func bridgeAddr(name string) (string, error) {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return "", fmt.Errorf("the manager's bridge %s: %w", name, err)
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return "", fmt.Errorf("the manager's bridge %s: %w", name, err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
			return ipn.IP.String(), nil
		}
	}
	return "", fmt.Errorf("the manager's bridge %s has no IPv4 address", name)
}

// Image is the name ref takes in the cluster's registry: Image("a/b:1") is
// "127.0.0.1:PORT/a/b:1".
func (c *Cluster) Image(ref string) string { return c.Registry + "/" + ref }

// WaitTask polls the manager until a task of service has ended (complete,
// failed, shut down, rejected or orphaned) and returns it, failing the test
// after timeout.
func (c *Cluster) WaitTask(t testing.TB, service string, timeout time.Duration) docker.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last []docker.Task
	for {
		tasks, err := c.Manager.TaskList(ctx, docker.Filters{"service": {service}})
		if err == nil {
			last = tasks
			for _, task := range tasks {
				if task.Status.Ended() {
					return task
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no task of service %s ended within %v (last error %v; tasks %+v)", service, timeout, err, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
