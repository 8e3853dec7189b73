package config

import (
	"strings"
	"testing"
)

// TestOutboxMax: agents.<id>.outbox_max is kept as written, absent is 0
// (the gateway's default), and a value the outbox could not hold is refused
// at its JSON path.
func TestOutboxMax(t *testing.T) {
	example, secrets := readExample(t)
	c, err := Parse(mutate(t, example, func(m map[string]any) { obj(m, "agents", "agent-1")["outbox_max"] = 5000 }))
	if err != nil || Validate(c, secrets) != nil || c.Agents["agent-1"].OutboxMax != 5000 {
		t.Fatalf("outbox_max 5000: %v; want it kept", err)
	}
	const p = "agents.agent-1.outbox_max"
	for _, tc := range []struct {
		name     string
		value    any
		contains string
	}{
		{"negative", -1, "between 0 (the default, 1000) and 100000"},
		{"past the bound", 1 << 40, "between 0"},
		{"a string", "1000", "want a whole number, got a string"},
		{"fractional", 1.5, "want a whole number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(mutate(t, example, func(m map[string]any) { obj(m, "agents", "agent-1")["outbox_max"] = tc.value }))
			if err == nil {
				err = Validate(c, secrets)
			}
			ps, ok := err.(Problems)
			if !ok {
				t.Fatalf("Parse+Validate = %v (%T); want Problems", err, err)
			}
			for _, pr := range ps {
				if pr.Path == p && strings.Contains(pr.Message, tc.contains) {
					return
				}
			}
			t.Errorf("Parse+Validate problems = %v; want one at %q containing %q", err, p, tc.contains)
		})
	}
}
