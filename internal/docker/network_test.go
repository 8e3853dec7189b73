package docker

import (
	"context"
	"net/http"
	"testing"
)

func TestNetworkInspect(t *testing.T) {
	var path string
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.Path
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"Name":"bridge","Id":"f2de39df","Driver":"bridge","IPAM":{"Driver":"default","Config":[{"Subnet":"172.17.0.0/16","Gateway":"172.17.0.1"}]},"Options":{"com.docker.network.bridge.name":"docker0"}}`))
	})
	n, err := c.NetworkInspect(context.Background(), "bridge")
	if err != nil {
		t.Fatalf("NetworkInspect = %v", err)
	}
	if path != "/v1.41/networks/bridge" {
		t.Errorf("NetworkInspect asked %s; want /v1.41/networks/bridge", path)
	}
	if n.Name != "bridge" || n.ID != "f2de39df" || len(n.IPAM.Config) != 1 || n.IPAM.Config[0].Gateway != "172.17.0.1" || n.IPAM.Config[0].Subnet != "172.17.0.0/16" {
		t.Errorf("NetworkInspect = %+v", n)
	}
	for _, bad := range []string{"", "a/../b", "x?y"} {
		if _, err := c.NetworkInspect(context.Background(), bad); err == nil {
			t.Errorf("NetworkInspect(%q) = nil error; want a refusal", bad)
		}
	}
}
