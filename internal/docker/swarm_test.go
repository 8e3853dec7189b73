//go:build swarm

package docker_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"

	"choir/internal/docker"
	"choir/testkit/dockertest"
	"choir/testkit/swarmtest"
)

// These tests need the two-node swarm and the registry of
// testkit/swarmtest/swarm.sh; make test runs them after its main run
// (go test -tags swarm -run Swarm with the harness's variables).

// TestSwarmServiceOnWorker runs an agent-like box as a Swarm service the
// way choird will: the image pushed to the registry and named by digest,
// the container profile (read-only root, no capabilities, memory and pids
// limits, a tmpfs), a secret as a file only the service's user can read,
// and placement on the worker by node label.
func TestSwarmServiceOnWorker(t *testing.T) {
	cl := swarmtest.Get(t)
	ctx := testCtx(t)
	m := cl.Manager

	dockertest.BusyboxImage(t, m, busybox)
	local := cl.Image("choir-test/busybox:" + uniq("svc"))
	if err := m.ImageTag(ctx, busybox, local); err != nil {
		t.Fatalf("ImageTag(%s) = %v", local, err)
	}
	t.Cleanup(func() { m.ImageRemove(cleanupCtx(t), local, docker.ImageRemoveOptions{}) })
	var statuses int
	pushed, err := m.ImagePush(ctx, local, docker.RegistryAuth{ServerAddress: cl.Registry}, func(docker.JSONMessage) { statuses++ })
	if err != nil {
		t.Fatalf("ImagePush(%s) = %v", local, err)
	}
	repo, tag := docker.SplitRef(local)
	if !strings.HasPrefix(pushed.Digest, "sha256:") || pushed.Tag != tag || pushed.Size <= 0 || statuses == 0 {
		t.Fatalf("ImagePush(%s) = %+v after %d messages; want tag %s, a sha256 digest and a size", local, pushed, statuses, tag)
	}
	dist, err := m.DistributionInspect(ctx, local, docker.RegistryAuth{})
	if err != nil {
		t.Fatalf("DistributionInspect(%s) = %v", local, err)
	}
	if dist.Descriptor.Digest != pushed.Digest {
		t.Errorf("DistributionInspect(%s).Descriptor = %+v; want the pushed digest %s", local, dist.Descriptor, pushed.Digest)
	}
	image := repo + "@" + pushed.Digest

	token := make([]byte, 16)
	rand.Read(token)
	secretValue := hex.EncodeToString(token)
	secretName := uniq("choir-test-secret")
	secretID, err := m.SecretCreate(ctx, docker.SecretSpec{Name: secretName, Labels: map[string]string{"choir.test": "1"}, Data: []byte(secretValue)})
	if err != nil {
		t.Fatalf("SecretCreate = %v", err)
	}
	t.Cleanup(func() { m.SecretRemove(cleanupCtx(t), secretID) })

	script := strings.Join([]string{
		`echo "uid=$(id -u)"`,
		`echo "secret=$(cat /run/secrets/choir-token)"`,
		`echo "secret-stat=$(stat -c '%u:%g %a' /run/secrets/choir-token)"`,
		`touch /rootfs-probe 2>/dev/null && echo rootfs=writable || echo rootfs=read-only`,
		`echo x > /scratch/probe && echo tmpfs=writable`,
		`echo "capeff=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)"`,
	}, "; ")
	one := uint64(1)
	spec := docker.ServiceSpec{
		Name:   uniq("choir-test-svc"),
		Labels: map[string]string{"choir.test": "1"},
		TaskTemplate: docker.TaskSpec{
			ContainerSpec: &docker.ContainerSpec{
				Image:          image,
				Command:        []string{"sh", "-c", script},
				User:           "65534:65534",
				Env:            []string{"CHOIR_TEST=1"},
				ReadOnly:       true,
				CapabilityDrop: []string{"ALL"},
				Mounts:         []docker.Mount{{Type: docker.MountTmpfs, Target: "/scratch", TmpfsOptions: &docker.TmpfsOptions{SizeBytes: 1 << 20}}},
				Secrets: []docker.SecretReference{{
					SecretID: secretID, SecretName: secretName,
					File: &docker.SecretFile{Name: "choir-token", UID: "65534", GID: "65534", Mode: 0o400},
				}},
			},
			Resources:     &docker.ResourceRequirements{Limits: &docker.Limit{MemoryBytes: 64 << 20, Pids: 64}},
			RestartPolicy: &docker.RestartPolicy{Condition: docker.RestartNone},
			Placement:     &docker.Placement{Constraints: []string{"node.labels." + swarmtest.NodeLabel + "==worker"}},
			Networks:      []docker.NetworkAttachmentConfig{{Target: "host"}},
		},
		Mode: docker.ServiceMode{Replicated: &docker.ReplicatedService{Replicas: &one}},
	}
	created, err := m.ServiceCreate(ctx, spec, nil)
	if err != nil {
		t.Fatalf("ServiceCreate = %v", err)
	}
	removed := false
	t.Cleanup(func() {
		if !removed {
			m.ServiceRemove(cleanupCtx(t), created.ID)
		}
	})

	// What the manager stored is what was sent: a field the engine did
	// not know would be missing here.
	svc, err := m.ServiceInspect(ctx, created.ID)
	if err != nil {
		t.Fatalf("ServiceInspect = %v", err)
	}
	cs := svc.Spec.TaskTemplate.ContainerSpec
	if cs == nil || cs.Image != image || !cs.ReadOnly || !slices.Equal(cs.CapabilityDrop, []string{"ALL"}) ||
		len(cs.Secrets) != 1 || cs.Secrets[0].File == nil || *cs.Secrets[0].File != *spec.TaskTemplate.ContainerSpec.Secrets[0].File ||
		svc.Spec.TaskTemplate.Resources == nil || *svc.Spec.TaskTemplate.Resources.Limits != *spec.TaskTemplate.Resources.Limits ||
		svc.Spec.TaskTemplate.RestartPolicy == nil || svc.Spec.TaskTemplate.RestartPolicy.Condition != docker.RestartNone {
		t.Errorf("ServiceInspect(%s).Spec.TaskTemplate = %+v (container %+v); want the spec sent", created.ID, svc.Spec.TaskTemplate, cs)
	}

	task := cl.WaitTask(t, created.ID, 90*time.Second)
	if task.Status.State != docker.TaskComplete || task.Status.ContainerStatus == nil || task.Status.ContainerStatus.ExitCode != 0 {
		t.Fatalf("task %s = %+v; want complete with exit code 0", task.ID, task.Status)
	}
	if task.NodeID != cl.WorkerNode {
		t.Errorf("task ran on node %s; want the worker %s (constraint node.labels.choir.node==worker)", task.NodeID, cl.WorkerNode)
	}
	// The container is the worker's: its engine has it, with the profile.
	ctr, err := cl.Worker.ContainerInspect(ctx, task.Status.ContainerStatus.ContainerID)
	if err != nil {
		t.Fatalf("the worker's ContainerInspect(%s) = %v", task.Status.ContainerStatus.ContainerID, err)
	}
	if h := ctr.HostConfig; h == nil || !h.ReadonlyRootfs || h.Memory != 64<<20 || h.PidsLimit == nil || *h.PidsLimit != 64 {
		t.Errorf("the task's container's HostConfig = %+v; want a read-only root, 64 MiB and 64 pids", ctr.HostConfig)
	}

	want := []string{
		"uid=65534",
		"secret=" + secretValue,
		"secret-stat=65534:65534 400",
		"rootfs=read-only",
		"tmpfs=writable",
		"capeff=0000000000000000",
	}
	out := serviceLogs(t, m, created.ID, want[len(want)-1])
	for _, w := range want {
		if !strings.Contains(out, w+"\n") {
			t.Errorf("service logs lack %q:\n%s", w, out)
		}
	}

	if err := m.ServiceRemove(ctx, created.ID); err != nil {
		t.Fatalf("ServiceRemove = %v", err)
	}
	removed = true
	if _, err := m.ServiceInspect(ctx, created.ID); !docker.IsNotFound(err) {
		t.Errorf("ServiceInspect after ServiceRemove = %v; want not found", err)
	}
	if err := m.SecretRemove(ctx, secretID); err != nil {
		t.Fatalf("SecretRemove = %v", err)
	}
	left, err := m.SecretList(ctx, docker.Filters{"name": {secretName}})
	if err != nil || len(left) != 0 {
		t.Errorf("SecretList(name=%s) after SecretRemove = %+v, %v; want none", secretName, left, err)
	}
}

// serviceLogs reads a service's logs until they hold last (the manager
// gathers them from the worker, and the last lines can trail the task's
// end), failing after a deadline.
func serviceLogs(t *testing.T, c *docker.Client, id, last string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := c.ServiceLogs(testCtx(t), id, docker.LogsOptions{})
		if err != nil {
			t.Fatalf("ServiceLogs(%s) = %v", id, err)
		}
		var out, errw bytes.Buffer
		err = s.Copy(&out, &errw)
		s.Close()
		if err != nil {
			t.Fatalf("ServiceLogs(%s).Copy = %v", id, err)
		}
		if strings.Contains(out.String(), last) || time.Now().After(deadline) {
			return out.String() + errw.String()
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSwarmNodes: NodeList sees both nodes with the harness's labels, and
// NodeUpdate changes labels only at the version it read.
func TestSwarmNodes(t *testing.T) {
	cl := swarmtest.Get(t)
	ctx := testCtx(t)
	m := cl.Manager

	nodes, err := m.NodeList(ctx, docker.Filters{"node.label": {swarmtest.NodeLabel + "=worker"}})
	if err != nil {
		t.Fatalf("NodeList = %v", err)
	}
	if len(nodes) != 1 || nodes[0].ID != cl.WorkerNode || nodes[0].Spec.Role != "worker" || nodes[0].ManagerStatus != nil {
		t.Fatalf("NodeList(node.label=choir.node=worker) = %+v; want the worker %s alone", nodes, cl.WorkerNode)
	}
	s, err := m.SwarmInspect(ctx)
	if err != nil || s.ID == "" || s.JoinTokens.Worker == "" {
		t.Errorf("SwarmInspect = %+v, %v; want the swarm with its join tokens", s.ID, err)
	}
	if _, err := cl.Worker.SwarmInspect(ctx); !docker.IsUnavailable(err) {
		t.Errorf("the worker's SwarmInspect = %v; want unavailable (HTTP 503)", err)
	}

	n := nodes[0]
	labels := map[string]string{}
	for k, v := range n.Spec.Labels {
		labels[k] = v
	}
	labels["choir.test"] = uniq("l")
	spec := n.Spec
	spec.Labels = labels
	if err := m.NodeUpdate(ctx, n.ID, n.Version.Index, spec); err != nil {
		t.Fatalf("NodeUpdate = %v", err)
	}
	t.Cleanup(func() {
		ctx := cleanupCtx(t)
		n, err := m.NodeInspect(ctx, cl.WorkerNode)
		if err == nil {
			delete(n.Spec.Labels, "choir.test")
			err = m.NodeUpdate(ctx, n.ID, n.Version.Index, n.Spec)
		}
		if err != nil {
			t.Errorf("removing the test label: %v", err)
		}
	})
	if err := m.NodeUpdate(ctx, n.ID, n.Version.Index, n.Spec); err == nil {
		t.Errorf("NodeUpdate at the stale version %d = nil; want a refusal", n.Version.Index)
	}
	got, err := m.NodeInspect(ctx, n.ID)
	if err != nil {
		t.Fatalf("NodeInspect = %v", err)
	}
	if got.Spec.Labels["choir.test"] != labels["choir.test"] || got.Spec.Labels[swarmtest.NodeLabel] != "worker" {
		t.Errorf("labels after NodeUpdate = %v; want %v", got.Spec.Labels, labels)
	}
}
