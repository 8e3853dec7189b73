package docker

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// fakeEngine serves handler on a unix socket in a short temporary directory
// and answers GET /version with apiVersion (unless handler does). It returns
// the DOCKER_HOST to reach it.
func fakeEngine(t *testing.T, apiVersion string, handler http.HandlerFunc) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "d.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"Version":"99.0.0-fake","ApiVersion":"` + apiVersion + `","MinAPIVersion":"1.12","Os":"linux"}`))
			return
		}
		handler(w, r)
	}))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return "unix://" + sock
}

// fakeClient connects a client to a fake engine speaking API 1.41.
func fakeClient(t *testing.T, handler http.HandlerFunc) *Client {
	t.Helper()
	c, err := New(context.Background(), fakeEngine(t, "1.41", handler))
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
