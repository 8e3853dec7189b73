package assembly

import (
	"path/filepath"

	"choir/agent/lane"
	"choir/agent/tool"
	mcptool "choir/agent/tool/mcp"
	"choir/internal/rpc"
)

// loadTools builds the registry: the built-ins and baked tools, then the
// tools of the MCP servers of /choir/mcp (agent/tool/mcp), started now and
// stopped with the session. An MCP tool whose wire name another tool holds
// is refused (logged), never the other tool.
func (rt *Runtime) loadTools(builtins []tool.Tool) (*tool.Registry, error) {
	global, agent := filepath.Join(rt.cfg.ChoirDir, "tools", "global"), filepath.Join(rt.cfg.ChoirDir, "tools", "agent")
	base, err := tool.Load(builtins, global, agent)
	if err != nil {
		return nil, err
	}
	set, err := mcptool.Start(mcptool.Config{
		Dir: filepath.Join(rt.cfg.ChoirDir, "mcp"), PinsFile: filepath.Join(rt.cfg.ChoirDir, "mcp-pins.json"),
		Workspace: rt.cfg.Workspace, Secret: rt.sess.Secrets.Get, Log: rt.log, Notify: rt.notify,
		AgentID: rt.sess.ID().AgentID,
		Taken:   func(wire string) bool { _, ok := base.LookupWire(wire); return ok },
	})
	if err != nil {
		return nil, err
	}
	rt.mu.Lock()
	rt.mcp = set
	rt.mu.Unlock()
	extra := append(set.Tools(), set.ResourceTools()...)
	if len(extra) == 0 {
		return base, nil
	}
	return tool.Load(append(builtins, extra...), global, agent)
}

// stopMCP stops the MCP servers.
func (rt *Runtime) stopMCP() {
	rt.mu.Lock()
	set := rt.mcp
	rt.mu.Unlock()
	if set != nil {
		set.Close()
	}
}

// withMCPStatus adds the MCP servers that are down to the edge's report
// (agent status and /status show them).
func (rt *Runtime) withMCPStatus(st []rpc.StatusReq) []rpc.StatusReq {
	rt.mu.Lock()
	set := rt.mcp
	rt.mu.Unlock()
	if set == nil || len(st) == 0 {
		return st
	}
	down := set.Down()
	if len(down) > 1024 {
		down = down[:1024] + "…"
	}
	st[0].MCPDown = down
	progress := set.Progress()
	if len(progress) > 1024 {
		progress = progress[:1024] + "…"
	}
	st[0].MCPProgress = progress
	return st
}

// mcpAnswer takes a user message that answers an MCP server's open
// question (accept, decline or cancel) away from the lanes, and replies
// to it saying where it went.
func (rt *Runtime) mcpAnswer(m rpc.UserMessage) bool {
	rt.mu.Lock()
	set := rt.mcp
	rt.mu.Unlock()
	if set == nil {
		return false
	}
	ack, ok := set.Answer(m.Text)
	if ok {
		rt.reply(lane.Reply{ReplyTo: m.ID, Text: ack})
	}
	return ok
}
