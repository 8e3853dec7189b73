package lifecycle

import (
	"context"
	"slices"
	"strings"

	"choir/internal/config"
)

// mcpSecrets are the secrets the MCP server declarations baked into the
// session's image name (version.json's mcp_secrets, as the build recorded
// it), granted like bound resources' secrets (issue 24). A declaration is
// a capability reviewed like a tool (a repo commit or an approval), but it
// names secrets.json entries, so one that config.json gives to anything
// (a gateway's token, Postgres, the embedding key, another agent's
// identity, a model) is never granted through it: only secrets no resource
// uses are dedicated to MCP servers. Without image records nothing is
// granted.
func (m *Manager) mcpSecrets(ctx context.Context, r *Run, cfg *config.Config) []string {
	if m.Images == nil {
		return nil
	}
	rec, err := m.Images.ImageRecord(ctx, r.Image)
	if err != nil || rec.Version.MCPSecrets == "" {
		return nil
	}
	used := config.UsedSecrets(cfg)
	var out []string
	for _, n := range strings.Split(rec.Version.MCPSecrets, ",") {
		if !slices.Contains(used, n) {
			out = append(out, n)
		} else {
			m.logf(r, "MCP declaration names a secret config.json gives to a resource; not granted", "secret", n)
		}
	}
	return out
}
