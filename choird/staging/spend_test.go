package staging

import (
	"testing"

	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/rpc"
)

// A change of an agent's spend caps alone is hot (the ledger reads the
// running caps at every call); with anything else of the agent it is the
// agent's change, next start.
func TestAgentSpendIsHot(t *testing.T) {
	running := []Holder{{AgentID: "a1", Bindings: rpc.ResourceBindings{Workspace: "w1", LLM: "fast", DM: "dm1"}}}
	five := 5.0
	staged := baseConfig()
	a := staged.Agents["a1"]
	a.Spend = &config.Spend{PerDay: &five}
	staged.Agents["a1"] = a
	got := ConfigChanges(baseConfig(), staged, running)
	if len(got) != 1 || got[0].Where != "config.json: agents.a1.spend" || got[0].Op != "+" || got[0].Class != ctl.ClassHot || got[0].Blocks != "" {
		t.Fatalf("ConfigChanges(spend added) = %+v; want one hot + agents.a1.spend", got)
	}
	a.Defaults.LLM = "big"
	staged.Agents["a1"] = a
	got = ConfigChanges(baseConfig(), staged, running)
	if len(got) != 1 || got[0].Where != "config.json: agents.a1" || got[0].Class != ctl.ClassNextStart {
		t.Fatalf("ConfigChanges(spend and llm) = %+v; want the agent's next-start change", got)
	}
}
