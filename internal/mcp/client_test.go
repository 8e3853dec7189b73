package mcp_test

import (
	"encoding/json"
	"testing"

	"choir/internal/mcp"
	"choir/testkit/mcptest"
)

func TestStdioInitializeListCall(t *testing.T) {
	srv := &mcptest.Server{Name: "fake", Tools: []json.RawMessage{echoTool}}
	c := pipeServer(t, srv, mcp.Options{ClientName: "choir-test", ClientVersion: "1.2.3"})
	if got := c.ServerInfo().Name; got != "fake" {
		t.Errorf("ServerInfo().Name = %q; want fake", got)
	}
	if got := c.ProtocolVersion(); got != mcp.Version20251125 {
		t.Errorf("ProtocolVersion() = %q; want %s", got, mcp.Version20251125)
	}
	if c.Capabilities().Tools == nil || !c.Capabilities().Tools.ListChanged {
		t.Errorf("Capabilities().Tools = %+v; want listChanged", c.Capabilities().Tools)
	}
	ctx := testCtx(t)
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	if len(tools) != 1 || tools[0].Name != "echo" || string(tools[0].Raw) != string(echoTool) {
		t.Fatalf("ListTools = %+v; want the echo tool with its raw JSON", tools)
	}
	res, err := c.CallTool(ctx, "echo", raw(`{"message":"hi"}`), nil)
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	if res.Text() != `{"message":"hi"}` || res.IsError {
		t.Errorf("CallTool = %+v; want the arguments echoed", res)
	}
	ms := srv.Received()
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
		ClientInfo      struct{ Name, Version string }
		Capabilities    map[string]any
	}
	json.Unmarshal(ms[0].Params, &init)
	if ms[0].Method != "initialize" || init.ClientInfo.Name != "choir-test" || init.ClientInfo.Version != "1.2.3" || init.ProtocolVersion != "2025-11-25" {
		t.Errorf("first message = %s; want initialize from choir-test 1.2.3 proposing 2025-11-25", ms[0].Raw)
	}
	if len(init.Capabilities) != 0 {
		t.Errorf("capabilities = %v; want none without Elicit and Sample", init.Capabilities)
	}
	if ms[1].Method != "notifications/initialized" {
		t.Errorf("second message = %q; want notifications/initialized", ms[1].Method)
	}
}
