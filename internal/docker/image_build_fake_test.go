package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

func tarOf(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestImageBuildRequest checks the query and body the engine receives,
// decoding them itself rather than through the client's types.
func TestImageBuildRequest(t *testing.T) {
	var query map[string][]string
	var gotFiles []string
	var contentType string
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		query = r.URL.Query()
		contentType = r.Header.Get("Content-Type")
		tr := tar.NewReader(r.Body)
		for {
			h, err := tr.Next()
			if err != nil {
				break
			}
			gotFiles = append(gotFiles, h.Name)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"stream":"Step 1/1 : FROM base"}`+"\n"+`{"aux":{"ID":"sha256:feed"}}`+"\n"+`{"stream":"Successfully built feed\n"}`+"\n")
	})
	res, err := c.ImageBuild(context.Background(), bytes.NewReader(tarOf(t, map[string]string{"build/Dockerfile.agent": "FROM base\n"})), BuildOptions{
		Tags:        []string{"choir/agent:abc", "choir/agent:latest"},
		Dockerfile:  "build/Dockerfile.agent",
		Labels:      map[string]string{"choir.agent": "alice"},
		BuildArgs:   map[string]string{"COMMIT": "abc"},
		ForceRemove: true,
		NoCache:     true,
	})
	if err != nil {
		t.Fatalf("ImageBuild = %v", err)
	}
	if res.ImageID != "sha256:feed" {
		t.Errorf("ImageID = %q; want sha256:feed", res.ImageID)
	}
	want := map[string][]string{
		"t":          {"choir/agent:abc", "choir/agent:latest"},
		"dockerfile": {"build/Dockerfile.agent"},
		"labels":     {`{"choir.agent":"alice"}`},
		"buildargs":  {`{"COMMIT":"abc"}`},
		"rm":         {"1"},
		"forcerm":    {"1"},
		"nocache":    {"1"},
	}
	if !reflect.DeepEqual(query, want) {
		t.Errorf("query = %v; want %v (and never version or pull)", query, want)
	}
	if contentType != "application/x-tar" || !reflect.DeepEqual(gotFiles, []string{"build/Dockerfile.agent"}) {
		t.Errorf("body = %s with %v; want application/x-tar with the context", contentType, gotFiles)
	}
}

// TestImageBuildStreamsProgress proves the callback sees each message while
// the build runs: the fake holds back the rest of the build until the
// callback has seen the first step.
func TestImageBuildStreamsProgress(t *testing.T) {
	seen := make(chan struct{})
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"stream":"Step 1/2 : FROM base"}`+"\n")
		w.(http.Flusher).Flush()
		select {
		case <-seen:
		case <-time.After(10 * time.Second):
			io.WriteString(w, `{"errorDetail":{"message":"the client did not see step 1 before the build ended"},"error":"x"}`+"\n")
			return
		}
		io.WriteString(w, `{"stream":"Step 2/2 : RUN make"}`+"\n"+`{"stream":"\n"}`+"\n"+`{"aux":{"ID":"sha256:beef"}}`+"\n")
	})
	var steps []string
	res, err := c.ImageBuild(context.Background(), bytes.NewReader(tarOf(t, map[string]string{"Dockerfile": "FROM base\n"})), BuildOptions{
		Progress: func(m JSONMessage) {
			if strings.HasPrefix(m.Stream, "Step ") {
				steps = append(steps, m.Stream)
			}
			if m.Stream == "Step 1/2 : FROM base" {
				close(seen)
			}
		},
	})
	if err != nil {
		t.Fatalf("ImageBuild = %v", err)
	}
	if res.ImageID != "sha256:beef" || len(steps) != 2 {
		t.Errorf("ImageBuild = %q with steps %q; want sha256:beef after 2 steps", res.ImageID, steps)
	}
}

func TestImageBuildStreamError(t *testing.T) {
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		for _, m := range []string{
			`{"stream":"Step 1/2 : FROM base"}`, `{"stream":"\n"}`, `{"stream":" ---\u003e 740d763cffdf\n"}`,
			`{"stream":"Step 2/2 : RUN make"}`, `{"stream":"\n"}`, `{"stream":" ---\u003e Running in d98c9eb8465f\n"}`,
			`{"stream":"make: *** No targets.  Stop.\n"}`,
			`{"errorDetail":{"code":2,"message":"The command '/bin/sh -c make' returned a non-zero code: 2"},"error":"The command '/bin/sh -c make' returned a non-zero code: 2"}`,
		} {
			io.WriteString(w, m+"\n")
		}
	})
	_, err := c.ImageBuild(context.Background(), bytes.NewReader(tarOf(t, map[string]string{"Dockerfile": "x"})), BuildOptions{})
	var be *BuildError
	if !errors.As(err, &be) {
		t.Fatalf("ImageBuild = %v (%T); want *BuildError", err, err)
	}
	if be.Step != "Step 2/2 : RUN make" || be.Code != 2 || !strings.Contains(be.Message, "returned a non-zero code: 2") {
		t.Errorf("BuildError = %+v; want step 2/2, code 2 and the engine's message", be)
	}
	if !strings.Contains(be.Output, "No targets") || strings.Contains(be.Output, "740d763cffdf") {
		t.Errorf("BuildError.Output = %q; want the failing step's output only", be.Output)
	}
	if msg := err.Error(); !strings.Contains(msg, "Step 2/2 : RUN make") || !strings.Contains(msg, "non-zero code: 2") {
		t.Errorf("Error() = %q; want the step and the engine's message", msg)
	}
}

func TestImageImportRequest(t *testing.T) {
	var query map[string][]string
	var body []byte
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		query = r.URL.Query()
		body, _ = io.ReadAll(r.Body)
		io.WriteString(w, `{"status":"sha256:5eed"}`+"\n")
	})
	id, err := c.ImageImport(context.Background(), strings.NewReader("rootfs-bytes"), "choir/base:v1", ImportOptions{Changes: []string{`CMD ["sh"]`, "ENV A=b"}})
	if err != nil || id != "sha256:5eed" {
		t.Fatalf("ImageImport = %q, %v; want sha256:5eed", id, err)
	}
	want := map[string][]string{"fromSrc": {"-"}, "repo": {"choir/base"}, "tag": {"v1"}, "changes": {`CMD ["sh"]`, "ENV A=b"}}
	if !reflect.DeepEqual(query, want) || string(body) != "rootfs-bytes" {
		t.Errorf("query = %v, body %q; want %v, the rootfs", query, body, want)
	}
}

func TestContainerCreateWireFormat(t *testing.T) {
	var got map[string]any
	var name string
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		name = r.URL.Query().Get("name")
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			t.Errorf("decode body: %v", err)
		}
		w.WriteHeader(201)
		io.WriteString(w, `{"Id":"c0ffee","Warnings":[]}`)
	})
	init, pids := true, int64(64)
	res, err := c.ContainerCreate(context.Background(), "choir-alice", &ContainerConfig{
		Image: "choir/alice:abc", Cmd: []string{"choir-agent"}, Env: []string{"A=b"},
		Labels: map[string]string{"choir.agent": "alice"}, User: "1000:1000", WorkingDir: "/workspace",
	}, &HostConfig{
		Mounts: []Mount{
			{Type: MountBind, Source: "/srv/ws", Target: "/workspace", BindOptions: &BindOptions{Propagation: "rprivate"}},
			{Type: MountTmpfs, Target: "/run", TmpfsOptions: &TmpfsOptions{SizeBytes: 1 << 20, Mode: 0o1777}},
		},
		Tmpfs:          map[string]string{"/tmp": "rw,size=64m"},
		ReadonlyRootfs: true, CapDrop: []string{"ALL"}, SecurityOpt: []string{"no-new-privileges"},
		NetworkMode: "bridge", IpcMode: "private", Init: &init,
		Resources: Resources{NanoCPUs: 1_500_000_000, Memory: 512 << 20, PidsLimit: &pids},
	})
	if err != nil || res.ID != "c0ffee" {
		t.Fatalf("ContainerCreate = %+v, %v; want Id c0ffee", res, err)
	}
	if name != "choir-alice" {
		t.Errorf("name = %q; want choir-alice", name)
	}
	hc, _ := got["HostConfig"].(map[string]any)
	checks := []struct {
		what string
		got  any
		want any
	}{
		{"Image", got["Image"], "choir/alice:abc"},
		{"WorkingDir", got["WorkingDir"], "/workspace"},
		{"Labels", got["Labels"], map[string]any{"choir.agent": "alice"}},
		{"HostConfig.NanoCpus", hc["NanoCpus"], 1.5e9},
		{"HostConfig.Memory", hc["Memory"], float64(512 << 20)},
		{"HostConfig.PidsLimit", hc["PidsLimit"], 64.0},
		{"HostConfig.ReadonlyRootfs", hc["ReadonlyRootfs"], true},
		{"HostConfig.CapDrop", hc["CapDrop"], []any{"ALL"}},
		{"HostConfig.SecurityOpt", hc["SecurityOpt"], []any{"no-new-privileges"}},
		{"HostConfig.Init", hc["Init"], true},
		{"HostConfig.Tmpfs", hc["Tmpfs"], map[string]any{"/tmp": "rw,size=64m"}},
		{"HostConfig.Mounts", hc["Mounts"], []any{
			map[string]any{"Type": "bind", "Source": "/srv/ws", "Target": "/workspace", "BindOptions": map[string]any{"Propagation": "rprivate"}},
			map[string]any{"Type": "tmpfs", "Target": "/run", "TmpfsOptions": map[string]any{"SizeBytes": float64(1 << 20), "Mode": float64(0o1777)}},
		}},
		{"HostConfig.Privileged absent", hc["Privileged"], nil},
		{"HostConfig.Binds absent", hc["Binds"], nil},
		{"Resources not nested", hc["Resources"], nil},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %#v; want %#v", ch.what, ch.got, ch.want)
		}
	}
}
