//go:build swarm

package swarm

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"choir/choird/lifecycle"
	"choir/internal/config"
	"choir/internal/docker"
	"choir/testkit/dockertest"
	"choir/testkit/swarmtest"
)

// agentScript stands in for choir-agent: it says what its box gave it and
// waits to be stopped (SIGTERM) or killed.
const agentScript = `#!/bin/sh
echo "uid=$(id -u)"
for a in "$@"; do case "$a" in
  --lease-token-file=*) f=${a#*=}; echo "token=$(cat $f)"; echo "token-stat=$(stat -c '%u:%g %a' $f)";;
  --tls-key=*) f=${a#*=}; echo "key=$(cat $f)"; echo "key-stat=$(stat -c '%u:%g %a' $f)";;
  --tls-cert=*) f=${a#*=}; echo "cert=$(cat $f)";;
esac; done
echo "ca=$(cat ` + lifecycle.CAInside + `)"
echo "env-token=${CHOIR_LEASE_TOKEN:-none}"
echo "capeff=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)"
touch /rootfs-probe 2>/dev/null && echo rootfs=writable || echo rootfs=read-only
echo x > /tmp/probe && echo tmp=writable
echo x > /workspace/probe && echo workspace=writable
echo ready
trap 'echo stopping; exit 0' TERM
while :; do sleep 1; done
`

func swarmBox(t testing.TB, cl *swarmtest.Cluster, name, image, token string) lifecycle.Box {
	t.Helper()
	ws, sock := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(sock, lifecycle.CAName), []byte("CA-PEM"), 0o644)
	s := lifecycle.Spec{AgentID: "alice", SessionID: name, LeaseToken: token, Instance: "swarm-test", Image: image,
		WorkspacePath: ws, SocketDir: sock, HeartbeatMS: 1000,
		Limits: config.ContainerLimits{CPUs: 0.5, MemoryMB: 64, Pids: 64}, Endpoint: "https://127.0.0.1:9", Node: "worker"}
	cfg, hc := lifecycle.Profile(s)
	if err := lifecycle.Verify(cfg, hc, s); err != nil {
		t.Fatal(err)
	}
	cfg.Entrypoint = []string{"/choir/bin/choir-agent"}
	return lifecycle.Box{Name: name, Config: cfg, Host: hc, Node: "worker"}
}

// fakeClientCert stands in for choird's agent CA: the files' content is
// checked, not their cryptography (that is rpc's TestMutualTLS).
func fakeClientCert(sessionID, agentID string) ([]byte, []byte, error) {
	return []byte("CERT-" + sessionID), []byte("KEY-" + sessionID), nil
}

func uniq(p string) string {
	b := make([]byte, 4)
	rand.Read(b)
	return p + "-" + hex.EncodeToString(b)
}

// waitLogs reads the box's logs until they hold want, failing after a
// deadline.
func waitLogs(t testing.TB, rt lifecycle.Runtime, id, want string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s, err := rt.Logs(context.Background(), id, docker.LogsOptions{Stdout: true, Stderr: true})
		var out bytes.Buffer
		if err == nil {
			s.Copy(&out, &out)
			s.Close()
		}
		if strings.Contains(out.String(), want) {
			return out.String()
		}
		if time.Now().After(deadline) {
			t.Fatalf("the box's logs lack %q after 60s (last error %v):\n%s", want, err, out.String())
		}
		time.Sleep(50 * time.Millisecond) // polling the manager, not synchronising
	}
}

// TestSwarmRuntimeRunsABoxOnTheWorker: the profile, translated, runs on the
// worker from the registry by digest, with the token and the CA as root's
// secret files and none in the environment; a task killed on the worker is
// an exit Wait sees; Remove takes the secrets too; Stop is graceful.
func TestSwarmRuntimeRunsABoxOnTheWorker(t *testing.T) {
	cl := swarmtest.Get(t)
	ctx := context.Background()
	m := cl.Manager
	image := "choir-agent-alice:" + uniq("v")
	dockertest.BusyboxImage(t, m, image, dockertest.File{Name: "/choir/bin/choir-agent", Mode: 0o755, Body: []byte(agentScript)})
	t.Cleanup(func() { m.ImageRemove(context.Background(), image, docker.ImageRemoveOptions{}) })
	rt := &Runtime{Engine: m, Registry: cl.Registry, PollEvery: 100 * time.Millisecond, ClientCert: fakeClientCert}

	token := uniq("tok")
	b := swarmBox(t, cl, uniq("choir-alice"), image, token)
	start := time.Now()
	id, err := rt.Create(ctx, b)
	if err != nil {
		t.Fatalf("Create = %v", err)
	}
	t.Cleanup(func() { rt.Remove(context.Background(), id) })
	if err := rt.Start(ctx, id); err != nil {
		t.Fatalf("Start = %v", err)
	}
	out := waitLogs(t, rt, id, "ready")
	t.Logf("swarm: create to ready %s", time.Since(start).Round(time.Millisecond))
	for _, w := range []string{"uid=0", "token=" + token, "token-stat=0:0 400", "ca=CA-PEM",
		"cert=CERT-" + b.Name, "key=KEY-" + b.Name, "key-stat=0:0 400", "env-token=none",
		"capeff=00000000000000e0", "rootfs=read-only", "tmp=writable", "workspace=writable"} {
		if !strings.Contains(out, w+"\n") {
			t.Errorf("the box's output lacks %q:\n%s", w, out)
		}
	}
	svc, err := m.ServiceInspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	cs := svc.Spec.TaskTemplate.ContainerSpec
	if !strings.HasPrefix(cs.Image, cl.Registry+"/"+strings.Split(image, ":")[0]+"@sha256:") {
		t.Errorf("service image = %s; want the registry's, by digest", cs.Image)
	}
	for _, e := range cs.Env {
		if strings.Contains(e, token) {
			t.Errorf("service env %q holds the token", e)
		}
	}
	tasks, err := m.TaskList(ctx, docker.Filters{"service": {id}})
	if err != nil || len(tasks) != 1 || tasks[0].NodeID != cl.WorkerNode || tasks[0].Status.ContainerStatus == nil {
		t.Fatalf("TaskList = %+v, %v; want one task on the worker %s", tasks, err, cl.WorkerNode)
	}
	ctr, err := cl.Worker.ContainerInspect(ctx, tasks[0].Status.ContainerStatus.ContainerID)
	if err != nil {
		t.Fatal(err)
	}
	if h := ctr.HostConfig; !h.ReadonlyRootfs || h.Memory != 64<<20 || *h.PidsLimit != 64 || h.Init == nil || !*h.Init {
		t.Errorf("the worker's container = %+v; want read-only, 64 MiB, 64 pids, init", h)
	}
	st, err := rt.Inspect(ctx, id)
	if err != nil || !st.Running || st.ImageID == "" {
		t.Errorf("Inspect = %+v, %v; want running with an image id", st, err)
	}

	// A crash: the task's container killed on the worker.
	waited := make(chan int64, 1)
	go func() {
		code, err := rt.Wait(ctx, id)
		if err != nil {
			t.Errorf("Wait = %v", err)
		}
		waited <- code
	}()
	if err := cl.Worker.ContainerKill(ctx, ctr.ID, "KILL"); err != nil {
		t.Fatalf("kill the task's container on the worker: %v", err)
	}
	select {
	case code := <-waited:
		if code != 137 {
			t.Errorf("Wait after a kill = %d; want 137", code)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Wait did not see the killed task within 60s")
	}
	if st, err := rt.Inspect(ctx, id); err != nil || st.Running || st.ExitCode != 137 {
		t.Errorf("Inspect after the kill = %+v, %v; want exited 137", st, err)
	}
	if err := rt.Remove(ctx, id); err != nil {
		t.Fatalf("Remove = %v", err)
	}
	if left, err := m.SecretList(ctx, docker.Filters{"label": {LabelBox + "=" + b.Name}}); err != nil || len(left) != 0 {
		t.Errorf("secrets after Remove = %+v, %v; want none", left, err)
	}
	if _, err := rt.Wait(ctx, id); !isGone(err) {
		t.Errorf("Wait after Remove = %v; want gone", err)
	}

	// A graceful stop: SIGTERM reaches the script, which exits 0.
	b2 := swarmBox(t, cl, uniq("choir-alice"), image, uniq("tok"))
	id2, err := rt.Create(ctx, b2)
	if err != nil {
		t.Fatalf("Create = %v", err)
	}
	t.Cleanup(func() { rt.Remove(context.Background(), id2) })
	waitLogs(t, rt, id2, "ready")
	if err := rt.Stop(ctx, id2, 10*time.Second); err != nil {
		t.Errorf("Stop = %v", err)
	}
	if err := rt.Remove(ctx, id2); err != nil {
		t.Errorf("Remove after Stop = %v", err)
	}
	if left, err := m.SecretList(ctx, docker.Filters{"label": {LabelBox + "=" + b2.Name}}); err != nil || len(left) != 0 {
		t.Errorf("secrets after Stop and Remove = %+v, %v; want none", left, err)
	}
	boxes, err := rt.List(ctx, map[string]string{lifecycle.LabelInstance: "swarm-test"})
	if err != nil || len(boxes) != 0 {
		t.Errorf("List after removing both = %+v, %v; want none", boxes, err)
	}
}

func isGone(err error) bool {
	return err != nil && (strings.Contains(err.Error(), lifecycle.ErrGone.Error()) || docker.IsNotFound(err))
}

// BenchmarkBoxStartToReady: create (and start) a box until its first
// process says ready, then remove it, on the manager's engine as a local
// container and on the worker as a service from the registry.
//
//	go test -tags swarm -run XXX -bench BoxStartToReady -benchtime 5x ./choird/swarm
func BenchmarkBoxStartToReady(b *testing.B) {
	cl := swarmtest.Get(b)
	ctx := context.Background()
	image := "choir-agent-alice:" + uniq("bench")
	dockertest.BusyboxImage(b, cl.Manager, image, dockertest.File{Name: "/choir/bin/choir-agent", Mode: 0o755, Body: []byte(agentScript)})
	b.Cleanup(func() { cl.Manager.ImageRemove(context.Background(), image, docker.ImageRemoveOptions{}) })
	for _, tc := range []struct {
		name string
		rt   lifecycle.Runtime
	}{
		{"local", lifecycle.Local{Docker: cl.Manager}},
		{"swarm", &Runtime{Engine: cl.Manager, Registry: cl.Registry, PollEvery: 100 * time.Millisecond, ClientCert: fakeClientCert}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				box := swarmBox(b, cl, uniq("choir-bench"), image, uniq("tok"))
				id, err := tc.rt.Create(ctx, box)
				if err != nil {
					b.Fatal(err)
				}
				if err := tc.rt.Start(ctx, id); err != nil {
					b.Fatal(err)
				}
				waitLogs(b, tc.rt, id, "ready")
				b.StopTimer()
				if err := tc.rt.Remove(ctx, id); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
