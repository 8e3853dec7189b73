package config

import (
	"strings"
	"testing"
)

// withSchedules sets agent-1's schedules.
func withSchedules(scheds ...map[string]any) func(m map[string]any) {
	return func(m map[string]any) {
		list := make([]any, len(scheds))
		for i, s := range scheds {
			list[i] = s
		}
		obj(m, "agents", "agent-1")["schedules"] = list
	}
}

// withHeadless sets headless.<key>.
func withHeadless(key string, v any) func(m map[string]any) {
	return func(m map[string]any) {
		m["headless"] = map[string]any{key: v}
	}
}

// withMood sets headless.moods.<name>.
func withMood(name string, o map[string]any) func(m map[string]any) {
	return func(m map[string]any) {
		m["headless"] = map[string]any{"moods": map[string]any{name: o}}
	}
}

func TestHeadlessAccepted(t *testing.T) {
	example, secrets := readExample(t)
	for _, tc := range []struct {
		name   string
		mutate func(m map[string]any)
	}{
		{"nightly on a work item", withSchedules(map[string]any{"id": "nightly", "cron": "0 3 * * *", "work_item": "w-0123456789ab", "mood": "CALM"})},
		{"query in a time zone", withSchedules(map[string]any{"id": "weekday", "cron": "30 8 * * mon-fri", "tz": "Europe/Paris", "query": map[string]any{"risk": []any{"low", "medium"}}})},
		{"empty query, macro, default mood", withSchedules(map[string]any{"id": "h", "cron": "@hourly", "query": map[string]any{}})},
		{"event triggers", withSchedules(
			map[string]any{"id": "on-ready", "on": "work_item_ready"},
			map[string]any{"id": "on-regress", "on": "verifier_regressed", "mood": "SKEPTICAL"},
			map[string]any{"id": "on-fail", "on": "run_failed", "query": map[string]any{"parent": "w-00000000000a"}})},
		{"budgets only", withMood("CALM", map[string]any{"budgets": map[string]any{"tokens": 1000, "tool_calls": 0, "wall_time_s": 60}})},
		{"whole zone, two of three", withMood("CURIOUS", map[string]any{"network": true, "private_data": false, "credentials": true})},
		{"tools replaced", withMood("PARANOID", map[string]any{"tools": []any{"choir.fs.read", "choir.web.*"}, "verifiers": []any{"gosec", "go-vet"}})},
		{"deferential", withMood("DEFERENTIAL", map[string]any{"tools": []any{}})},
		{"verifiers", withHeadless("verifiers", map[string]any{"go-test": map[string]any{"command": []any{"go", "test", "./..."}, "timeout_s": 900}, "lint": map[string]any{"command": []any{"sh", "-c", "test -z \"$(gofmt -l .)\""}}})},
		{"max runs", withHeadless("max_runs", 4)},
		{"max splits", withHeadless("max_splits", 5)},
		{"context tokens", withHeadless("context_tokens", 20000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(mutate(t, example, tc.mutate))
			if err == nil {
				err = Validate(c, secrets)
			}
			if err != nil {
				t.Fatalf("Parse+Validate = %v; want it accepted", err)
			}
		})
	}
}

func TestHeadlessRefused(t *testing.T) {
	example, secrets := readExample(t)
	s0 := "agents.agent-1.schedules[0]"
	for _, tc := range []struct {
		name     string
		mutate   func(m map[string]any)
		path     string
		contains string
	}{
		// Schedules.
		{"bad cron field", withSchedules(map[string]any{"id": "n", "cron": "0 25 * * *", "query": map[string]any{}}), s0 + ".cron", "hour at column 3: value 25 out of range 0-23"},
		{"cron four fields", withSchedules(map[string]any{"id": "n", "cron": "0 3 * *", "query": map[string]any{}}), s0 + ".cron", "has 4 fields"},
		{"cron never fires", withSchedules(map[string]any{"id": "n", "cron": "0 0 30 2 *", "query": map[string]any{}}), s0 + ".cron", "never fire"},
		{"cron reboot", withSchedules(map[string]any{"id": "n", "cron": "@reboot", "query": map[string]any{}}), s0 + ".cron", "@reboot is not a schedule"},
		{"neither cron nor on", withSchedules(map[string]any{"id": "n", "query": map[string]any{}}), s0, "set cron"},
		{"cron and on", withSchedules(map[string]any{"id": "n", "cron": "@daily", "on": "run_failed", "query": map[string]any{}}), s0 + ".on", "not both"},
		{"cron without target", withSchedules(map[string]any{"id": "n", "cron": "@daily"}), s0, "set work_item"},
		{"work item and query", withSchedules(map[string]any{"id": "n", "cron": "@daily", "work_item": "w-0123456789ab", "query": map[string]any{}}), s0 + ".query", "not both"},
		{"work item id", withSchedules(map[string]any{"id": "n", "cron": "@daily", "work_item": "w-XYZ"}), s0 + ".work_item", "w- and 12 lowercase hex"},
		{"unknown event", withSchedules(map[string]any{"id": "n", "on": "push"}), s0 + ".on", "unknown event; want one of work_item_ready"},
		{"tz without cron", withSchedules(map[string]any{"id": "n", "on": "run_failed", "tz": "UTC"}), s0 + ".tz", "only with cron"},
		{"unknown tz", withSchedules(map[string]any{"id": "n", "cron": "@daily", "tz": "Mars/Olympus", "query": map[string]any{}}), s0 + ".tz", "unknown time zone"},
		{"tz path escape", withSchedules(map[string]any{"id": "n", "cron": "@daily", "tz": "../../etc/passwd", "query": map[string]any{}}), s0 + ".tz", "unknown time zone"},
		{"risk tier", withSchedules(map[string]any{"id": "n", "cron": "@daily", "query": map[string]any{"risk": []any{"low", "extreme"}}}), s0 + ".query.risk[1]", "low, medium or high"},
		{"query parent", withSchedules(map[string]any{"id": "n", "cron": "@daily", "query": map[string]any{"parent": "x"}}), s0 + ".query.parent", "work item id"},
		{"schedule mood", withSchedules(map[string]any{"id": "n", "on": "run_failed", "mood": "calm"}), s0 + ".mood", "unknown mood"},
		{"schedule id", withSchedules(map[string]any{"id": "Nightly Job", "on": "run_failed"}), s0 + ".id", "schedule id matching"},
		{"duplicate id", withSchedules(map[string]any{"id": "n", "on": "run_failed"}, map[string]any{"id": "n", "on": "run_failed"}), "agents.agent-1.schedules[1].id", "already used by schedules[0]"},
		{"schedule unknown field", withSchedules(map[string]any{"id": "n", "on": "run_failed", "every": "5m"}), s0 + ".every", "unknown field"},
		{"schedules not a list", func(m map[string]any) { obj(m, "agents", "agent-1")["schedules"] = map[string]any{} }, "agents.agent-1.schedules", "want an array"},
		// Mood overrides, hostile ones first: each tries to put private
		// data, network and credentials in one run.
		{"all three", withMood("CALM", map[string]any{"network": true, "private_data": true, "credentials": true}), "headless.moods.CALM.network", "zone invariant"},
		{"network alone on CALM", withMood("CALM", map[string]any{"network": true}), "headless.moods.CALM", "set network, private_data and credentials together"},
		{"credentials alone on CURIOUS", withMood("CURIOUS", map[string]any{"credentials": true}), "headless.moods.CURIOUS", "together or none"},
		{"private data and credentials", withMood("CURIOUS", map[string]any{"private_data": true, "credentials": true}), "headless.moods.CURIOUS", "together or none"},
		{"null zone field", withMood("CALM", map[string]any{"network": nil, "private_data": true, "credentials": true}), "headless.moods.CALM", "together or none"},
		{"writable without private data", withMood("CURIOUS", map[string]any{"network": true, "private_data": false, "credentials": false, "workspace_writable": true}), "headless.moods.CURIOUS.workspace_writable", "writable workspace is private data"},
		{"unknown mood", withMood("BOLD", map[string]any{}), "headless.moods.BOLD", "unknown mood"},
		{"lowercase mood", withMood("calm", map[string]any{}), "headless.moods.calm", "unknown mood"},
		{"tool pattern", withMood("CALM", map[string]any{"tools": []any{"choir.fs.*", "choir.*.read"}}), "headless.moods.CALM.tools[1]", "prefix pattern"},
		{"tool pattern with space", withMood("CALM", map[string]any{"tools": []any{"choir.exec; rm -rf /"}}), "headless.moods.CALM.tools[0]", "want a tool name"},
		{"verifier name", withMood("CALM", map[string]any{"verifiers": []any{"../x"}}), "headless.moods.CALM.verifiers[0]", "verifier name"},
		{"tokens zero", withMood("CALM", map[string]any{"budgets": map[string]any{"tokens": 0}}), "headless.moods.CALM.budgets.tokens", "1 to 100000000"},
		{"tool calls negative", withMood("CALM", map[string]any{"budgets": map[string]any{"tool_calls": -1}}), "headless.moods.CALM.budgets.tool_calls", "0 to 100000"},
		{"wall time a week", withMood("CALM", map[string]any{"budgets": map[string]any{"wall_time_s": 604800}}), "headless.moods.CALM.budgets.wall_time_s", "60 to 86400"},
		{"override unknown field", withMood("CALM", map[string]any{"netwrok": true}), "headless.moods.CALM.netwrok", `did you mean "network"`},
		// Verifiers and limits.
		{"verifier empty command", withHeadless("verifiers", map[string]any{"t": map[string]any{"command": []any{}}}), "headless.verifiers.t.command", "want the command as a list"},
		{"verifier command a string", withHeadless("verifiers", map[string]any{"t": map[string]any{"command": "go test"}}), "headless.verifiers.t.command", "want an array"},
		{"verifier NUL", withHeadless("verifiers", map[string]any{"t": map[string]any{"command": []any{"go", "te\u0000st"}}}), "headless.verifiers.t.command[1]", "NUL"},
		{"verifier name", withHeadless("verifiers", map[string]any{"Go Test": map[string]any{"command": []any{"go"}}}), "headless.verifiers.Go Test", "verifier name"},
		{"verifier timeout", withHeadless("verifiers", map[string]any{"t": map[string]any{"command": []any{"go"}, "timeout_s": 86400}}), "headless.verifiers.t.timeout_s", "1 to 7200"},
		{"verifier unknown field", withHeadless("verifiers", map[string]any{"t": map[string]any{"cmd": []any{"go"}}}), "headless.verifiers.t.cmd", "unknown field"},
		{"max runs", withHeadless("max_runs", 1000), "headless.max_runs", "1 to 64"},
		{"max splits negative", withHeadless("max_splits", -1), "headless.max_splits", "1 to 16"},
		{"max splits", withHeadless("max_splits", 100), "headless.max_splits", "1 to 16"},
		{"context tokens too few", withHeadless("context_tokens", 10), "headless.context_tokens", "1000 to 1000000"},
		{"context tokens too many", withHeadless("context_tokens", 2000000), "headless.context_tokens", "1000 to 1000000"},
		{"network a string", withMood("CALM", map[string]any{"network": "off", "private_data": true, "credentials": false}), "headless.moods.CALM.network", "want true or false"},
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
			for _, p := range ps {
				if p.Path == tc.path && strings.Contains(p.Message, tc.contains) {
					return
				}
			}
			t.Errorf("Parse+Validate problems = %v; want one at %q containing %q", err, tc.path, tc.contains)
		})
	}
}

func TestScheduleDefaults(t *testing.T) {
	s := Schedule{ID: "n", Cron: "@daily"}
	if got := s.MoodOrDefault(); got != "CALM" {
		t.Errorf("MoodOrDefault() = %q; want CALM", got)
	}
	if loc, err := s.Location(); err != nil || loc.String() != "UTC" {
		t.Errorf("Location() = %v, %v; want UTC", loc, err)
	}
}
