package config

import (
	"strings"
	"testing"
)

// TestRestartPolicyDefaults: an agent without "restart" is off with the
// default numbers; fields left out keep their defaults; what is written
// is kept.
func TestRestartPolicyDefaults(t *testing.T) {
	example, secrets := readExample(t)
	for _, tc := range []struct {
		name    string
		restart any // nil: the key is removed
		want    RestartPolicy
	}{
		{"absent", nil, RestartPolicy{Policy: RestartOff, MaxRestarts: 5, BackoffMS: 2000, MaxBackoffMS: 300000}},
		{"empty object", map[string]any{}, DefaultRestartPolicy()},
		{"policy only", map[string]any{"policy": "on-crash"}, RestartPolicy{Policy: RestartOnCrash, MaxRestarts: 5, BackoffMS: 2000, MaxBackoffMS: 300000}},
		{"every field", map[string]any{"policy": "on-crash", "max_restarts": 3, "backoff_ms": 0, "max_backoff_ms": 60000},
			RestartPolicy{Policy: RestartOnCrash, MaxRestarts: 3, BackoffMS: 0, MaxBackoffMS: 60000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := mutate(t, example, func(m map[string]any) {
				a := obj(m, "agents", "agent-1")
				if tc.restart == nil {
					delete(a, "restart")
				} else {
					a["restart"] = tc.restart
				}
			})
			c, err := Parse(data)
			if err != nil {
				t.Fatalf("Parse = %v", err)
			}
			if err := Validate(c, secrets); err != nil {
				t.Fatalf("Validate = %v", err)
			}
			if got := c.Agents["agent-1"].Restart; got != tc.want {
				t.Errorf("agents.agent-1.restart = %+v; want %+v", got, tc.want)
			}
			if got := c.Agents["agent-1"].Restart.OnCrash(); got != (tc.want.Policy == RestartOnCrash) {
				t.Errorf("OnCrash() = %v", got)
			}
		})
	}
}

// TestRestartPolicyRefusals: a restart policy that could not work is
// refused with its JSON path and what to write instead, whatever the
// policy (a wrong number under "off" is still wrong).
func TestRestartPolicyRefusals(t *testing.T) {
	example, secrets := readExample(t)
	const p = "agents.agent-1.restart"
	set := func(field string, v any) func(m map[string]any) {
		return func(m map[string]any) { obj(m, "agents", "agent-1", "restart")[field] = v }
	}
	for _, tc := range []struct {
		name     string
		mutate   func(m map[string]any)
		path     string
		contains string
	}{
		{"unknown policy", set("policy", "always"), p + ".policy", `want "off" (a crashed session stays ended) or "on-crash"`},
		{"policy in capitals", set("policy", "ON-CRASH"), p + ".policy", `want "off"`},
		{"empty policy", set("policy", ""), p + ".policy", `want "off"`},
		{"policy not a string", set("policy", true), p + ".policy", "want a string, got a boolean"},
		{"negative max_restarts", set("max_restarts", -1), p + ".max_restarts", "between 1 and 1000"},
		{"zero max_restarts", set("max_restarts", 0), p + ".max_restarts", `to never restart, set policy "off"`},
		{"huge max_restarts", set("max_restarts", 1<<40), p + ".max_restarts", "between 1 and 1000"},
		{"negative backoff", set("backoff_ms", -5), p + ".backoff_ms", "between 0 and 86400000 ms"},
		{"backoff of 2^53 ms", set("backoff_ms", 1<<53), p + ".backoff_ms", "between 0 and 86400000 ms"},
		{"negative max backoff", set("max_backoff_ms", -1), p + ".max_backoff_ms", "between 0 and 86400000 ms"},
		{"max backoff below backoff", func(m map[string]any) {
			r := obj(m, "agents", "agent-1", "restart")
			r["backoff_ms"], r["max_backoff_ms"] = 5000, 1000
		}, p + ".max_backoff_ms", "must be at least backoff_ms (5000)"},
		{"max backoff below the default backoff", func(m map[string]any) {
			obj(m, "agents", "agent-1")["restart"] = map[string]any{"policy": "on-crash", "max_backoff_ms": 500}
		}, p + ".max_backoff_ms", "must be at least backoff_ms (2000)"},
		{"negative number under off", func(m map[string]any) {
			obj(m, "agents", "agent-1")["restart"] = map[string]any{"policy": "off", "backoff_ms": -1}
		}, p + ".backoff_ms", "between 0 and"},
		{"fractional backoff", set("backoff_ms", 1.5), p + ".backoff_ms", "want a whole number"},
		{"backoff as a string", set("backoff_ms", "2s"), p + ".backoff_ms", "want a whole number, got a string"},
		{"misspelt field", set("max_restart", 3), p + ".max_restart", `did you mean "max_restarts"`},
		{"restart null", func(m map[string]any) { obj(m, "agents", "agent-1")["restart"] = nil }, p, "want an object, got null"},
		{"restart a string", func(m map[string]any) { obj(m, "agents", "agent-1")["restart"] = "on-crash" }, p, "want an object, got a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(mutate(t, example, tc.mutate))
			if err == nil {
				err = Validate(c, secrets)
			}
			ps, ok := err.(Problems)
			if !ok {
				t.Fatalf("Parse+Validate = %v (%T); want Problems", err, err)
			}
			for _, pr := range ps {
				if pr.Path == tc.path && strings.Contains(pr.Message, tc.contains) && pr.File == ConfigFile {
					return
				}
			}
			t.Errorf("Parse+Validate problems = %v; want one in config.json at %q containing %q", err, tc.path, tc.contains)
		})
	}
}
