package docker

import (
	"context"
	"io"
	"net/http"
	"testing"
)

func TestServiceList(t *testing.T) {
	var filters string
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "GET" || r.URL.Path != "/v1.41/services" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		filters = r.URL.Query().Get("filters")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `[{"ID":"9mnp","Version":{"Index":41},"Spec":{"Name":"choir-alice-1","Labels":{"choir.managed":"true"},"TaskTemplate":{"ContainerSpec":{"Image":"r:5000/a@sha256:ab"}},"Mode":{"Replicated":{"Replicas":1}}}}]`)
	})
	list, err := c.ServiceList(context.Background(), Filters{"label": {"choir.managed=true"}})
	if err != nil || len(list) != 1 || list[0].ID != "9mnp" || list[0].Spec.Name != "choir-alice-1" || list[0].Spec.Labels["choir.managed"] != "true" {
		t.Fatalf("ServiceList = %+v, %v; want service 9mnp", list, err)
	}
	if !sameJSON(t, []byte(filters), `{"label":["choir.managed=true"]}`) {
		t.Errorf("filters = %s", filters)
	}
}

func TestImageSave(t *testing.T) {
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "GET" || r.URL.Path != "/v1.41/images/choir-agent-alice:7/get" {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"message":"No such image"}`)
			return
		}
		w.Header().Set("Content-Type", "application/x-tar")
		io.WriteString(w, "TAR")
	})
	rc, err := c.ImageSave(context.Background(), "choir-agent-alice:7")
	if err != nil {
		t.Fatalf("ImageSave = %v", err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "TAR" {
		t.Errorf("ImageSave body = %q; want the engine's tar", b)
	}
	if _, err := c.ImageSave(context.Background(), "nope:1"); !IsNotFound(err) {
		t.Errorf("ImageSave(missing) = %v; want not found", err)
	}
}
