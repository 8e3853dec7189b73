package lifecycle

import (
	"fmt"

	"choir/internal/config"
	"choir/internal/rpc"
)

// overrides says which of a session's bindings are not its agent's
// defaults, and why: an override given at start (agent start --llm ...), or
// a `model set` / `voice set` since, which lasts until the agent restarts
// and which a config apply does not undo (§17.1).
func overrides(def config.AgentDefaults, started, now rpc.ResourceBindings) []string {
	fields := []struct {
		name              string
		def, started, now string
	}{
		{"workspace", def.Workspace, started.Workspace, now.Workspace},
		{"llm", def.LLM, started.LLM, now.LLM},
		{"core_llm", def.CoreLLM, started.CoreLLM, now.CoreLLM},
		{"summary_llm", def.SummaryLLM, started.SummaryLLM, now.SummaryLLM},
		{"voice_profile", def.VoiceProfile, started.VoiceProfile, now.VoiceProfile},
		{"git_identity", def.GitIdentity, started.GitIdentity, now.GitIdentity},
		{"notion", def.Notion, started.Notion, now.Notion},
		{"email", def.Email, started.Email, now.Email},
		{"dm", def.DM, started.DM, now.DM},
	}
	var out []string
	for _, f := range fields {
		switch {
		case f.now != f.started:
			cmd := "model set"
			if f.name == "voice_profile" {
				cmd = "voice set"
			}
			out = append(out, fmt.Sprintf("%s=%s (%s, until the agent restarts; started with %s)", f.name, f.now, cmd, orDefault(f.started)))
		case f.started != f.def:
			out = append(out, fmt.Sprintf("%s=%s (given at start; the default is %s)", f.name, orDefault(f.started), orDefault(f.def)))
		}
	}
	return out
}

func orDefault(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
