package config

import (
	"strings"
	"testing"
)

// TestLoopBreakerDefaults: without "loop_breaker" a lane may repeat a call
// three times and go six steps without a new result; a field left out
// keeps its default.
func TestLoopBreakerDefaults(t *testing.T) {
	example, secrets := readExample(t)
	for _, tc := range []struct {
		name string
		lb   any // nil: the key is removed
		want LoopBreaker
	}{
		{"absent", nil, LoopBreaker{Repeats: 3, StaleSteps: 6}},
		{"empty object", map[string]any{}, LoopBreaker{Repeats: 3, StaleSteps: 6}},
		{"repeats only", map[string]any{"repeats": 5}, LoopBreaker{Repeats: 5, StaleSteps: 6}},
		{"both", map[string]any{"repeats": 2, "stale_steps": 40}, LoopBreaker{Repeats: 2, StaleSteps: 40}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(mutate(t, example, func(m map[string]any) {
				if tc.lb == nil {
					delete(m, "loop_breaker")
				} else {
					m["loop_breaker"] = tc.lb
				}
			}))
			if err != nil {
				t.Fatalf("Parse = %v", err)
			}
			if err := Validate(c, secrets); err != nil {
				t.Fatalf("Validate = %v", err)
			}
			if c.Tunables.LoopBreaker != tc.want {
				t.Errorf("loop_breaker = %+v; want %+v", c.Tunables.LoopBreaker, tc.want)
			}
		})
	}
}

// TestLoopBreakerRefusals: limits that would stop every lane at once, or
// never, are refused at their path with the range to write.
func TestLoopBreakerRefusals(t *testing.T) {
	example, secrets := readExample(t)
	set := func(v any) func(m map[string]any) { return func(m map[string]any) { m["loop_breaker"] = v } }
	for _, tc := range []struct {
		name     string
		mutate   func(m map[string]any)
		path     string
		contains string
	}{
		{"repeats 1", set(map[string]any{"repeats": 1}), "loop_breaker.repeats", "want 2 to 100"},
		{"repeats 0", set(map[string]any{"repeats": 0}), "loop_breaker.repeats", "want 2 to 100"},
		{"repeats negative", set(map[string]any{"repeats": -3}), "loop_breaker.repeats", "want 2 to 100"},
		{"repeats huge", set(map[string]any{"repeats": 1 << 40}), "loop_breaker.repeats", "want 2 to 100"},
		{"stale_steps 1", set(map[string]any{"stale_steps": 1}), "loop_breaker.stale_steps", "want 2 to 1000"},
		{"stale_steps huge", set(map[string]any{"stale_steps": 1001}), "loop_breaker.stale_steps", "want 2 to 1000"},
		{"repeats fractional", set(map[string]any{"repeats": 2.5}), "loop_breaker.repeats", "want a whole number"},
		{"repeats a string", set(map[string]any{"repeats": "3"}), "loop_breaker.repeats", "want a whole number, got a string"},
		{"misspelt field", set(map[string]any{"repeat": 3}), "loop_breaker.repeat", `did you mean "repeats"`},
		{"not an object", set(true), "loop_breaker", "want an object, got a boolean"},
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
