package lifecycle

import (
	"slices"
	"testing"

	"choir/internal/config"
)

// TestConfigSecretsCoverEveryResource: a secret any config.json resource
// uses (a gateway's token, Postgres, a model's key) is never granted to an
// MCP declaration that names it.
func TestConfigSecretsCoverEveryResource(t *testing.T) {
	cfg := &config.Config{
		Models:   map[string]config.Model{"m": {Secret: "llm-key"}},
		Gateways: map[string]config.Gateway{"tg": {Secret: "bot-token"}},
		Postgres: config.Postgres{Secret: "pg"},
	}
	got := config.UsedSecrets(cfg)
	for _, want := range []string{"llm-key", "bot-token", "pg"} {
		if !slices.Contains(got, want) {
			t.Errorf("UsedSecrets = %v; lacks %s", got, want)
		}
	}
	if slices.Contains(got, "mcp-only") {
		t.Errorf("UsedSecrets = %v; names a secret config.json does not use", got)
	}
}
