package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"choir/internal/docker"
	"choir/testkit"
)

func TestMain(m *testing.M) { Main(m) }

func TestRootfs(t *testing.T) {
	if _, err := os.Stat(BusyboxPath); err != nil {
		testkit.Unavailable(t, "no %s (%v): apt-get install -y --no-install-recommends busybox-static", BusyboxPath, err)
	}
	extra := []File{{Name: "/usr/local/bin/hello", Mode: 0o755, Body: []byte("#!/bin/sh\necho hello\n")}}
	a, err := busyboxRootfs(extra)
	if err != nil {
		t.Fatal(err)
	}
	b, err := busyboxRootfs(extra)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("busyboxRootfs gave different bytes for the same inputs")
	}
	entries := map[string]*tar.Header{}
	tr := tar.NewReader(bytes.NewReader(a))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		entries[strings.TrimSuffix(h.Name, "/")] = h
	}
	for name, want := range map[string]string{
		"bin/busybox":         "file 755",
		"bin/sh":              "symlink /bin/busybox",
		"bin/sleep":           "symlink /bin/busybox",
		"usr/bin/env":         "symlink /bin/busybox",
		"tmp":                 "dir 1777",
		"proc":                "dir 555",
		"etc/passwd":          "file 644",
		"usr/local/bin/hello": "file 755",
		"usr/local/bin":       "dir 755",
	} {
		h := entries[name]
		var got string
		switch {
		case h == nil:
			got = "missing"
		case h.Typeflag == tar.TypeSymlink:
			got = "symlink " + h.Linkname
		case h.Typeflag == tar.TypeDir:
			got = "dir " + strconv.FormatInt(h.Mode, 8)
		default:
			got = "file " + strconv.FormatInt(h.Mode, 8)
		}
		if got != want {
			t.Errorf("rootfs entry %s = %s; want %s", name, got, want)
		}
	}
}

func TestBusyboxImage(t *testing.T) {
	c := Engine(t)
	ctx := context.Background()
	ref := "choir-test/dockertest:" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	t.Cleanup(func() { c.ImageRemove(context.Background(), ref, docker.ImageRemoveOptions{Force: true}) })
	hello := File{Name: "/usr/local/bin/hello", Mode: 0o755, Body: []byte("#!/bin/sh\necho hello-extra \"$@\"\n")}

	id := BusyboxImage(t, c, ref, hello)
	if again := BusyboxImage(t, c, ref, hello); again != id {
		t.Errorf("second BusyboxImage = %s; want the same image %s", again, id)
	}
	other := BusyboxImage(t, c, ref, File{Name: "/etc/motd", Body: []byte("changed\n")})
	if other == id {
		t.Errorf("BusyboxImage with other files kept the old image %s", id)
	}
	id = BusyboxImage(t, c, ref, hello)

	res, err := c.ContainerCreate(ctx, "", &docker.ContainerConfig{Image: ref, Cmd: []string{"hello", "world"}, Labels: Labels(t, c)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ContainerStart(ctx, res.ID); err != nil {
		t.Fatal(err)
	}
	w, err := c.ContainerWait(ctx, res.ID, docker.WaitNotRunning)
	if err != nil || w.StatusCode != 0 {
		t.Fatalf("ContainerWait = %+v, %v", w, err)
	}
	s, err := c.ContainerLogs(ctx, res.ID, docker.LogsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out bytes.Buffer
	if err := s.Copy(&out, &out); err != nil || out.String() != "hello-extra world\n" {
		t.Errorf("running the extra file = %q, %v; want %q", out.String(), err, "hello-extra world\n")
	}
}

func TestLabelsRemoveContainersAtCleanup(t *testing.T) {
	c := Engine(t)
	ctx := context.Background()
	BusyboxImage(t, c, "choir-test/busybox:1")
	var id, caseLabel string
	t.Run("inner", func(t *testing.T) {
		labels := Labels(t, c)
		caseLabel = labels[labelCase]
		res, err := c.ContainerCreate(ctx, "", &docker.ContainerConfig{Image: "choir-test/busybox:1", Cmd: []string{"sleep", "300"}, Labels: labels}, nil)
		if err != nil {
			t.Fatal(err)
		}
		id = res.ID
		if err := c.ContainerStart(ctx, id); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := c.ContainerInspect(ctx, id); !docker.IsNotFound(err) {
		t.Errorf("container of a finished test: inspect = %v; want it removed", err)
	}
	list, err := c.ContainerList(ctx, docker.ContainerListOptions{All: true, Filters: docker.Filters{"label": {labelCase + "=" + caseLabel}}})
	if err != nil || len(list) != 0 {
		t.Errorf("containers left with the test's label: %+v, %v", list, err)
	}
}

func TestEngineIsShared(t *testing.T) {
	a, b := Engine(t), Engine(t)
	if a != b {
		t.Errorf("Engine returned two clients in one binary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := a.Ping(ctx); err != nil {
		t.Errorf("Ping = %v", err)
	}
}

// TestEngineScriptStopIsSafe: engine.sh stop on a directory where nothing
// runs succeeds, env fails, and neither removes a directory it did not make.
func TestEngineScriptStopIsSafe(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(dir, "keep")
	os.WriteFile(keep, []byte("x"), 0o644)
	if out, err := exec.Command("sh", "engine.sh", "stop", dir).CombinedOutput(); err != nil {
		t.Errorf("engine.sh stop (nothing running) = %v: %s", err, out)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("engine.sh stop removed a directory it did not make: %v", err)
	}
	if out, err := exec.Command("sh", "engine.sh", "env", dir).CombinedOutput(); err == nil {
		t.Errorf("engine.sh env (nothing running) succeeded: %s", out)
	}
	if out, err := exec.Command("sh", "engine.sh", "bogus", dir).CombinedOutput(); err == nil {
		t.Errorf("engine.sh bogus succeeded: %s", out)
	}
	stopEngine(filepath.Join(dir, "absent")) // must not panic or fail
}

func TestUnescapeMountinfo(t *testing.T) {
	for in, want := range map[string]string{
		`/tmp/plain`:         "/tmp/plain",
		`/tmp/with\040space`: "/tmp/with space",
		`/tmp/tab\011x`:      "/tmp/tab\tx",
		`/tmp/back\134slash`: `/tmp/back\slash`,
		`/tmp/short\04`:      `/tmp/short\04`,
	} {
		if got := unescapeMountinfo(in); got != want {
			t.Errorf("unescapeMountinfo(%q) = %q; want %q", in, got, want)
		}
	}
}
