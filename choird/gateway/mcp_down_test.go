package gateway_test

import (
	"strings"
	"testing"

	"choir/internal/rpc"
)

// /status in a bound DM names the MCP servers that are down, with why, and
// the MCP calls in progress; with every server up it says nothing of them.
func TestStatusShowsMCPServersDown(t *testing.T) {
	h := newHarness(t, nil)
	h.fc.bind("alice", "alpha")
	if got := h.say(aliceUser, "/status"); strings.Contains(got, "MCP") {
		t.Errorf("/status with every server up = %q; want no MCP line", got)
	}
	h.fc.mu.Lock()
	h.fc.edge = &rpc.StatusReq{Lane: rpc.LaneEdge, State: "idle",
		MCPDown:     "broken (down: start: the command of mcp/broken.json: no such file or directory)",
		MCPProgress: "everything.trigger-long-running-operation 12/600"}
	h.fc.mu.Unlock()
	got := h.say(aliceUser, "/status")
	for _, want := range []string{
		"MCP servers down: broken (down: start: the command of mcp/broken.json: no such file or directory)",
		"MCP calls in progress: everything.trigger-long-running-operation 12/600",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("/status = %q; want a line %q", got, want)
		}
	}
}
