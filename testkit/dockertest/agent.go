package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"

	"choir/internal/docker"
	"choir/testkit"
)

// BuildContext is a build context (a tar archive) holding files, for
// ImageBuild: a Dockerfile and what it copies. Names are relative to the
// context here, not paths in an image.
func BuildContext(files ...File) *bytes.Buffer {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		tw.WriteHeader(&tar.Header{Name: f.Name, Mode: int64(mode.Perm()), Size: int64(len(f.Body))})
		tw.Write(f.Body)
	}
	tw.Close()
	return &buf
}

// AgentImage builds choir-agent-<id>:<version>: the test busybox image with
// the static choir-agent as its entrypoint and a /choir/version.json,
// labelled and tagged :latest as the build pipeline does, so choird's
// lifecycle starts it. It is removed when the test ends.
func AgentImage(t testing.TB, c *docker.Client, id, version string) string {
	t.Helper()
	return AgentImageFrom(t, c, BusyboxImage(t, c, "choir-test/busybox:1"), id, version)
}

// AgentImageFrom is AgentImage on another base image, such as the Debian of
// imagetest (bash, coreutils, perl, python3: what tools use).
func AgentImageFrom(t testing.TB, c *docker.Client, base, id, version string) string {
	t.Helper()
	bin, err := os.ReadFile(testkit.Build(t, "choir/agent"))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := json.Marshal(map[string]string{"agent_id": id, "image_version": version})
	buf := BuildContext(
		File{Name: "Dockerfile", Mode: 0o644, Body: []byte("FROM " + base + "\nCOPY choir-agent /choir/bin/choir-agent\nCOPY version.json /choir/version.json\nENTRYPOINT [\"/choir/bin/choir-agent\"]\nCMD []\n")},
		File{Name: "choir-agent", Mode: 0o755, Body: bin},
		File{Name: "version.json", Mode: 0o644, Body: v},
	)
	ref := "choir-agent-" + id + ":" + version
	labels := map[string]string{"choir.managed": "true", "choir.agent": id, "choir.image_version": version}
	if _, err := c.ImageBuild(context.Background(), buf, docker.BuildOptions{Tags: []string{ref}, Labels: labels}); err != nil {
		t.Fatalf("build the test agent image %s: %v", ref, err)
	}
	latest := "choir-agent-" + id + ":latest" // what the last build marks current
	if err := c.ImageTag(context.Background(), ref, latest); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.ImageRemove(context.Background(), latest, docker.ImageRemoveOptions{Force: true})
		c.ImageRemove(context.Background(), ref, docker.ImageRemoveOptions{Force: true})
	})
	return ref
}
