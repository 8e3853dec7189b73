package docker

import (
	"context"
	"io"
	"net/http"
	"testing"
)

// A node as Engine 20.10 describes it (trimmed).
const workerNode = `{"ID":"wyhk","Version":{"Index":16},"CreatedAt":"2026-11-29T04:24:35.59597811Z","UpdatedAt":"2026-11-29T04:24:35.810324127Z",
	"Spec":{"Labels":{"choir.node":"worker"},"Role":"worker","Availability":"active"},
	"Description":{"Hostname":"vm","Platform":{"Architecture":"x86_64","OS":"linux"},"Resources":{"NanoCPUs":2000000000,"MemoryBytes":25276510208},
	"Engine":{"EngineVersion":"20.10.24+dfsg1","Plugins":[{"Type":"Log","Name":"json-file"}]}},
	"Status":{"State":"ready","Addr":"127.0.0.1"}}`

func TestNodeListAndInspect(t *testing.T) {
	var filters string
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1.41/nodes":
			filters = r.URL.Query().Get("filters")
			io.WriteString(w, "["+workerNode+"]")
		case "/v1.41/nodes/wyhk":
			io.WriteString(w, workerNode)
		default:
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"message":"node nope not found"}`)
		}
	})
	ctx := context.Background()
	nodes, err := c.NodeList(ctx, Filters{"node.label": {"choir.node=worker"}})
	if err != nil || len(nodes) != 1 {
		t.Fatalf("NodeList = %+v, %v; want one node", nodes, err)
	}
	if !sameJSON(t, []byte(filters), `{"node.label":["choir.node=worker"]}`) {
		t.Errorf("filters = %s", filters)
	}
	n, err := c.NodeInspect(ctx, "wyhk")
	if err != nil {
		t.Fatalf("NodeInspect = %v", err)
	}
	if n.ID != "wyhk" || n.Version.Index != 16 || n.Spec.Labels["choir.node"] != "worker" || n.Spec.Role != "worker" ||
		n.Spec.Availability != "active" || n.Status.State != "ready" || n.Description.Hostname != "vm" ||
		n.Description.Resources.NanoCPUs != 2e9 || n.Description.Engine.EngineVersion != "20.10.24+dfsg1" || n.ManagerStatus != nil {
		t.Errorf("NodeInspect = %+v; want every field of the answer", n)
	}
	if _, err := c.NodeInspect(ctx, "nope"); !IsNotFound(err) {
		t.Errorf("NodeInspect(nope) = %v; want not found", err)
	}
}

func TestNodeUpdateSendsVersionAndWholeSpec(t *testing.T) {
	var method, path, version string
	var body []byte
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		method, path, version = r.Method, r.URL.Path, r.URL.Query().Get("version")
		body, _ = io.ReadAll(r.Body)
	})
	err := c.NodeUpdate(context.Background(), "wyhk", 16, NodeSpec{Labels: map[string]string{"choir.node": "worker", "zone": "a"}, Role: "worker", Availability: "active"})
	if err != nil {
		t.Fatalf("NodeUpdate = %v", err)
	}
	if method != "POST" || path != "/v1.41/nodes/wyhk/update" || version != "16" {
		t.Errorf("request = %s %s?version=%s; want POST /v1.41/nodes/wyhk/update?version=16", method, path, version)
	}
	if !sameJSON(t, body, `{"Labels":{"choir.node":"worker","zone":"a"},"Role":"worker","Availability":"active"}`) {
		t.Errorf("body = %s; want the whole spec", body)
	}
}
