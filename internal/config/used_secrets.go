package config

import "encoding/json"

// UsedSecrets lists every secret name c gives to a resource: the value of
// any member called "secret" anywhere in it (gateway tokens, Postgres,
// models, search, identities...). An MCP declaration may name only secrets
// outside this list (choird/lifecycle/mcp_secrets.go at run time,
// choird/build/mcp_secrets.go at the build's pinning).
func UsedSecrets(c *Config) []string {
	raw, err := json.Marshal(c)
	if err != nil {
		return nil
	}
	var tree any
	json.Unmarshal(raw, &tree)
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && k == "secret" && s != "" {
					out = append(out, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(tree)
	return out
}
