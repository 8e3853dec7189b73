package docker_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"choir/internal/docker"
)

// contextTar is a build context holding one Dockerfile.
func contextTar(t testing.TB, dockerfile string) *bytes.Reader {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile))}); err != nil {
		t.Fatal(err)
	}
	tw.Write([]byte(dockerfile))
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(buf.Bytes())
}

// removeImage removes ref when the test ends.
func removeImage(t testing.TB, c *docker.Client, ref string) {
	t.Cleanup(func() {
		_, err := c.ImageRemove(cleanupCtx(t), ref, docker.ImageRemoveOptions{Force: true})
		if err != nil && !docker.IsNotFound(err) {
			t.Errorf("ImageRemove(%s) = %v", ref, err)
		}
	})
}

func TestImageImport(t *testing.T) {
	c := engine(t)
	ctx := testCtx(t)
	img, err := c.ImageInspect(ctx, busybox)
	if err != nil {
		t.Fatalf("ImageInspect(%s) = %v", busybox, err)
	}
	if !slices.Contains(img.RepoTags, busybox) || img.Config == nil || !slices.Equal(img.Config.Cmd, []string{"sh"}) {
		t.Errorf("imported image: tags %v, config %+v; want tag %s and CMD [sh]", img.RepoTags, img.Config, busybox)
	}

	// A direct import reports its progress and returns the image ID.
	ref := uniq("choir-test/import") + ":v1"
	removeImage(t, c, ref)
	var statuses []string
	var tarball bytes.Buffer
	tw := tar.NewWriter(&tarball)
	tw.WriteHeader(&tar.Header{Name: "hello.txt", Mode: 0o644, Size: 3})
	tw.Write([]byte("hi\n"))
	tw.Close()
	id, err := c.ImageImport(ctx, &tarball, ref, docker.ImportOptions{
		Changes:  []string{`CMD ["/nothing"]`, "LABEL origin=test"},
		Progress: func(m docker.JSONMessage) { statuses = append(statuses, m.Status) },
	})
	if err != nil {
		t.Fatalf("ImageImport = %v", err)
	}
	if !strings.HasPrefix(id, "sha256:") || !slices.Contains(statuses, id) {
		t.Errorf("ImageImport = %q with progress %q; want a sha256 ID reported in the stream", id, statuses)
	}
	got, err := c.ImageInspect(ctx, ref)
	if err != nil || got.ID != id || got.Config.Labels["origin"] != "test" {
		t.Errorf("ImageInspect(%s) = %+v, %v; want ID %s with label origin=test", ref, got, err, id)
	}

	// A broken tarball is refused with the engine's message.
	_, err = c.ImageImport(ctx, strings.NewReader("not a tar"), uniq("choir-test/broken"), docker.ImportOptions{})
	if err == nil || !strings.Contains(err.Error(), "tar") {
		t.Errorf("ImageImport(garbage) = %v; want the engine's complaint about the tar", err)
	}
}

func TestImageBuild(t *testing.T) {
	c := engine(t)
	ctx := testCtx(t)
	tag := uniq("choir-test/build") + ":ok"
	removeImage(t, c, tag)
	buildLabel := uniq("b")
	dockerfile := "FROM " + busybox + `
ARG GREETING=unset
RUN echo "greeting=$GREETING" && echo "$GREETING" > /greeting
LABEL stage=test
CMD ["cat", "/greeting"]
`
	var msgs []docker.JSONMessage
	res, err := c.ImageBuild(ctx, contextTar(t, dockerfile), docker.BuildOptions{
		Tags:      []string{tag},
		Labels:    map[string]string{"choir.test.build": buildLabel},
		BuildArgs: map[string]string{"GREETING": "hello-build"},
		NoCache:   true,
		Progress:  func(m docker.JSONMessage) { msgs = append(msgs, m) },
	})
	if err != nil {
		t.Fatalf("ImageBuild = %v", err)
	}
	var steps []string
	runOutput := -1
	for i, m := range msgs {
		if strings.HasPrefix(m.Stream, "Step ") {
			steps = append(steps, m.Stream)
		}
		if strings.Contains(m.Stream, "greeting=hello-build") {
			runOutput = i
		}
	}
	// The labels parameter adds a sixth step: LABEL choir.test.build=...
	if len(steps) != 6 || steps[0] != "Step 1/6 : FROM "+busybox || !strings.HasPrefix(steps[2], "Step 3/6 : RUN") {
		t.Errorf("steps seen by the callback = %q; want 6 steps starting with FROM", steps)
	}
	if runOutput < 0 {
		t.Errorf("the callback never saw the RUN step's output greeting=hello-build")
	}
	if !strings.HasPrefix(res.ImageID, "sha256:") {
		t.Errorf("ImageID = %q; want sha256:...", res.ImageID)
	}

	img, err := c.ImageInspect(ctx, tag)
	if err != nil || img.ID != res.ImageID || img.Config.Labels["choir.test.build"] != buildLabel || img.Config.Labels["stage"] != "test" {
		t.Errorf("ImageInspect(%s) = %+v, %v; want ID %s with both labels", tag, img, err, res.ImageID)
	}
	list, err := c.ImageList(ctx, docker.ImageListOptions{Filters: docker.Filters{"label": {"choir.test.build=" + buildLabel}}})
	if err != nil || len(list) != 1 || list[0].ID != res.ImageID || !slices.Contains(list[0].RepoTags, tag) {
		t.Errorf("ImageList(label) = %+v, %v; want exactly the built image", list, err)
	}
	code, out, _ := run(t, c, &docker.ContainerConfig{Image: tag}, nil)
	if code != 0 || out != "hello-build\n" {
		t.Errorf("running the built image = %d, %q; want 0, %q", code, out, "hello-build\n")
	}
}

func TestImageBuildFailingStep(t *testing.T) {
	c := engine(t)
	dockerfile := "FROM " + busybox + "\nRUN echo before\nRUN echo failing-output && false\n"
	_, err := c.ImageBuild(testCtx(t), contextTar(t, dockerfile), docker.BuildOptions{ForceRemove: true})
	var be *docker.BuildError
	if !errors.As(err, &be) {
		t.Fatalf("ImageBuild(RUN false) = %v (%T); want *BuildError", err, err)
	}
	if be.Step != "Step 3/3 : RUN echo failing-output && false" {
		t.Errorf("BuildError.Step = %q; want the RUN false step", be.Step)
	}
	if be.Code != 1 || !strings.Contains(be.Message, "returned a non-zero code: 1") {
		t.Errorf("BuildError = code %d, %q; want code 1 and the engine's message", be.Code, be.Message)
	}
	if !strings.Contains(be.Output, "failing-output") || strings.Contains(be.Output, "before") {
		t.Errorf("BuildError.Output = %q; want the failing step's output", be.Output)
	}
}

func TestImageBuildParseError(t *testing.T) {
	c := engine(t)
	_, err := c.ImageBuild(testCtx(t), contextTar(t, "FROM "+busybox+"\nRUNX echo hi\n"), docker.BuildOptions{})
	var ae *docker.APIError
	if !errors.As(err, &ae) || ae.Status != 400 || !docker.IsBadRequest(err) {
		t.Fatalf("ImageBuild(RUNX) = %v (%T); want *APIError 400", err, err)
	}
	if !strings.Contains(ae.Message, "unknown instruction: RUNX") {
		t.Errorf("APIError.Message = %q; want the engine's parse error", ae.Message)
	}
}

// TestImageBuildNeverPulls: a FROM the engine lacks fails at step 1
// instead of reaching for a registry.
func TestImageBuildMissingBase(t *testing.T) {
	c := engine(t)
	_, err := c.ImageBuild(testCtx(t), contextTar(t, "FROM choir-test/absent:1\n"), docker.BuildOptions{})
	var be *docker.BuildError
	if !errors.As(err, &be) || be.Step != "Step 1/1 : FROM choir-test/absent:1" {
		t.Fatalf("ImageBuild(FROM absent) = %v; want a *BuildError at step 1", err)
	}
}

func TestImageTagListRemove(t *testing.T) {
	c := engine(t)
	ctx := testCtx(t)
	base, err := c.ImageInspect(ctx, busybox)
	if err != nil {
		t.Fatal(err)
	}
	repo := uniq("choir-test/tagged")
	target := repo + ":v2"
	removeImage(t, c, target)
	if err := c.ImageTag(ctx, busybox, target); err != nil {
		t.Fatalf("ImageTag = %v", err)
	}
	img, err := c.ImageInspect(ctx, target)
	if err != nil || img.ID != base.ID || !slices.Contains(img.RepoTags, target) {
		t.Fatalf("ImageInspect(%s) = %+v, %v; want the busybox image tagged %s", target, img, err, target)
	}
	list, err := c.ImageList(ctx, docker.ImageListOptions{Filters: docker.Filters{"reference": {repo}}})
	if err != nil || len(list) != 1 || list[0].ID != base.ID {
		t.Errorf("ImageList(reference=%s) = %+v, %v; want the one tagged image", repo, list, err)
	}
	gone, err := c.ImageRemove(ctx, target, docker.ImageRemoveOptions{})
	if err != nil || len(gone) != 1 || gone[0].Untagged != target || gone[0].Deleted != "" {
		t.Errorf("ImageRemove(%s) = %+v, %v; want only the tag removed", target, gone, err)
	}
	if _, err := c.ImageInspect(ctx, target); !docker.IsNotFound(err) {
		t.Errorf("ImageInspect after remove = %v; want not found", err)
	}
	if _, err := c.ImageInspect(ctx, busybox); err != nil {
		t.Errorf("ImageInspect(%s) after removing another tag = %v", busybox, err)
	}
}
