package build

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/internal/config"
	"choir/internal/docker"
	"choir/testkit"
)

// fakeEngine answers GET /version like Docker 20.10 and records every other
// request, so a test can see whether the build spoke to the engine.
type fakeEngine struct {
	mu    sync.Mutex
	paths []string
	srv   *http.Server
	host  string
}

func newFakeEngine(t *testing.T) *fakeEngine {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	e := &fakeEngine{host: "unix://" + sock}
	e.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"Version":"20.10.24","ApiVersion":"1.41","MinAPIVersion":"1.12","Os":"linux","Arch":"amd64"}`))
			return
		}
		e.mu.Lock()
		e.paths = append(e.paths, r.Method+" "+r.URL.Path)
		e.mu.Unlock()
		http.Error(w, `{"message":"fake engine"}`, http.StatusInternalServerError)
	})}
	go e.srv.Serve(l)
	t.Cleanup(func() { e.srv.Close() })
	return e
}

func (e *fakeEngine) requests() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.paths...)
}

func fakeFixture(t *testing.T, agent files) (*Builder, *config.Config, *fakeEngine) {
	t.Helper()
	e := newFakeEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := docker.New(ctx, e.host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	g := newOrigin(t, globalFiles())
	a := newOrigin(t, agent)
	cfg := &config.Config{GlobalRepo: config.Repo{URL: g.bare},
		Agents: map[string]config.Agent{"agent-1": {Repo: config.Repo{URL: a.bare}}}}
	b := &Builder{Docker: c, Home: config.Home{Dir: t.TempDir()}, AgentBinary: testkit.Build(t, "choir/agent")}
	return b, cfg, e
}

func TestInvalidRepoNeverReachesTheEngine(t *testing.T) {
	a := agentFiles()
	a["tools/acme.greet.json"] = "[]"
	b, cfg, e := fakeFixture(t, a)
	_, err := b.Build(context.Background(), cfg, "agent-1", nil)
	var ie *InvalidError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "tools/acme.greet.json") {
		t.Errorf("Build() = %v; want an *InvalidError naming tools/acme.greet.json", err)
	}
	if got := e.requests(); len(got) != 0 {
		t.Errorf("the build sent %v to the engine before validating", got)
	}
}

func TestEngineDown(t *testing.T) {
	b, cfg, e := fakeFixture(t, agentFiles())
	e.srv.Close()
	_, err := b.Build(context.Background(), cfg, "agent-1", nil)
	if err == nil || !strings.Contains(err.Error(), "docker engine at "+e.host) {
		t.Errorf("Build() with the engine down = %v; want an error naming the engine", err)
	}
}
