package imagetest

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"choir/internal/docker"
	"choir/testkit/dockertest"
)

func TestMain(m *testing.M) { dockertest.Main(m) }

func TestDebian(t *testing.T) {
	c := dockertest.Engine(t)
	ref := Debian(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	created, err := c.ContainerCreate(ctx, "", &docker.ContainerConfig{
		Image: ref, Cmd: []string{"sh", "-c", "git --version && rg --version | head -1 && python3 --version && command -v ssh && ls /etc/ssl/certs/ca-certificates.crt && . /etc/os-release && echo $VERSION_CODENAME"},
		Labels: dockertest.Labels(t, c),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ContainerStart(ctx, created.ID); err != nil {
		t.Fatal(err)
	}
	w, err := c.ContainerWait(ctx, created.ID, docker.WaitNotRunning)
	if err != nil {
		t.Fatal(err)
	}
	logs, err := c.ContainerLogs(ctx, created.ID, docker.LogsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	var out bytes.Buffer
	if err := logs.Copy(&out, &out); err != nil {
		t.Fatal(err)
	}
	if w.StatusCode != 0 {
		t.Fatalf("the packages are not all in %s (exit %d):\n%s", ref, w.StatusCode, out.String())
	}
	for _, want := range []string{"git version", "ripgrep", "Python 3", "/usr/bin/ssh", "bookworm"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestSlimmed(t *testing.T) {
	tests := []struct {
		rel  string
		dir  bool
		want bool
	}{
		{"usr/share/doc/git/README.md", false, true},
		{"usr/share/doc/git/copyright", false, false},
		{"usr/share/doc/git", true, false},
		{"usr/share/man", true, false},
		{"usr/share/man/man1", true, true},
		{"usr/share/locale/de/LC_MESSAGES/git.mo", false, true},
		{"usr/share/git-core/templates", true, false},
		{"usr/bin/git", false, false},
	}
	for _, tt := range tests {
		if got := slimmed(tt.rel, tt.dir); got != tt.want {
			t.Errorf("slimmed(%q, %v) = %v; want %v", tt.rel, tt.dir, got, tt.want)
		}
	}
}
