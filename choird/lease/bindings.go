package lease

import (
	"fmt"
	"strings"

	"choir/internal/config"
	"choir/internal/rpc"
)

// Overrides are the start-time choices that replace an agent's defaults
// (`choirctl agent start --workspace=…`, `/start key=value`). Empty fields
// keep the default.
type Overrides struct {
	Workspace, LLM, VoiceProfile, GitIdentity, Notion, Email, DM string
	// CoreLLM and SummaryLLM override defaults.core_llm and summary_llm.
	CoreLLM, SummaryLLM string
	// Fresh is not a resource: it starts a new session instead of
	// resuming the agent's last one (spec 13.2). Resolve ignores it.
	Fresh bool
}

// Resolve applies overrides to an agent's defaults, checks that every named
// resource exists, and returns the session's bindings with the exclusive
// resources they require (email only when its sharing is exclusive; a
// browser context always, named after the agent).
func Resolve(c *config.Config, agent string, o Overrides) (rpc.ResourceBindings, []Resource, error) {
	a, ok := c.Agents[agent]
	if !ok {
		return rpc.ResourceBindings{}, nil, fmt.Errorf("no agent named %q in config.json (have: %s)", agent, strings.Join(config.SortedNames(c.Agents), ", "))
	}
	pick := func(override, def string) string {
		if override != "" {
			return override
		}
		return def
	}
	d := a.Defaults
	b := rpc.ResourceBindings{
		Workspace:    pick(o.Workspace, d.Workspace),
		LLM:          pick(o.LLM, d.LLM),
		CoreLLM:      pick(o.CoreLLM, d.CoreLLM),
		SummaryLLM:   pick(o.SummaryLLM, d.SummaryLLM),
		VoiceProfile: pick(o.VoiceProfile, d.VoiceProfile),
		GitIdentity:  pick(o.GitIdentity, d.GitIdentity),
		Notion:       pick(o.Notion, d.Notion),
		Email:        pick(o.Email, d.Email),
		DM:           pick(o.DM, d.DM),
	}
	var problems []string
	check := func(flag, name string, exists bool, required bool) {
		switch {
		case name == "" && required:
			problems = append(problems, fmt.Sprintf("--%s: agent %q has no default; name one", flag, agent))
		case name != "" && !exists:
			problems = append(problems, fmt.Sprintf("--%s=%s: no such %s in config.json", flag, name, strings.ReplaceAll(flag, "-", " ")))
		}
	}
	_, ws := c.Workspaces[b.Workspace]
	check("workspace", b.Workspace, ws, true)
	_, llm := c.Models[b.LLM]
	check("llm", b.LLM, llm, true)
	_, core := c.Models[b.CoreLLM]
	check("core-llm", b.CoreLLM, core, false)
	_, summary := c.Models[b.SummaryLLM]
	check("summary-llm", b.SummaryLLM, summary, false)
	_, vp := c.VoiceProfiles[b.VoiceProfile]
	check("voice-profile", b.VoiceProfile, vp, false)
	_, gi := c.GitIdentities[b.GitIdentity]
	check("git-identity", b.GitIdentity, gi, true)
	_, no := c.NotionIntegrations[b.Notion]
	check("notion", b.Notion, no, false)
	em, emOK := c.EmailAccounts[b.Email]
	check("email", b.Email, emOK, false)
	_, dm := c.DMs[b.DM]
	check("dm", b.DM, dm, true)
	if len(problems) > 0 {
		return b, nil, fmt.Errorf("cannot start %s: %s", agent, strings.Join(problems, "; "))
	}
	rs := []Resource{{Workspace, b.Workspace}, {GitIdentity, b.GitIdentity}, {DM, b.DM}, {Browser, agent}}
	if b.Notion != "" {
		rs = append(rs, Resource{Notion, b.Notion})
	}
	if b.Email != "" && em.Sharing == config.SharingExclusive {
		rs = append(rs, Resource{Email, b.Email})
	}
	return b, canonical(rs), nil
}
