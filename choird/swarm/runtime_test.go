package swarm

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/choird/lifecycle"
	"choir/internal/docker"
)

// fakeEngine is a manager in memory: it records what it is asked and
// answers from its maps.
type fakeEngine struct {
	mu       sync.Mutex
	image    docker.Image
	archive  []byte // ImageSave's answer
	tags     []string
	pushed   []string
	auths    []docker.RegistryAuth
	services map[string]docker.ServiceSpec
	tasks    map[string][]docker.Task
	secrets  map[string]docker.SecretSpec
	removed  []string
	n        int
}

var _ Engine = (*fakeEngine)(nil)

func notFound(what string) error {
	return &docker.APIError{Status: http.StatusNotFound, Message: what + " not found"}
}

func (f *fakeEngine) id(prefix string) string { f.n++; return prefix + string(rune('0'+f.n)) }

func (f *fakeEngine) ServiceCreate(ctx context.Context, spec docker.ServiceSpec, auth *docker.RegistryAuth) (docker.ServiceCreateResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.id("svc")
	f.services[id] = spec
	f.auths = append(f.auths, *auth)
	return docker.ServiceCreateResponse{ID: id}, nil
}
func (f *fakeEngine) ServiceInspect(ctx context.Context, id string) (docker.Service, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.services[id]
	if !ok {
		return docker.Service{}, notFound("service " + id)
	}
	return docker.Service{ID: id, Spec: s}, nil
}
func (f *fakeEngine) ServiceRemove(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.services[id]; !ok {
		return notFound("service " + id)
	}
	delete(f.services, id)
	delete(f.tasks, id) // a removed service's tasks are reaped
	return nil
}
func (f *fakeEngine) ServiceList(ctx context.Context, filters docker.Filters) ([]docker.Service, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []docker.Service
	for id, s := range f.services {
		if hasLabels(s.Labels, filters["label"]) {
			out = append(out, docker.Service{ID: id, Spec: s})
		}
	}
	return out, nil
}
func (f *fakeEngine) ServiceLogs(ctx context.Context, id string, opts docker.LogsOptions) (*docker.LogStream, error) {
	return nil, notFound("service " + id)
}
func (f *fakeEngine) TaskList(ctx context.Context, filters docker.Filters) ([]docker.Task, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]docker.Task(nil), f.tasks[filters["service"][0]]...), nil
}
func (f *fakeEngine) SecretCreate(ctx context.Context, spec docker.SecretSpec) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.id("sec")
	f.secrets[id] = spec
	return id, nil
}
func (f *fakeEngine) SecretList(ctx context.Context, filters docker.Filters) ([]docker.Secret, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []docker.Secret
	for id, s := range f.secrets {
		if hasLabels(s.Labels, filters["label"]) {
			out = append(out, docker.Secret{ID: id, Spec: docker.SecretSpec{Name: s.Name, Labels: s.Labels}})
		}
	}
	return out, nil
}
func (f *fakeEngine) SecretRemove(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.secrets, id)
	f.removed = append(f.removed, id)
	return nil
}
func (f *fakeEngine) ImageInspect(ctx context.Context, ref string) (docker.Image, error) {
	if ref != "choir-agent-alice:7" && ref != f.image.ID {
		return docker.Image{}, notFound("image " + ref)
	}
	return f.image, nil
}
func (f *fakeEngine) ImageTag(ctx context.Context, source, target string) error {
	f.tags = append(f.tags, source+" "+target)
	return nil
}
func (f *fakeEngine) ImagePush(ctx context.Context, ref string, auth docker.RegistryAuth, progress docker.ProgressFunc) (docker.PushResult, error) {
	f.pushed = append(f.pushed, ref)
	f.auths = append(f.auths, auth)
	return docker.PushResult{Digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}, nil
}
func (f *fakeEngine) ImageSave(ctx context.Context, ref string) (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(f.archive)), nil
}

func hasLabels(labels map[string]string, want []string) bool {
	for _, w := range want {
		k, v, _ := strings.Cut(w, "=")
		if labels[k] != v {
			return false
		}
	}
	return true
}

// entry is a file of a layer: a mode, or a whiteout when whiteout is set.
type entry struct {
	name string
	mode int64
}

// saveArchive writes what `docker save` writes for layers applied in order.
func saveArchive(t *testing.T, layers ...[]entry) []byte {
	t.Helper()
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	var names []string
	for i, l := range layers {
		var lb bytes.Buffer
		lw := tar.NewWriter(&lb)
		for _, e := range l {
			lw.WriteHeader(&tar.Header{Name: e.name, Mode: e.mode, Typeflag: tar.TypeReg})
		}
		lw.Close()
		name := string(rune('a'+i)) + "/layer.tar"
		names = append(names, name)
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(lb.Len()), Typeflag: tar.TypeReg})
		tw.Write(lb.Bytes())
	}
	m, _ := json.Marshal([]map[string]any{{"Config": "c.json", "Layers": names}})
	tw.WriteHeader(&tar.Header{Name: "manifest.json", Mode: 0o644, Size: int64(len(m)), Typeflag: tar.TypeReg})
	tw.Write(m)
	tw.Close()
	return out.Bytes()
}

func TestSetuidFiles(t *testing.T) {
	base := []entry{{"usr/bin/passwd", 0o4755}, {"usr/bin/wall", 0o2755}, {"usr/bin/su", 0o4755}, {"bin/ls", 0o755}, {"etc/x/mount", 0o4755}}
	for _, tc := range []struct {
		name   string
		layers [][]entry
		want   string
	}{
		{"base", [][]entry{base}, "/etc/x/mount /usr/bin/passwd /usr/bin/su /usr/bin/wall"},
		{"chmod ug-s in a later layer", [][]entry{base, {{"usr/bin/passwd", 0o755}, {"usr/bin/wall", 0o755}, {"usr/bin/su", 0o755}, {"etc/x/mount", 0o755}}}, ""},
		{"whiteouts", [][]entry{base, {{"usr/bin/.wh.passwd", 0}, {"usr/bin/.wh.su", 0}, {"etc/x/.wh..wh..opq", 0}}}, "/usr/bin/wall"},
		{"a setuid file added later", [][]entry{{{"bin/ls", 0o755}}, {{"bin/ls", 0o4755}}}, "/bin/ls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SetuidFiles(bytes.NewReader(saveArchive(t, tc.layers...)))
			if err != nil || strings.Join(got, " ") != tc.want {
				t.Errorf("SetuidFiles = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if _, err := SetuidFiles(strings.NewReader("")); !errors.Is(err, ErrNotAnImage) {
		t.Errorf("SetuidFiles(empty) = %v; want ErrNotAnImage", err)
	}
}

func newRig(t *testing.T) (*Runtime, *fakeEngine, lifecycle.Box) {
	f := &fakeEngine{image: docker.Image{ID: "sha256:feed"}, archive: saveArchive(t, []entry{{"bin/ls", 0o755}}),
		services: map[string]docker.ServiceSpec{}, tasks: map[string][]docker.Task{}, secrets: map[string]docker.SecretSpec{}}
	rt := &Runtime{Engine: f, Registry: "127.0.0.1:5000", PollEvery: time.Millisecond,
		Auth: func() (docker.RegistryAuth, error) {
			return docker.RegistryAuth{Username: "choir", Password: "pw"}, nil
		},
		ClientCert: func(sessionID, agentID string) ([]byte, []byte, error) {
			return []byte("CERT " + agentID + "/" + sessionID), []byte("KEY " + sessionID), nil
		}}
	b := box("worker")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, lifecycle.CAName), []byte("CA PEM"), 0o644)
	for i, m := range b.Host.Mounts {
		if m.Target == lifecycle.SocketTarget {
			b.Host.Mounts[i].Source = dir
		}
	}
	return rt, f, b
}

func TestCreatePublishesAndGivesSecrets(t *testing.T) {
	rt, f, b := newRig(t)
	ctx := context.Background()
	id, err := rt.Create(ctx, b)
	if err != nil {
		t.Fatalf("Create = %v", err)
	}
	if strings.Join(f.tags, ",") != "sha256:feed 127.0.0.1:5000/choir-agent-alice:7" || strings.Join(f.pushed, ",") != "127.0.0.1:5000/choir-agent-alice:7" {
		t.Errorf("tags %v, pushes %v; want the image tagged and pushed to the registry", f.tags, f.pushed)
	}
	for _, a := range f.auths {
		if a.Username != "choir" || a.Password != "pw" || a.ServerAddress != "127.0.0.1:5000" {
			t.Errorf("auth = %v; want the secret's credentials for the registry", a)
		}
	}
	spec := f.services[id]
	if spec.TaskTemplate.ContainerSpec.Image != digestRef || spec.Labels[LabelImageID] != "sha256:feed" {
		t.Errorf("service image %s, image id label %q; want %s, sha256:feed", spec.TaskTemplate.ContainerSpec.Image, spec.Labels[LabelImageID], digestRef)
	}
	data := map[string]string{}
	for _, s := range f.secrets {
		data[s.Name] = string(s.Data)
		if s.Labels[LabelBox] != b.Name {
			t.Errorf("secret %s labels %v; want %s=%s", s.Name, s.Labels, LabelBox, b.Name)
		}
	}
	if data[b.Name+"-token"] != "tok-123" || data[b.Name+"-ca"] != "CA PEM" ||
		data[b.Name+"-client-cert"] != "CERT alice/s1" || data[b.Name+"-client-key"] != "KEY s1" {
		t.Errorf("secrets = %v; want the token, the CA, and the session's client certificate and key", data)
	}
	for _, ref := range spec.TaskTemplate.ContainerSpec.Secrets {
		if _, ok := f.secrets[ref.SecretID]; !ok {
			t.Errorf("secret reference %+v names no secret made", ref)
		}
	}
	// A second start of the same image does not push again.
	b2 := b
	b2.Name = "choir-alice-s2"
	if _, err := rt.Create(ctx, b2); err != nil || len(f.pushed) != 1 {
		t.Errorf("second Create = %v, pushes %v; want no second push", err, f.pushed)
	}
	// Listing finds both; removing one removes its secrets only.
	boxes, err := rt.List(ctx, map[string]string{lifecycle.LabelManaged: "true", lifecycle.LabelInstance: "i1"})
	if err != nil || len(boxes) != 2 {
		t.Errorf("List = %v, %v; want both boxes", boxes, err)
	}
	if err := rt.Remove(ctx, id); err != nil {
		t.Fatalf("Remove = %v", err)
	}
	if len(f.secrets) != 4 || len(f.services) != 1 {
		t.Errorf("after Remove: %d secrets, %d services; want the other box's 4 and 1", len(f.secrets), len(f.services))
	}
	if err := rt.Remove(ctx, id); err != nil {
		t.Errorf("Remove of a removed box = %v; want nil", err)
	}
}

func TestCreateRefusesASetuidImage(t *testing.T) {
	rt, f, b := newRig(t)
	f.archive = saveArchive(t, []entry{{"usr/bin/passwd", 0o4755}})
	_, err := rt.Create(context.Background(), b)
	if err == nil || !strings.Contains(err.Error(), "/usr/bin/passwd") || !strings.Contains(err.Error(), "chmod ug-s") {
		t.Errorf("Create with a setuid image = %v; want a refusal naming the file and the fix", err)
	}
	if len(f.pushed) != 0 || len(f.services) != 0 || len(f.secrets) != 0 {
		t.Errorf("pushes %v, services %d, secrets %d; want nothing made", f.pushed, len(f.services), len(f.secrets))
	}
}

func TestCreateRefusalLeavesNoSecret(t *testing.T) {
	rt, f, b := newRig(t)
	b.Node = ""
	if _, err := rt.Create(context.Background(), b); err == nil || !strings.Contains(err.Error(), "workspaces.<name>.node") {
		t.Errorf("Create without a node = %v; want the workspace's node asked for", err)
	}
	if len(f.secrets) != 0 || len(f.services) != 0 {
		t.Errorf("secrets %d, services %d; want none", len(f.secrets), len(f.services))
	}
}

func TestWaitAndInspectFollowTheTask(t *testing.T) {
	rt, f, b := newRig(t)
	ctx := context.Background()
	id, err := rt.Create(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	st, err := rt.Inspect(ctx, id)
	if err != nil || !st.Running || st.ImageID != "sha256:feed" {
		t.Errorf("Inspect before a task = %+v, %v; want running (pending) with the image id", st, err)
	}
	set := func(state, errText string, code int) {
		f.mu.Lock()
		f.tasks[id] = []docker.Task{{ID: "t1", ServiceID: id, CreatedAt: time.Now(), Status: docker.TaskStatus{State: state, Err: errText,
			ContainerStatus: &docker.ContainerStatus{ContainerID: "c1", ExitCode: code}}}}
		f.mu.Unlock()
	}
	set(docker.TaskRunning, "", 0)
	done := make(chan int64)
	go func() {
		code, err := rt.Wait(ctx, id)
		if err != nil {
			t.Errorf("Wait = %v", err)
		}
		done <- code
	}()
	if st, _ := rt.Inspect(ctx, id); !st.Running {
		t.Errorf("Inspect of a running task = %+v; want running", st)
	}
	set(docker.TaskFailed, "task: non-zero exit (137): OOM killed", 137)
	if code := <-done; code != 137 {
		t.Errorf("Wait = %d; want the task's exit code 137", code)
	}
	if st, _ := rt.Inspect(ctx, id); st.Running || st.ExitCode != 137 || !st.OOMKilled {
		t.Errorf("Inspect of a failed task = %+v; want exited 137, OOM", st)
	}
	if err := rt.Stop(ctx, id, time.Second); err != nil {
		t.Errorf("Stop = %v", err)
	}
	if _, err := rt.Wait(ctx, id); !errors.Is(err, lifecycle.ErrGone) {
		t.Errorf("Wait on a removed box = %v; want ErrGone", err)
	}
	if _, err := rt.Inspect(ctx, id); !errors.Is(err, lifecycle.ErrGone) {
		t.Errorf("Inspect of a removed box = %v; want ErrGone", err)
	}
	if err := rt.Remove(ctx, id); err != nil || len(f.secrets) != 0 {
		t.Errorf("Remove after Stop = %v, %d secrets left; want nil and none", err, len(f.secrets))
	}
}

// TestSweepRemovesWhatBoxesNeverMadeLeft: the secrets of a box whose
// service was never created (choird died between the two) go at the next
// start; a live box's secrets and another installation's stay.
func TestSweepRemovesWhatBoxesNeverMadeLeft(t *testing.T) {
	rt, f, b := newRig(t)
	ctx := context.Background()
	if _, err := rt.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	mine := withLabel(b.Config.Labels, LabelBox, "choir-alice-cut-short")
	others := withLabel(withLabel(b.Config.Labels, lifecycle.LabelInstance, "another"), LabelBox, "choir-bob-x")
	for _, s := range []docker.SecretSpec{
		{Name: "choir-alice-cut-short-token", Labels: mine},
		{Name: "choir-alice-cut-short-ca", Labels: mine},
		{Name: "choir-bob-x-token", Labels: others},
	} {
		f.SecretCreate(ctx, s)
	}
	n, err := rt.Sweep(ctx, map[string]string{lifecycle.LabelManaged: "true", lifecycle.LabelInstance: "i1"})
	if err != nil || n != 2 {
		t.Fatalf("Sweep = %d, %v; want the 2 secrets of the box never made", n, err)
	}
	var left []string
	for _, s := range f.secrets {
		left = append(left, s.Name)
	}
	slices.Sort(left)
	want := []string{"choir-alice-s1-ca", "choir-alice-s1-client-cert", "choir-alice-s1-client-key", "choir-alice-s1-token", "choir-bob-x-token"}
	if !slices.Equal(left, want) {
		t.Errorf("secrets left = %v; want %v", left, want)
	}
}
