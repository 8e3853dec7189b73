package docker

import (
	"context"
	"io"
	"net/http"
	"testing"
)

func TestSwarmInspect(t *testing.T) {
	manager := true
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1.41/swarm":
			if !manager {
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, `{"message":"This node is not a swarm manager. Worker nodes can't be used to view or modify cluster state. Please run this command on a manager node or promote the current node to a manager."}`)
				return
			}
			io.WriteString(w, `{"ID":"i6b3","Version":{"Index":10},"CreatedAt":"2026-11-29T04:24:35.429935028Z","UpdatedAt":"2026-11-29T04:24:35.536758335Z",
				"Spec":{"Name":"default","Labels":{}},"TLSInfo":{},"RootRotationInProgress":false,"DefaultAddrPool":["10.216.0.0/16"],"SubnetSize":24,"DataPathPort":4789,
				"JoinTokens":{"Worker":"SWMTKN-1-w","Manager":"SWMTKN-1-m"}}`)
		case "/v1.41/info":
			io.WriteString(w, `{"ServerVersion":"20.10.24+dfsg1","Swarm":{"NodeID":"z7q0","NodeAddr":"127.0.0.1","LocalNodeState":"active","ControlAvailable":true,"Error":"",
				"RemoteManagers":[{"NodeID":"z7q0","Addr":"127.0.0.1:2377"}],"Nodes":2,"Managers":1}}`)
		}
	})
	ctx := context.Background()
	s, err := c.SwarmInspect(ctx)
	if err != nil {
		t.Fatalf("SwarmInspect = %v", err)
	}
	if s.ID != "i6b3" || s.Version.Index != 10 || s.JoinTokens.Worker != "SWMTKN-1-w" || s.JoinTokens.Manager != "SWMTKN-1-m" ||
		len(s.DefaultAddrPool) != 1 || s.SubnetSize != 24 || s.DataPathPort != 4789 || s.CreatedAt.IsZero() {
		t.Errorf("SwarmInspect = %+v; want every field of the answer", s)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatalf("Info = %v", err)
	}
	want := SwarmInfo{NodeID: "z7q0", NodeAddr: "127.0.0.1", LocalNodeState: "active", ControlAvailable: true}
	if info.Swarm != want {
		t.Errorf("Info().Swarm = %+v; want %+v", info.Swarm, want)
	}
	manager = false
	if _, err := c.SwarmInspect(ctx); !IsUnavailable(err) {
		t.Errorf("SwarmInspect on a worker = %v; want unavailable (503)", err)
	}
}
