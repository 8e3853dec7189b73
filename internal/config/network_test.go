package config

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// agents.<id>.network and headless.moods.<MOOD>.allow: both entry forms
// are read, and the compiled list admits what the operator wrote.
func TestNetworkAccepted(t *testing.T) {
	example, secrets := readExample(t)
	c, err := Parse(mutate(t, example, func(m map[string]any) {
		obj(m, "agents", "agent-1")["network"] = map[string]any{
			"mode": "policy",
			"allow": []any{
				"https://api.example.org/v1/",
				map[string]any{"prefix": "http://127.0.0.1:8080/hook", "methods": []any{"POST"}},
			},
			"max_bytes": 4096,
			"timeout_s": 5,
		}
		m["headless"] = map[string]any{"moods": map[string]any{"CURIOUS": map[string]any{"allow": []any{"https://docs.example.org/"}}}}
	}))
	if err == nil {
		err = Validate(c, secrets)
	}
	if err != nil {
		t.Fatalf("Parse+Validate = %v; want it accepted", err)
	}
	n := c.Agents["agent-1"].Network
	if !n.Policy() || n.FetchMaxBytes() != 4096 || n.FetchTimeoutS() != 5 {
		t.Errorf("network = %+v; want policy mode, 4096 bytes, 5 s", n)
	}
	if len(n.Allow) != 2 || n.Allow[0].Prefix != "https://api.example.org/v1/" || n.Allow[0].Methods != nil ||
		!slices.Equal(n.Allow[1].Methods, []string{"POST"}) {
		t.Errorf("allow = %+v", n.Allow)
	}
	if got := c.Headless.Moods["CURIOUS"].Allow; len(got) != 1 || got[0].Prefix != "https://docs.example.org/" {
		t.Errorf("CURIOUS allow = %+v", got)
	}
	// Written back as read: the string form stays a string.
	b, _ := json.Marshal(n)
	if want := `"allow":["https://api.example.org/v1/",{"prefix":"http://127.0.0.1:8080/hook","methods":["POST"]}]`; !strings.Contains(string(b), want) {
		t.Errorf("marshalled %s; want it to hold %s", b, want)
	}

	d, err := Parse(example)
	if err != nil {
		t.Fatal(err)
	}
	if n := d.Agents["agent-1"].Network; n.Policy() || n.FetchMaxBytes() != DefaultFetchMaxBytes || n.FetchTimeoutS() != DefaultFetchTimeoutS {
		t.Errorf("network left out = %+v; want open mode with the default limits", n)
	}
}

func TestNetworkRefused(t *testing.T) {
	example, secrets := readExample(t)
	for _, tc := range []struct {
		name     string
		network  any
		moods    any
		path     string
		contains string
	}{
		{"unknown mode", map[string]any{"mode": "closed"}, nil, "agents.agent-1.network.mode", `want "open"`},
		{"allow in open mode", map[string]any{"allow": []any{"https://a.example/"}}, nil, "agents.agent-1.network.allow", `"mode": "policy"`},
		{"entry a number", map[string]any{"mode": "policy", "allow": []any{7}}, nil, "agents.agent-1.network.allow[0]", "want a URL prefix"},
		{"entry with unknown member", map[string]any{"mode": "policy", "allow": []any{map[string]any{"prefix": "https://a.example/", "method": "GET"}}}, nil, "agents.agent-1.network.allow[0].method", "unknown field"},
		{"bad scheme", map[string]any{"mode": "policy", "allow": []any{"ftp://a.example/"}}, nil, "agents.agent-1.network.allow[0]", "want http or https"},
		{"userinfo", map[string]any{"mode": "policy", "allow": []any{"https://u:p@a.example/"}}, nil, "agents.agent-1.network.allow[0]", "userinfo"},
		{"query in prefix", map[string]any{"mode": "policy", "allow": []any{"https://a.example/x?y=1"}}, nil, "agents.agent-1.network.allow[0]", "no query"},
		{"bad method", map[string]any{"mode": "policy", "allow": []any{"https://a.example/", map[string]any{"prefix": "https://b.example/", "methods": []any{"DELETE"}}}}, nil, "agents.agent-1.network.allow[1].methods[0]", "sends only GET, HEAD, POST"},
		{"no methods", map[string]any{"mode": "policy", "allow": []any{map[string]any{"prefix": "https://b.example/", "methods": []any{}}}}, nil, "agents.agent-1.network.allow[0].methods", "names no method"},
		{"bad prefix in the object form", map[string]any{"mode": "policy", "allow": []any{map[string]any{"prefix": "https://b.example/%2e%2e/"}}}, nil, "agents.agent-1.network.allow[0].prefix", "dot segment"},
		{"max_bytes too big", map[string]any{"mode": "policy", "max_bytes": MaxFetchMaxBytes + 1}, nil, "agents.agent-1.network.max_bytes", "want 1 to"},
		{"timeout negative", map[string]any{"mode": "policy", "timeout_s": -1}, nil, "agents.agent-1.network.timeout_s", "want 1 to"},
		{"mood allow without network", nil, map[string]any{"CALM": map[string]any{"network": false, "private_data": true, "credentials": false, "allow": []any{"https://a.example/"}}}, "headless.moods.CALM.allow", "needs network true"},
		{"mood allow bad entry", nil, map[string]any{"CURIOUS": map[string]any{"allow": []any{"https://a.example:99999/"}}}, "headless.moods.CURIOUS.allow[0]", "port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(mutate(t, example, func(m map[string]any) {
				if tc.network != nil {
					obj(m, "agents", "agent-1")["network"] = tc.network
				}
				if tc.moods != nil {
					m["headless"] = map[string]any{"moods": tc.moods}
				}
			}))
			if err == nil {
				err = Validate(c, secrets)
			}
			ps, ok := err.(Problems)
			if !ok {
				t.Fatalf("Parse+Validate = %v (%T); want Problems", err, err)
			}
			for _, p := range ps {
				if p.Path == tc.path && strings.Contains(p.Message, tc.contains) {
					return
				}
			}
			t.Errorf("problems = %v; want one at %s containing %q", ps, tc.path, tc.contains)
		})
	}
}
