package doctor

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"choir/internal/config"
	"choir/internal/ctl"
)

// newHome makes a home as choirctl init leaves it, with the postgres
// secret set and Postgres on a port nothing listens on: a valid config.
// edit, when not nil, changes the config before it is written.
func newHome(t *testing.T, edit func(cfg map[string]any)) config.Home {
	t.Helper()
	h := config.Home{Dir: filepath.Join(t.TempDir(), "h")}
	for _, dir := range []string{h.Dir, h.SocksDir(), h.LogsDir()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	var cfg map[string]any
	if err := json.Unmarshal(config.Skeleton(), &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["postgres"].(map[string]any)["host"] = "127.0.0.1"
	cfg["postgres"].(map[string]any)["port"] = closedPort(t)
	if edit != nil {
		edit(cfg)
	}
	data, _ := json.MarshalIndent(cfg, "", "  ")
	writeFile(t, h.ConfigPath(), string(data), 0o644)
	writeFile(t, h.SecretsPath(), `{"postgres": "choir:pw-doctor-T3st"}`, 0o600)
	return h
}

func writeFile(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// missingEngine is a DOCKER_HOST where no engine listens.
func missingEngine(t *testing.T) string {
	return "unix://" + filepath.Join(t.TempDir(), "docker.sock")
}

// run runs the doctor on home and returns its report.
func run(t *testing.T, d *Doctor) Report {
	t.Helper()
	if d.Timeout == 0 {
		d.Timeout = 20 * time.Second // generous: these checks answer at once
	}
	return d.Run(context.Background())
}

// line returns the result of the named check, failing the test if absent.
func line(t *testing.T, rep Report, name string) Result {
	t.Helper()
	for _, r := range rep.Checks {
		if r.Check == name {
			return r
		}
	}
	t.Fatalf("no %q line in the report: %+v", name, rep.Checks)
	return Result{}
}

// expect checks a line's status and that its detail and fix contain each
// of want.
func expect(t *testing.T, rep Report, name string, status Status, want ...string) {
	t.Helper()
	r := line(t, rep, name)
	if r.Status != status {
		t.Errorf("%s = %s %q (fix %q); want %s", name, r.Status, r.Detail, r.Fix, status)
		return
	}
	for _, w := range want {
		if !strings.Contains(r.Detail+" -- "+r.Fix, w) {
			t.Errorf("%s = %s %q (fix %q); want it to say %q", name, r.Status, r.Detail, r.Fix, w)
		}
	}
	if status != OK && status != Skip && r.Fix == "" {
		t.Errorf("%s is %s without saying what to do: %q", name, status, r.Detail)
	}
}

// serveUnix serves h on a unix socket at path until the test ends.
func serveUnix(t *testing.T, path string, h http.Handler) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
}

// fakeChoird answers the admin socket's status with st.
func fakeChoird(t *testing.T, h config.Home, st ctl.Status) {
	t.Helper()
	serveUnix(t, h.AdminSocket(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/status" {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(st)
	}))
	if err := os.Chmod(h.AdminSocket(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// image is what the fake engine knows of one image.
type image struct {
	id      string
	created time.Time
	labels  map[string]string
}

// fakeEngine serves the Docker Engine API endpoints the doctor asks, on a
// unix socket, with images by name, and returns its DOCKER_HOST.
func fakeEngine(t *testing.T, driver, root string, images map[string]image) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "d.sock")
	serveUnix(t, sock, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch p := r.URL.Path; {
		case p == "/version":
			w.Write([]byte(`{"Version":"20.10.24+dfsg1","ApiVersion":"1.41","MinAPIVersion":"1.12","Os":"linux"}`))
		case p == "/v1.41/info":
			json.NewEncoder(w).Encode(map[string]any{"ServerVersion": "20.10.24+dfsg1", "Driver": driver, "DockerRootDir": root})
		case strings.HasPrefix(p, "/v1.41/images/") && strings.HasSuffix(p, "/json"):
			name := strings.TrimSuffix(strings.TrimPrefix(p, "/v1.41/images/"), "/json")
			img, ok := images[name]
			if !ok {
				w.WriteHeader(http.StatusNotFound)
				w.Write([]byte(`{"message":"No such image: ` + name + `"}`))
				return
			}
			json.NewEncoder(w).Encode(map[string]any{"Id": img.id, "RepoTags": []string{name}, "Created": img.created, "Config": map[string]any{"Labels": img.labels}})
		default:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"message":"page not found"}`))
		}
	}))
	return "unix://" + sock
}

// gitRepo makes a bare repository with one commit on main and returns its
// path and that commit.
func gitRepo(t *testing.T) (bare, commit string) {
	t.Helper()
	dir := t.TempDir()
	bare, work := filepath.Join(dir, "r.git"), filepath.Join(dir, "w")
	git(t, dir, "init", "--quiet", "--bare", "--initial-branch=main", bare)
	git(t, dir, "clone", "--quiet", bare, work)
	git(t, work, "checkout", "--quiet", "-B", "main")
	return bare, gitCommit(t, work)
}

// gitCommit commits once more in work, pushes, and returns the commit.
func gitCommit(t *testing.T, work string) string {
	t.Helper()
	git(t, work, "commit", "--quiet", "--allow-empty", "-m", "c")
	git(t, work, "push", "--quiet", "origin", "HEAD:main")
	return git(t, work, "rev-parse", "HEAD")
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
