//go:build swarm

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"choir/internal/docker"
	"choir/testkit"
	"choir/testkit/demomodel"
	"choir/testkit/dockertest"
	"choir/testkit/imagetest"
	"choir/testkit/swarmtest"
)

// TestSwarmAgentOnTheWorker is an agent on the swarm runtime (issue 26),
// end to end: choird on the manager's engine with its HTTPS endpoint on a
// host address, the agent's image pushed to the registry and run by digest
// as a service placed on the worker (its workspace's node); over mutual
// TLS the agent says hello, chats and calls a tool; a prompt-injected
// command finds its lease token, client key and certificate unreadable and
// no token in its environment; choird's endpoint refuses a connection
// without a client certificate; killing the task's container on the worker
// is a crash choird sees, and the next start resumes the session there;
// a stop leaves no service and no secret behind.
func TestSwarmAgentOnTheWorker(t *testing.T) {
	cl := swarmtest.Get(t)
	ctx := context.Background()
	const agent = "agent-1"
	base := withoutSetuid(t, cl.Manager, imagetest.Debian(t, cl.Manager))
	dockertest.AgentImageFrom(t, cl.Manager, base, agent, "sw1")

	home := filepath.Join(t.TempDir(), "h")
	ctlRun(t, home, "", "init")
	postgresBackend(t, home)
	ml, err := net.Listen("tcp", net.JoinHostPort(cl.HostAddr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	model := &shellModel{}
	ms := &http.Server{Handler: model}
	go ms.Serve(ml)
	t.Cleanup(func() { ms.Close() })
	workspace := testkit.Workspace(t)
	os.WriteFile(filepath.Join(workspace, "marker-on-the-worker.txt"), []byte("x"), 0o644)
	editConfig(t, home, func(cfg map[string]any) {
		cfg["global_repo"] = map[string]any{"url": "/nonexistent/global.git"}
		cfg["models"] = map[string]any{"m": map[string]any{"provider": "test", "model": "shell", "endpoint": "http://" + ml.Addr().String() + "/v1", "secret": "llm-key"}}
		cfg["git_identities"] = map[string]any{"dev": map[string]any{"name": "Dev", "email": "dev@choir.local", "secret": "git-token"}}
		cfg["gateways"] = map[string]any{"console": map[string]any{"type": "console"}}
		cfg["dms"] = map[string]any{agent: map[string]any{"gateway": "console", "admin": true}}
		cfg["workspaces"] = map[string]any{"main": map[string]any{"path": workspace, "node": "worker"}}
		cfg["agents"] = map[string]any{agent: map[string]any{"defaults": map[string]any{"workspace": "main", "llm": "m", "git_identity": "dev", "dm": agent}}}
		cfg["container"] = map[string]any{"cpus": 1, "memory_mb": 256, "pids": 256}
		cfg["runtime"] = map[string]any{"kind": "swarm", "registry": cl.Registry}
		cfg["heartbeat_interval_ms"] = 200
	})
	for name, value := range map[string]string{"llm-key": boundaryLLMKey, "git-token": boundaryGitKey} {
		if _, stderr, code := ctlRun(t, home, "", "secret", "set", name, value); code != 0 {
			t.Fatalf("secret set %s = %d %s", name, code, stderr)
		}
	}
	d := startChoird(t, home, []string{"DOCKER_HOST=" + cl.Manager.Host()}, "--transport=http", "--listen="+cl.HostAddr+":0")
	waitReady(t, home, d)
	report := func() string {
		st, _, _ := ctlRun(t, home, "", "agent", "status", agent)
		logs, _ := os.ReadFile(filepath.Join(home, "logs", agent+".log"))
		return "agent status:\n" + st + "\nagent log:\n" + tail(string(logs), 3000) + "\nchoird:\n" + tail(d.stderr.String(), 3000)
	}
	start := func(want string) {
		t.Helper()
		out, stderr, code := ctlRun(t, home, "", "agent", "start", agent, "--dm="+agent)
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("agent start = %d %q %q; want %q\n%s", code, out, stderr, want, report())
		}
	}
	say := func(msg string) string {
		t.Helper()
		out, stderr, code := ctlRun(t, home, msg, "chat", agent, "--once", "--timeout", "2m")
		if code != 0 {
			t.Fatalf("chat %q = %d %q %q\n%s", msg, code, out, stderr, report())
		}
		return out
	}
	started := time.Now()
	start("started")
	t.Cleanup(func() { ctlRun(t, home, "", "agent", "stop", agent) })
	t.Logf("agent start on the worker, from choirctl to running: %s", time.Since(started).Round(time.Millisecond))
	first := agentState(t, home, agent)

	// The box is a service by digest, its task on the worker.
	svc, task := agentTask(t, cl, agent)
	if img := svc.Spec.TaskTemplate.ContainerSpec.Image; !strings.HasPrefix(img, cl.Registry+"/") || !strings.Contains(img, "@sha256:") {
		t.Errorf("the service runs %q; want the registry's image by digest", img)
	}
	if task.NodeID != cl.WorkerNode {
		t.Errorf("the agent's task runs on node %s; want the worker %s (its workspace's node)", task.NodeID, cl.WorkerNode)
	}
	c := workerContainer(t, cl, task)
	for _, e := range c.Config.Env {
		if strings.HasPrefix(e, "CHOIR_LEASE_TOKEN") {
			t.Errorf("the agent's container has %s in its environment", strings.SplitN(e, "=", 2)[0])
		}
	}

	// A chat turn and a tool, over mutual TLS.
	if out := say("hello from the manager"); !strings.Contains(out, demomodel.Prefix) {
		t.Errorf("the agent answered %q; want the model's reply", out)
	}
	if out := say("$ ls /workspace"); !strings.Contains(out, "marker-on-the-worker.txt") {
		t.Errorf("the tool's answer %q does not list the workspace", out)
	}

	// A prompt-injected command reaches none of the box's credentials.
	out := say("$ for f in /run/secrets/*; do cat $f >/dev/null 2>&1 && echo READ $f || echo DENIED $f; done; " +
		"tr '\\0' '\\n' </proc/1/environ >/dev/null 2>&1 && echo READ-ENV1 || echo DENIED-ENV1; env | grep -c CHOIR_LEASE_TOKEN")
	for _, f := range []string{"choir-lease-token", "choir-client-key.pem", "choir-client.pem"} {
		if !strings.Contains(out, "DENIED /run/secrets/"+f) || strings.Contains(out, "READ /run/secrets/"+f) {
			t.Errorf("a tool reading /run/secrets/%s: %q; want it denied", f, out)
		}
	}
	if !strings.Contains(out, `DENIED-ENV1\n0\n`) { // the JSON result's stdout
		t.Errorf("a tool reading the agent's environment: %q; want pid 1's refused and no token in its own", out)
	}
	if strings.Contains(out, "PRIVATE KEY") {
		t.Errorf("a tool's output holds a private key: %q", out)
	}

	// choird's endpoint admits no connection without a client certificate,
	// even one that trusts its CA.
	endpoint := choirdStatus(t, home).AgentSocket
	u, _ := url.Parse(endpoint)
	ca, err := os.ReadFile(filepath.Join(home, "tls", "agents-ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	if resp, err := hc.Post(endpoint+"/rpc/HEARTBEAT", "application/json", strings.NewReader("{}")); err == nil {
		resp.Body.Close()
		t.Errorf("POST %s without a client certificate = %s; want the handshake refused", u.Host, resp.Status)
	}

	// A crash on the worker is seen, and the next start resumes the session
	// from what its heartbeats replicated.
	waitUntil(t, "the tool call replicated to choird", time.Minute, func() bool {
		return countEvents(storedEvents(t, home, first.SessionID), "ToolCallCommitted", "") >= 2
	}, report)
	if err := cl.Worker.ContainerKill(ctx, c.ID, "KILL"); err != nil {
		t.Fatalf("kill -9 the agent's container on the worker: %v", err)
	}
	waitUntil(t, "the crash seen (agent stopped)", 2*time.Minute, func() bool { return agentState(t, home, agent).State == "stopped" }, report)
	started = time.Now()
	start("resumed the session (it crashed)")
	t.Logf("agent start on the worker, resumed, image there: %s", time.Since(started).Round(time.Millisecond))
	if st := agentState(t, home, agent); st.SessionID != first.SessionID || st.Resumed == nil {
		t.Errorf("after the crash: session %s, resumed %+v; want %s resumed", st.SessionID, st.Resumed, first.SessionID)
	}
	_, task2 := agentTask(t, cl, agent)
	if task2.NodeID != cl.WorkerNode || task2.ID == task.ID {
		t.Errorf("the resumed session's task %s on %s; want a new task on the worker", task2.ID, task2.NodeID)
	}
	if out := say("hello again"); !strings.Contains(out, demomodel.Prefix) {
		t.Errorf("the resumed agent answered %q; want the model's reply", out)
	}

	// A stop leaves nothing of the box on the swarm.
	if _, stderr, code := ctlRun(t, home, "", "agent", "stop", agent); code != 0 {
		t.Fatalf("agent stop = %d %q\n%s", code, stderr, report())
	}
	label := docker.Filters{"label": {"choir.agent=" + agent, instanceLabel(home)}}
	if ss, err := cl.Manager.ServiceList(ctx, label); err != nil || len(ss) != 0 {
		t.Errorf("after the stop: services %v (%v); want none", ss, err)
	}
	if ss, err := cl.Manager.SecretList(ctx, label); err != nil || len(ss) != 0 {
		t.Errorf("after the stop: secrets %v (%v); want none", ss, err)
	}
	d.stop(t)
	assertNoSecrets(t, filepath.Join(home, "logs"), d.stderr.String())
}

// agentTask is the agent's service on the swarm and its running task.
func agentTask(t *testing.T, cl *swarmtest.Cluster, agent string) (docker.Service, docker.Task) {
	t.Helper()
	ctx := context.Background()
	ss, err := cl.Manager.ServiceList(ctx, docker.Filters{"label": {"choir.agent=" + agent}})
	if err != nil || len(ss) != 1 {
		t.Fatalf("the agent's service: %v (%d found)", err, len(ss))
	}
	tasks, err := cl.Manager.TaskList(ctx, docker.Filters{"service": {ss[0].ID}})
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if task.Status.State == "running" {
			return ss[0], task
		}
	}
	t.Fatalf("the agent's service %s has no running task: %+v", ss[0].Spec.Name, tasks)
	return docker.Service{}, docker.Task{}
}

// workerContainer is a task's container, inspected on the worker's engine.
func workerContainer(t *testing.T, cl *swarmtest.Cluster, task docker.Task) docker.Container {
	t.Helper()
	if task.Status.ContainerStatus == nil || task.Status.ContainerStatus.ContainerID == "" {
		t.Fatalf("task %s has no container yet", task.ID)
	}
	c, err := cl.Worker.ContainerInspect(context.Background(), task.Status.ContainerStatus.ContainerID)
	if err != nil {
		t.Fatalf("the task's container on the worker: %v", err)
	}
	return c
}

// withoutSetuid is base with no setuid or setgid file, as Dockerfile.base
// makes agent images: the swarm runtime refuses any other (no
// no-new-privileges on API 1.41 services).
func withoutSetuid(t *testing.T, c *docker.Client, base string) string {
	t.Helper()
	ref := "choir-test/debian-nosuid:1"
	df := "FROM " + base + "\nRUN find / -xdev -type f -perm /6000 -exec chmod ug-s {} +\n"
	buf := dockertest.BuildContext(dockertest.File{Name: "Dockerfile", Mode: 0o644, Body: []byte(df)})
	if _, err := c.ImageBuild(context.Background(), buf, docker.BuildOptions{Tags: []string{ref}, ForceRemove: true}); err != nil {
		t.Fatalf("build %s: %v", ref, err)
	}
	return ref
}
