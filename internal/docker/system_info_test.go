package docker

import (
	"context"
	"errors"
	"net/http"
	"testing"
)

func TestInfo(t *testing.T) {
	var path string
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.Path
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ServerVersion":"20.10.24+dfsg1","Driver":"overlay2","DockerRootDir":"/var/lib/docker","OperatingSystem":"Debian GNU/Linux 12","Containers":3,"Images":7,"Swarm":{"NodeID":""}}`))
	})
	info, err := c.Info(context.Background())
	if err != nil {
		t.Fatalf("Info = %v", err)
	}
	if path != "/v1.41/info" {
		t.Errorf("Info asked %s; want /v1.41/info", path)
	}
	want := Info{ServerVersion: "20.10.24+dfsg1", Driver: "overlay2", DockerRootDir: "/var/lib/docker", OperatingSystem: "Debian GNU/Linux 12", Containers: 3, Images: 7}
	if info != want {
		t.Errorf("Info = %+v; want %+v", info, want)
	}
}

func TestInfoEngineError(t *testing.T) {
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`{"message":"daemon is shutting down"}`))
	})
	_, err := c.Info(context.Background())
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 500 || ae.Path != "/info" {
		t.Fatalf("Info = %v; want an *APIError with status 500", err)
	}
}
