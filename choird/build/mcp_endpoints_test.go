package build

import (
	"testing"

	"choir/internal/mcpdecl"
)

// The image records the host:port of its MCP servers over HTTP (choird's
// tunnel carries an offline agent's connections to them), not of stdio
// ones.
func TestMCPEndpoints(t *testing.T) {
	tree := &Tree{MCP: []*mcpdecl.Decl{
		{Transport: mcpdecl.HTTP, URL: "https://MCP.example.com/mcp"},
		{Transport: mcpdecl.HTTP, URL: "http://10.0.0.5:8931/mcp"},
		{Transport: mcpdecl.HTTP, URL: "https://mcp.example.com/other"},
		{Transport: mcpdecl.Stdio, Command: "/bin/server"},
	}}
	if got, want := mcpEndpoints(tree), "10.0.0.5:8931,mcp.example.com:443"; got != want {
		t.Errorf("mcpEndpoints = %q; want %q", got, want)
	}
	if got := mcpEndpoints(&Tree{}); got != "" {
		t.Errorf("mcpEndpoints(no servers) = %q", got)
	}
}
