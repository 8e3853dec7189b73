package mcpdecl

import (
	"fmt"
	"strings"
	"unicode"
)

// MaxToolNameLen is a model API's limit on a function name (FACTS.md).
const MaxToolNameLen = 64

// ToolName is the choir tool an MCP tool becomes: mcp.<server>.<tool>,
// the MCP name in lowercase words joined by _ ("get-sum" and "getSum"
// become get_sum), so its wire form (mcp_<server>_get_sum) keeps to a model
// API's ^[a-zA-Z0-9_-]{1,64}$. A name that maps to nothing usable, or past
// 64 characters, is an error saying why; two MCP names that map to the same
// choir name are the caller's to refuse (Names does it).
func ToolName(server, mcpTool string) (string, error) {
	var b strings.Builder
	prevLower := false
	pendingSep := false
	for _, r := range mcpTool {
		switch {
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if unicode.IsUpper(r) && prevLower {
				pendingSep = true
			}
			if pendingSep && b.Len() > 0 {
				b.WriteByte('_')
			}
			pendingSep = false
			b.WriteRune(unicode.ToLower(r))
			prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
		case r == '_' || r == '-' || r == '.' || r == ' ' || r == '/':
			pendingSep, prevLower = true, false
		default:
			return "", fmt.Errorf("MCP tool %q: the character %q cannot be part of a model API's tool name", mcpTool, r)
		}
	}
	seg := b.String()
	if seg == "" {
		return "", fmt.Errorf("MCP tool %q: the name has no letters or digits", mcpTool)
	}
	if seg[0] >= '0' && seg[0] <= '9' {
		seg = "t" + seg
	}
	name := "mcp." + server + "." + seg
	if len(name) > MaxToolNameLen {
		return "", fmt.Errorf("MCP tool %q: the choir name %s is %d characters, more than a model API's %d", mcpTool, name, len(name), MaxToolNameLen)
	}
	return name, nil
}

// Names maps each MCP tool of a server to its choir name. A tool whose name
// cannot be mapped, or that collides with another after mapping, is left out
// with the reason in refused (keyed by MCP name); both collided tools are
// refused, since the model could not tell them apart.
func Names(server string, mcpTools []string) (names map[string]string, refused map[string]string) {
	names, refused = map[string]string{}, map[string]string{}
	byChoir := map[string][]string{}
	for _, t := range mcpTools {
		n, err := ToolName(server, t)
		if err != nil {
			refused[t] = err.Error()
			continue
		}
		byChoir[n] = append(byChoir[n], t)
	}
	for n, ts := range byChoir {
		if len(ts) > 1 {
			for _, t := range ts {
				refused[t] = fmt.Sprintf("MCP tools %q all become %s; the server must name them apart", ts, n)
			}
			continue
		}
		names[ts[0]] = n
	}
	return names, refused
}
