package config

// Dynamic is the hot-reloadable configuration an agent receives through
// FETCH_DYNAMIC_CONFIG (§16): the models and voices it may use, the search
// providers, and the tunables. It never holds a secret value (only names);
// the agent swaps the whole of it at once.
type Dynamic struct {
	Version int64  `json:"version"`
	LLM     string `json:"llm"` // the model the agent uses now
	// CoreLLM is the core jobs' model (agents.<id>.defaults.core_llm);
	// empty means LLM.
	CoreLLM string `json:"core_llm,omitempty"`
	// SummaryLLM is the session summary's and compaction's model
	// (agents.<id>.defaults.summary_llm); empty means LLM.
	SummaryLLM    string                  `json:"summary_llm,omitempty"`
	VoiceProfile  string                  `json:"voice_profile"` // the voice it uses now, if any
	Models        map[string]Model        `json:"models"`
	TTS           map[string]TTS          `json:"tts"`
	VoiceProfiles map[string]VoiceProfile `json:"voice_profiles"`
	Search        map[string]Search       `json:"search"`
	Tunables      Tunables                `json:"tunables"`
	// Currency is spend.currency, the unit of the models' prices.
	Currency string `json:"currency,omitempty"`
	// The session's own git identity, Notion integration and email account
	// (their settings and the names of their secrets, never a value); nil
	// when none is bound. The agent resolves a tool's secret_resources
	// through them; other agents' entries are not sent.
	GitIdentity *GitIdentity  `json:"git_identity,omitempty"`
	Notion      *Notion       `json:"notion,omitempty"`
	Email       *EmailAccount `json:"email,omitempty"`
}

// DynamicFor assembles what an agent running with the given model (and
// core and summary models) and voice, and bound to the given git identity, Notion
// integration and email account (any may be ""), receives at config
// version v.
func (c *Config) DynamicFor(v int64, llm, coreLLM, summaryLLM, voice, gitIdentity, notion, email string) Dynamic {
	d := Dynamic{
		Version: v, LLM: llm, CoreLLM: coreLLM, SummaryLLM: summaryLLM, VoiceProfile: voice,
		Models: c.Models, TTS: c.TTS, VoiceProfiles: c.VoiceProfiles, Search: c.Search,
		Tunables: c.Tunables, Currency: c.Spend.CurrencyOrDefault(),
	}
	if g, ok := c.GitIdentities[gitIdentity]; ok {
		d.GitIdentity = &g
	}
	if n, ok := c.NotionIntegrations[notion]; ok {
		d.Notion = &n
	}
	if e, ok := c.EmailAccounts[email]; ok {
		d.Email = &e
	}
	return d
}

// BoundSecrets names the secrets an agent with these bindings may hold
// (§14.3): its models' keys (the edge's, the core jobs' and the summary's,
// with their fallbacks' and their request templates' header secrets), its voice's
// TTS key, its git identity's, Notion and email credentials, and the
// search providers' keys. Gateway tokens, the Postgres credentials and the
// embedding key stay in choird.
func (c *Config) BoundSecrets(llm, coreLLM, summaryLLM, voice, gitIdentity, notion, email string) []string {
	set := map[string]bool{}
	add := func(name string) {
		if name != "" {
			set[name] = true
		}
	}
	for _, name := range []string{llm, coreLLM, summaryLLM} {
		m, ok := c.Models[name]
		if !ok {
			continue
		}
		for _, f := range append([]string{name}, m.Fallback...) {
			for _, s := range c.Models[f].modelSecrets() {
				add(s)
			}
		}
	}
	if vp, ok := c.VoiceProfiles[voice]; ok {
		add(c.TTS[vp.TTS].Secret)
	}
	add(c.GitIdentities[gitIdentity].Secret)
	add(c.NotionIntegrations[notion].Secret)
	add(c.EmailAccounts[email].Secret)
	for _, s := range c.Search {
		add(s.Secret)
	}
	return sortedKeys(set)
}
