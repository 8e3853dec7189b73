package config

import (
	"strings"
	"testing"
)

// agents.<id>.model_proxy: a boolean that sends the agent's model calls
// through choird.
func TestModelProxyAccepted(t *testing.T) {
	example, secrets := readExample(t)
	for _, v := range []bool{true, false} {
		c, err := Parse(mutate(t, example, func(m map[string]any) { obj(m, "agents", "agent-1")["model_proxy"] = v }))
		if err == nil {
			err = Validate(c, secrets)
		}
		if err != nil {
			t.Fatalf("model_proxy %v: Parse+Validate = %v; want it accepted", v, err)
		}
		if got := c.Agents["agent-1"].ModelProxy; got != v {
			t.Errorf("model_proxy %v: Agents[agent-1].ModelProxy = %v", v, got)
		}
	}
	c, err := Parse(example)
	if err != nil {
		t.Fatal(err)
	}
	if c.Agents["agent-1"].ModelProxy {
		t.Error("model_proxy left out is true; want false (the agent calls its model directly)")
	}
}

func TestModelProxyRefused(t *testing.T) {
	example, secrets := readExample(t)
	for _, tc := range []struct {
		name     string
		value    any
		key      string
		contains string
	}{
		{"a string", "yes", "model_proxy", "want true or false"},
		{"a number", 1, "model_proxy", "want true or false"},
		{"null", nil, "model_proxy", "want true or false"},
		{"misspelt", true, "modelproxy", `did you mean "model_proxy"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(mutate(t, example, func(m map[string]any) { obj(m, "agents", "agent-1")[tc.key] = tc.value }))
			if err == nil {
				err = Validate(c, secrets)
			}
			ps, ok := err.(Problems)
			if !ok {
				t.Fatalf("Parse+Validate = %v (%T); want Problems", err, err)
			}
			path := "agents.agent-1." + tc.key
			for _, p := range ps {
				if p.Path == path && strings.Contains(p.Message, tc.contains) {
					return
				}
			}
			t.Errorf("Parse+Validate problems = %v; want one at %q containing %q", err, path, tc.contains)
		})
	}
}
