package config

import (
	"strings"
	"testing"
)

func TestRuntimeBlock(t *testing.T) {
	example, secrets := readExample(t)
	for _, tc := range []struct {
		name  string
		block any
		node  string // workspaces.main-ws.node
		kind  string
	}{
		{"absent", nil, "", RuntimeLocal},
		{"local", map[string]any{"kind": "local"}, "", RuntimeLocal},
		{"empty", map[string]any{}, "", RuntimeLocal},
		{"swarm", map[string]any{"kind": "swarm", "registry": "127.0.0.1:5000"}, "", RuntimeSwarm},
		{"swarm with credentials", map[string]any{"kind": "swarm", "registry": "registry.lan:443", "registry_secret": "git-dev-token"}, "", RuntimeSwarm},
		{"swarm with a placed workspace", map[string]any{"kind": "swarm", "registry": "localhost:5000"}, "worker-1", RuntimeSwarm},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := mutate(t, example, func(m map[string]any) {
				if tc.block != nil {
					m["runtime"] = tc.block
				}
				if tc.node != "" {
					m["workspaces"].(map[string]any)["main-ws"].(map[string]any)["node"] = tc.node
				}
			})
			c, err := Parse(data)
			if err == nil {
				err = Validate(c, secrets)
			}
			if err != nil {
				t.Fatalf("Validate(runtime %v) = %v; want nil", tc.block, err)
			}
			if got := RuntimeKind(c.Runtime); got != tc.kind {
				t.Errorf("RuntimeKind(%+v) = %q; want %q", c.Runtime, got, tc.kind)
			}
			if got := c.Workspaces["main-ws"].Node; got != tc.node {
				t.Errorf("workspaces.main-ws.node = %q; want %q", got, tc.node)
			}
		})
	}
}

func TestRuntimeRefusals(t *testing.T) {
	example, secrets := readExample(t)
	for _, tc := range []struct {
		name     string
		block    any
		node     string
		path     string
		contains string
	}{
		{"unknown kind", map[string]any{"kind": "kubernetes"}, "", "runtime.kind", `want "local"`},
		{"swarm without registry", map[string]any{"kind": "swarm"}, "", "runtime.registry", "required with kind"},
		{"registry with a scheme", map[string]any{"kind": "swarm", "registry": "https://r.lan:5000"}, "", "runtime.registry", "want host:port"},
		{"registry without port", map[string]any{"kind": "swarm", "registry": "r.lan"}, "", "runtime.registry", "want host:port"},
		{"registry port zero", map[string]any{"kind": "swarm", "registry": "r.lan:0"}, "", "runtime.registry", "between 1 and 65535"},
		{"registry bad host", map[string]any{"kind": "swarm", "registry": "r lan:5000"}, "", "runtime.registry", "not an IP address"},
		{"unknown secret", map[string]any{"kind": "swarm", "registry": "r.lan:5000", "registry_secret": "nope"}, "", "runtime.registry_secret", "choirctl secret set nope"},
		{"registry on local", map[string]any{"kind": "local", "registry": "r.lan:5000"}, "", "runtime.registry", `set runtime.kind to "swarm"`},
		{"secret on local", map[string]any{"registry_secret": "git-dev-token"}, "", "runtime.registry_secret", `set runtime.kind to "swarm"`},
		{"node on local", nil, "worker", "workspaces.main-ws.node", `needs runtime.kind "swarm"`},
		{"node not a label value", map[string]any{"kind": "swarm", "registry": "r.lan:5000"}, "a==b", "workspaces.main-ws.node", "choir.node label"},
		{"unknown field", map[string]any{"kind": "swarm", "registry": "r.lan:5000", "nodes": 2}, "", "runtime.nodes", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := mutate(t, example, func(m map[string]any) {
				if tc.block != nil {
					m["runtime"] = tc.block
				}
				if tc.node != "" {
					m["workspaces"].(map[string]any)["main-ws"].(map[string]any)["node"] = tc.node
				}
			})
			c, err := Parse(data)
			if err == nil {
				err = Validate(c, secrets)
			}
			if err == nil {
				t.Fatalf("runtime %v, node %q accepted; want a problem at %s", tc.block, tc.node, tc.path)
			}
			if !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("error = %v; want one at %s containing %q", err, tc.path, tc.contains)
			}
		})
	}
}
