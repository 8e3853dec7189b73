package gateway

import (
	"strings"
	"testing"

	"choir/internal/ctl"
	"choir/internal/rpc"
)

// /status shows an MCP server's tool changes withheld since the build, with
// the command that accepts them.
func TestStatusShowsMCPChangesWithheld(t *testing.T) {
	st := ctl.AgentStatus{AgentID: "agent-1", Lanes: map[string]rpc.StatusReq{rpc.LaneEdge: {Lane: rpc.LaneEdge, State: "idle",
		MCPServers: []rpc.MCPServerStatus{{Server: "rugpull", State: "up", Offered: []string{"stable"}, Withheld: []string{"+added", "~shifty"}}, {Server: "fine", State: "up"}}}}}
	out := formatStatus(st)
	if !strings.Contains(out, "MCP tool changes withheld: rugpull +added ~shifty (accept: choirctl agent build agent-1)") || strings.Contains(out, "fine") {
		t.Fatalf("/status = %q; want rugpull's withheld changes and the command, nothing for fine", out)
	}
}

// /status names every role's model, not only the edge's.
func TestStatusShowsEveryModelRole(t *testing.T) {
	st := ctl.AgentStatus{AgentID: "agent-1", Bindings: &rpc.ResourceBindings{Workspace: "ws", LLM: "fast", CoreLLM: "flagship", SummaryLLM: "cheap", DM: "owner"}}
	out := formatStatus(st)
	if !strings.Contains(out, "bindings: workspace=ws llm=fast core_llm=flagship summary_llm=cheap dm=owner") {
		t.Fatalf("/status = %q; want the edge, core and summary models in its bindings line", out)
	}
}
