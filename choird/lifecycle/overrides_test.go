package lifecycle

import (
	"reflect"
	"testing"

	"choir/internal/config"
	"choir/internal/rpc"
)

func TestOverrides(t *testing.T) {
	def := config.AgentDefaults{Workspace: "main", LLM: "sonnet", GitIdentity: "dev", DM: "dm1"}
	asDefault := rpc.ResourceBindings{Workspace: "main", LLM: "sonnet", GitIdentity: "dev", DM: "dm1"}
	startedOn := asDefault
	startedOn.Workspace = "scratch"
	nowOn := startedOn
	nowOn.LLM, nowOn.VoiceProfile = "fast", "calm"
	tests := []struct {
		name         string
		started, now rpc.ResourceBindings
		want         []string
	}{
		{"defaults", asDefault, asDefault, nil},
		{"start override and model/voice set", startedOn, nowOn, []string{
			"workspace=scratch (given at start; the default is main)",
			"llm=fast (model set, until the agent restarts; started with sonnet)",
			"voice_profile=calm (voice set, until the agent restarts; started with none)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := overrides(def, tt.started, tt.now); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("overrides() = %q;\nwant %q", got, tt.want)
			}
		})
	}
}
