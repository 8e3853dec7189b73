package staging

import (
	"testing"

	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/rpc"
)

// headless.verifiers and headless.moods are hot (read for every run);
// headless.max_runs and an agent's schedules need a restart of choird,
// also when the agent's change carries something else, which keeps its
// own rule.
func TestHeadlessChangesSayWhenTheyApply(t *testing.T) {
	running := []Holder{{AgentID: "a1", Bindings: rpc.ResourceBindings{Workspace: "w1", LLM: "fast", DM: "dm1"}}}
	staged := baseConfig()
	staged.Headless = &config.Headless{Verifiers: map[string]config.VerifierDef{"test": {Command: []string{"go", "test", "./..."}}}, MaxRuns: 4}
	got := ConfigChanges(baseConfig(), staged, running)
	want := map[string]string{"config.json: headless.verifiers": ctl.ClassHot, "config.json: headless.max_runs": ctl.ClassRestart}
	if len(got) != len(want) {
		t.Fatalf("ConfigChanges(verifiers, max_runs) = %+v; want %v", got, want)
	}
	for _, c := range got {
		if want[c.Where] != c.Class {
			t.Errorf("ConfigChanges: %s is %s; want %s", c.Where, c.Class, want[c.Where])
		}
	}

	staged = baseConfig()
	a := staged.Agents["a1"]
	a.Schedules = []config.Schedule{{ID: "nightly", Cron: "0 3 * * *", Query: &config.WorkQuery{}}}
	staged.Agents["a1"] = a
	got = ConfigChanges(baseConfig(), staged, running)
	if len(got) != 1 || got[0].Where != "config.json: agents.a1.schedules" || got[0].Class != ctl.ClassRestart || got[0].Blocks == "" {
		t.Fatalf("ConfigChanges(schedule added) = %+v; want one restart-required agents.a1.schedules", got)
	}
	a.Defaults.LLM = "big"
	staged.Agents["a1"] = a
	got = ConfigChanges(baseConfig(), staged, running)
	if len(got) != 2 || got[1].Where != "config.json: agents.a1" || got[1].Class != ctl.ClassNextStart {
		t.Fatalf("ConfigChanges(schedule and llm) = %+v; want the schedules' restart and the agent's next-start change", got)
	}
}
