package docker_test

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"choir/internal/docker"
	"choir/testkit/dockertest"
)

func TestContainerLogsDemux(t *testing.T) {
	c := engine(t)
	code, stdout, stderr := run(t, c, nil, nil, "sh", "-c", "echo out1; echo err1 >&2; echo out2; echo err2 >&2")
	if code != 0 {
		t.Errorf("exit status = %d; want 0", code)
	}
	if stdout != "out1\nout2\n" || stderr != "err1\nerr2\n" {
		t.Errorf("logs = stdout %q, stderr %q; want %q, %q", stdout, stderr, "out1\nout2\n", "err1\nerr2\n")
	}
}

func TestContainerLogsOneStream(t *testing.T) {
	c := engine(t)
	ctx := testCtx(t)
	id := create(t, c, nil, nil, "sh", "-c", "echo out; echo err >&2")
	if err := c.ContainerStart(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ContainerWait(ctx, id, docker.WaitNotRunning); err != nil {
		t.Fatal(err)
	}
	s, err := c.ContainerLogs(ctx, id, docker.LogsOptions{Stderr: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out, errw strings.Builder
	if err := s.Copy(&out, &errw); err != nil {
		t.Fatal(err)
	}
	if out.String() != "" || errw.String() != "err\n" {
		t.Errorf("stderr-only logs = %q, %q; want \"\", %q", out.String(), errw.String(), "err\n")
	}
}

func TestContainerLogsTTY(t *testing.T) {
	c := engine(t)
	code, stdout, stderr := run(t, c, &docker.ContainerConfig{Tty: true}, nil, "sh", "-c", "echo tty-out; echo tty-err >&2")
	if code != 0 || stdout != "tty-out\r\ntty-err\r\n" || stderr != "" {
		t.Errorf("TTY container = %d, stdout %q, stderr %q; want 0 and both lines raw on stdout", code, stdout, stderr)
	}
}

// TestContainerLogsFollow reads a followed stream while the container runs:
// the second line is only written after the test has seen the first.
func TestContainerLogsFollow(t *testing.T) {
	c := engine(t)
	ctx := testCtx(t)
	id := create(t, c, nil, nil, "sh", "-c", `trap 'echo two; exit 0' USR1; echo one; while :; do sleep 0.05; done`)
	if err := c.ContainerStart(ctx, id); err != nil {
		t.Fatal(err)
	}
	s, err := c.ContainerLogs(ctx, id, docker.LogsOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { err := s.Copy(pw, pw); pw.Close(); done <- err }()
	lines := bufio.NewScanner(pr)
	if !lines.Scan() || lines.Text() != "one" {
		t.Fatalf("first followed line = %q, %v; want one", lines.Text(), lines.Err())
	}
	if err := c.ContainerKill(ctx, id, "SIGUSR1"); err != nil {
		t.Fatalf("ContainerKill(SIGUSR1) = %v", err)
	}
	if !lines.Scan() || lines.Text() != "two" {
		t.Fatalf("second followed line = %q, %v; want two", lines.Text(), lines.Err())
	}
	if lines.Scan() {
		t.Errorf("unexpected line %q", lines.Text())
	}
	if err := <-done; err != nil {
		t.Errorf("followed stream ended with %v; want a clean end when the container exits", err)
	}
}

func TestContainerWaitExitCode(t *testing.T) {
	c := engine(t)
	code, _, _ := run(t, c, nil, nil, "sh", "-c", "exit 7")
	if code != 7 {
		t.Errorf("exit status = %d; want 7", code)
	}
}

func TestContainerStop(t *testing.T) {
	c := engine(t)
	init := true
	tests := []struct {
		name     string
		host     *docker.HostConfig
		timeout  time.Duration
		wantExit int
	}{
		// docker-init forwards SIGTERM, which ends sleep: 128+15.
		{"init forwards SIGTERM", &docker.HostConfig{Init: &init}, 30 * time.Second, 143},
		// PID 1 without a handler ignores SIGTERM: killed when t runs out.
		{"PID 1 ignoring SIGTERM is killed", nil, time.Second, 137},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			id := create(t, c, nil, tt.host, "sleep", "300")
			if err := c.ContainerStart(ctx, id); err != nil {
				t.Fatal(err)
			}
			if err := c.ContainerStop(ctx, id, tt.timeout); err != nil {
				t.Fatalf("ContainerStop = %v", err)
			}
			got, err := c.ContainerInspect(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if got.State.Running || got.State.ExitCode != tt.wantExit {
				t.Errorf("after stop: running %v, exit %d; want stopped with %d", got.State.Running, got.State.ExitCode, tt.wantExit)
			}
			if err := c.ContainerStop(ctx, id, tt.timeout); err != nil {
				t.Errorf("stopping a stopped container = %v; want nil", err)
			}
		})
	}
}

func TestContainerKill(t *testing.T) {
	c := engine(t)
	ctx := testCtx(t)
	id := create(t, c, nil, nil, "sleep", "300")
	if err := c.ContainerStart(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := c.ContainerKill(ctx, id, ""); err != nil {
		t.Fatalf("ContainerKill = %v", err)
	}
	w, err := c.ContainerWait(ctx, id, docker.WaitNotRunning)
	if err != nil || w.StatusCode != 137 {
		t.Errorf("ContainerWait after SIGKILL = %+v, %v; want 137", w, err)
	}
	if err := c.ContainerKill(ctx, id, "SIGKILL"); !docker.IsConflict(err) {
		t.Errorf("killing a stopped container = %v; want a conflict", err)
	}
}

func TestContainerRemove(t *testing.T) {
	c := engine(t)
	ctx := testCtx(t)
	id := create(t, c, nil, nil, "sleep", "300")
	if err := c.ContainerStart(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := c.ContainerRemove(ctx, id, docker.ContainerRemoveOptions{}); !docker.IsConflict(err) {
		t.Errorf("removing a running container without force = %v; want a conflict", err)
	}
	if err := c.ContainerRemove(ctx, id, docker.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
		t.Fatalf("ContainerRemove(force) = %v", err)
	}
	if _, err := c.ContainerInspect(ctx, id); !docker.IsNotFound(err) {
		t.Errorf("ContainerInspect after remove = %v; want not found", err)
	}
}

// TestContainerConfigRoundTrip creates a container with every field choir
// sets and reads each back: the engine ignores misspelt fields, so this is
// what proves the JSON names. Running it shows the settings take effect.
func TestContainerConfigRoundTrip(t *testing.T) {
	c := engine(t)
	ctx := testCtx(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello"), []byte("from-host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	init, pids, stopTimeout := true, int64(32), 3
	cfg := &docker.ContainerConfig{
		Entrypoint:  []string{"sh", "-c"},
		Cmd:         []string{`id -u; pwd; echo "$GREETING"; cat /data/hello; touch /rootfs-file 2>/dev/null && echo rootfs-writable || echo rootfs-readonly; echo x > /scratch/f && echo scratch-ok; echo x > /data/f 2>/dev/null || echo data-readonly; hostname`},
		Env:         []string{"GREETING=hi-env"},
		Labels:      map[string]string{"choir.agent": "roundtrip"},
		User:        "65534:65534",
		WorkingDir:  "/tmp",
		Hostname:    "choir-test",
		StopSignal:  "SIGUSR1",
		StopTimeout: &stopTimeout,
	}
	host := &docker.HostConfig{
		Mounts: []docker.Mount{
			{Type: docker.MountBind, Source: dir, Target: "/data", ReadOnly: true, BindOptions: &docker.BindOptions{Propagation: "rprivate"}},
			{Type: docker.MountTmpfs, Target: "/scratch", TmpfsOptions: &docker.TmpfsOptions{SizeBytes: 1 << 20, Mode: 0o1777}},
		},
		Tmpfs:          map[string]string{"/run": "rw,size=1m"},
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		CapAdd:         []string{"NET_BIND_SERVICE"},
		SecurityOpt:    []string{"no-new-privileges"},
		NetworkMode:    "none",
		IpcMode:        "private",
		Devices:        []docker.DeviceMapping{{PathOnHost: "/dev/null", PathInContainer: "/dev/choir-null", CgroupPermissions: "rwm"}},
		Init:           &init,
		Resources:      docker.Resources{NanoCPUs: 500_000_000, Memory: 64 << 20, PidsLimit: &pids},
	}
	id := create(t, c, cfg, host)
	got, err := c.ContainerInspect(ctx, id)
	if err != nil {
		t.Fatalf("ContainerInspect = %v", err)
	}
	gc, gh := got.Config, got.HostConfig
	checks := []struct {
		field     string
		got, want any
	}{
		{"Config.Image", gc.Image, busybox},
		{"Config.Entrypoint", gc.Entrypoint, cfg.Entrypoint},
		{"Config.Cmd", gc.Cmd, cfg.Cmd},
		{"Config.Env has GREETING", slices.Contains(gc.Env, "GREETING=hi-env"), true},
		{"Config.Labels[choir.agent]", gc.Labels["choir.agent"], "roundtrip"},
		{"Config.User", gc.User, cfg.User},
		{"Config.WorkingDir", gc.WorkingDir, "/tmp"},
		{"Config.Hostname", gc.Hostname, "choir-test"},
		{"Config.StopSignal", gc.StopSignal, "SIGUSR1"},
		{"Config.StopTimeout", *gc.StopTimeout, 3},
		{"HostConfig.Mounts", len(gh.Mounts), 2},
		{"HostConfig.Mounts[0]", gh.Mounts[0].Type == docker.MountBind && gh.Mounts[0].Source == dir && gh.Mounts[0].ReadOnly && gh.Mounts[0].BindOptions != nil && gh.Mounts[0].BindOptions.Propagation == "rprivate", true},
		{"HostConfig.Mounts[1]", gh.Mounts[1].Type == docker.MountTmpfs && gh.Mounts[1].TmpfsOptions != nil && gh.Mounts[1].TmpfsOptions.SizeBytes == 1<<20 && gh.Mounts[1].TmpfsOptions.Mode == 0o1777, true},
		{"HostConfig.Tmpfs", gh.Tmpfs["/run"], "rw,size=1m"},
		{"HostConfig.ReadonlyRootfs", gh.ReadonlyRootfs, true},
		{"HostConfig.CapDrop", gh.CapDrop, []string{"ALL"}},
		{"HostConfig.CapAdd", gh.CapAdd, []string{"NET_BIND_SERVICE"}},
		{"HostConfig.SecurityOpt", gh.SecurityOpt, []string{"no-new-privileges"}},
		{"HostConfig.Privileged", gh.Privileged, false},
		{"HostConfig.NetworkMode", gh.NetworkMode, "none"},
		{"HostConfig.IpcMode", gh.IpcMode, "private"},
		{"HostConfig.Devices", gh.Devices, host.Devices},
		{"HostConfig.Init", gh.Init != nil && *gh.Init, true},
		{"HostConfig.NanoCPUs", gh.NanoCPUs, int64(500_000_000)},
		{"HostConfig.Memory", gh.Memory, int64(64 << 20)},
		{"HostConfig.PidsLimit", gh.PidsLimit != nil && *gh.PidsLimit == 32, true},
	}
	for _, ch := range checks {
		if !equal(ch.got, ch.want) {
			t.Errorf("%s = %#v; want %#v", ch.field, ch.got, ch.want)
		}
	}

	if err := c.ContainerStart(ctx, id); err != nil {
		t.Fatalf("ContainerStart = %v", err)
	}
	w, err := c.ContainerWait(ctx, id, docker.WaitNotRunning)
	if err != nil || w.StatusCode != 0 {
		t.Fatalf("ContainerWait = %+v, %v", w, err)
	}
	stdout, stderr := logs(t, c, id)
	want := "65534\n/tmp\nhi-env\nfrom-host\nrootfs-readonly\nscratch-ok\ndata-readonly\nchoir-test\n"
	if stdout != want {
		t.Errorf("container output = %q (stderr %q); want %q", stdout, stderr, want)
	}

	// Listed by label, with stopped containers only when All is set.
	f := docker.Filters{"label": {"choir.agent=roundtrip", "choir.test.case=" + got.Config.Labels["choir.test.case"]}}
	list, err := c.ContainerList(ctx, docker.ContainerListOptions{All: true, Filters: f})
	if err != nil || len(list) != 1 || list[0].ID != id || list[0].State != "exited" || list[0].Labels["choir.agent"] != "roundtrip" {
		t.Errorf("ContainerList(All, %v) = %+v, %v; want just this exited container", f, list, err)
	}
	list, err = c.ContainerList(ctx, docker.ContainerListOptions{Filters: f})
	if err != nil || len(list) != 0 {
		t.Errorf("ContainerList(running, %v) = %+v, %v; want none", f, list, err)
	}
	list, err = c.ContainerList(ctx, docker.ContainerListOptions{All: true, Filters: docker.Filters{"label": {"choir.agent=nobody-here"}}})
	if err != nil || len(list) != 0 {
		t.Errorf("ContainerList(other label) = %+v, %v; want none", list, err)
	}
}

func equal(a, b any) bool {
	switch a := a.(type) {
	case []string:
		return slices.Equal(a, b.([]string))
	case []docker.DeviceMapping:
		return slices.Equal(a, b.([]docker.DeviceMapping))
	}
	return a == b
}

// TestContainerMountMissingSource: a bind Mount whose source is missing is
// refused, and nothing is created on the host (the Binds form would create
// a root-owned directory).
func TestContainerMountMissingSource(t *testing.T) {
	c := engine(t)
	missing := filepath.Join(t.TempDir(), "missing")
	_, err := c.ContainerCreate(testCtx(t), "", &docker.ContainerConfig{Image: busybox, Labels: dockertest.Labels(t, c)}, &docker.HostConfig{
		Mounts: []docker.Mount{{Type: docker.MountBind, Source: missing, Target: "/workspace"}},
	})
	if !docker.IsBadRequest(err) || !strings.Contains(err.Error(), "bind source path does not exist") {
		t.Errorf("ContainerCreate(bind of a missing source) = %v; want HTTP 400 naming the missing path", err)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("the missing bind source exists after the create: %v", err)
	}
}

func TestContainerNameConflict(t *testing.T) {
	c := engine(t)
	ctx := testCtx(t)
	name := uniq("choir-test-name")
	cfg := &docker.ContainerConfig{Image: busybox, Labels: dockertest.Labels(t, c)}
	if _, err := c.ContainerCreate(ctx, name, cfg, nil); err != nil {
		t.Fatalf("ContainerCreate(%s) = %v", name, err)
	}
	if _, err := c.ContainerCreate(ctx, name, cfg, nil); !docker.IsConflict(err) {
		t.Errorf("second ContainerCreate(%s) = %v; want a conflict", name, err)
	}
	got, err := c.ContainerInspect(ctx, name)
	if err != nil || got.Name != "/"+name {
		t.Errorf("ContainerInspect(%s) = %q, %v; want it found by name", name, got.Name, err)
	}
}

func TestNotFound(t *testing.T) {
	c := engine(t)
	ctx := testCtx(t)
	const absent = "choir-test-absent-container"
	calls := map[string]error{}
	_, calls["ContainerInspect"] = c.ContainerInspect(ctx, absent)
	calls["ContainerStart"] = c.ContainerStart(ctx, absent)
	calls["ContainerStop"] = c.ContainerStop(ctx, absent, time.Second)
	calls["ContainerKill"] = c.ContainerKill(ctx, absent, "")
	_, calls["ContainerWait"] = c.ContainerWait(ctx, absent, docker.WaitNotRunning)
	calls["ContainerRemove"] = c.ContainerRemove(ctx, absent, docker.ContainerRemoveOptions{Force: true})
	_, calls["ContainerLogs"] = c.ContainerLogs(ctx, absent, docker.LogsOptions{})
	_, calls["ImageInspect"] = c.ImageInspect(ctx, "choir-test/absent:1")
	_, calls["ImageRemove"] = c.ImageRemove(ctx, "choir-test/absent:1", docker.ImageRemoveOptions{})
	calls["ImageTag"] = c.ImageTag(ctx, "choir-test/absent:1", "choir-test/other:1")
	_, calls["ContainerCreate(absent image)"] = c.ContainerCreate(ctx, "", &docker.ContainerConfig{Image: "choir-test/absent:1"}, nil)
	for call, err := range calls {
		if !docker.IsNotFound(err) {
			t.Errorf("%s(absent) = %v; want not found", call, err)
		}
	}
}
