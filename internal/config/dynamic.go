package config

// Dynamic is the hot-reloadable configuration an agent receives through
// FETCH_DYNAMIC_CONFIG (§16): the models and voices it may use, the search
// providers, and the tunables. It never holds a secret value (only names);
// the agent swaps the whole of it at once.
type Dynamic struct {
	Version       int64                   `json:"version"`
	LLM           string                  `json:"llm"`           // the model the agent uses now
	VoiceProfile  string                  `json:"voice_profile"` // the voice it uses now, if any
	Models        map[string]Model        `json:"models"`
	TTS           map[string]TTS          `json:"tts"`
	VoiceProfiles map[string]VoiceProfile `json:"voice_profiles"`
	Search        map[string]Search       `json:"search"`
	Tunables      Tunables                `json:"tunables"`
}

// DynamicFor assembles what an agent running with the given model and voice
// receives at config version v.
func (c *Config) DynamicFor(v int64, llm, voice string) Dynamic {
	return Dynamic{
		Version: v, LLM: llm, VoiceProfile: voice,
		Models: c.Models, TTS: c.TTS, VoiceProfiles: c.VoiceProfiles, Search: c.Search,
		Tunables: c.Tunables,
	}
}

// BoundSecrets names the secrets an agent with these bindings may hold
// (§14.3): its model's key, its voice's TTS key, its git identity's, Notion
// and email credentials, and the search providers' keys. Gateway tokens,
// the Postgres credentials and the embedding key stay in choird.
func (c *Config) BoundSecrets(llm, voice, gitIdentity, notion, email string) []string {
	set := map[string]bool{}
	add := func(name string) {
		if name != "" {
			set[name] = true
		}
	}
	add(c.Models[llm].Secret)
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
