package assembly

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"time"

	"choir/agent/lane"
	"choir/agent/tool"
	mcptool "choir/agent/tool/mcp"
	"choir/internal/config"
	"choir/internal/openai"
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
		Workspace: rt.cfg.Workspace, Secret: rt.sess.Secrets.Get, HTTP: mcpHTTP(), Log: rt.log, Notify: rt.notify,
		AgentID: rt.sess.ID().AgentID, Sample: rt.mcpSample, Report: rt.mcpAdminNotice,
		Taken: func(wire string) bool { _, ok := base.LookupWire(wire); return ok },
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
	st[0].MCPServers = fitServers(st[0], set.Reports())
	return st
}

// fitServers is the servers' reports within the status report's size
// limit: the longest list is halved, and marked truncated, until it fits.
func fitServers(st rpc.StatusReq, reps []mcptool.Report) []rpc.MCPServerStatus {
	out := make([]rpc.MCPServerStatus, len(reps))
	for i, r := range reps {
		out[i] = rpc.MCPServerStatus{Server: r.Server, State: r.State, Pinned: r.Pinned, Offered: r.Offered, Withheld: r.Withheld}
	}
	for {
		st.MCPServers = out
		if b, _ := json.Marshal(st); len(b) <= rpc.MaxStatusBytes {
			return out
		}
		var longest *[]string
		var at int
		for i := range out {
			for _, l := range []*[]string{&out[i].Pinned, &out[i].Offered, &out[i].Withheld} {
				if longest == nil || len(*l) > len(*longest) {
					longest, at = l, i
				}
			}
		}
		if longest == nil || len(*longest) == 0 {
			if len(out) == 0 {
				return nil
			}
			out = out[:len(out)-1]
			continue
		}
		*longest = (*longest)[:len(*longest)/2]
		out[at].Truncated = true
	}
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

// PurposeMCPSampling is the purpose of a model call made for an MCP
// server's sampling request; the ledger's purpose is it, ":" and the
// server.
const PurposeMCPSampling = "mcp_sampling"

// mcpSample makes the model call of a configured server's sampling request
// through the same seam as the lanes' calls (modelClient: fallbacks, the
// request template, the spend reservation and the ledger record): the
// declaration's model or the summary model, text only, max_tokens as
// agent/tool/mcp capped it. The server's messages are user and assistant
// turns; there is no system message.
func (rt *Runtime) mcpSample(ctx context.Context, call mcptool.SampleCall) (mcptool.SampleAnswer, error) {
	pick := summaryModel
	if call.Model != "" {
		name := call.Model
		pick = func(config.Dynamic) string { return name }
	}
	d := rt.dynamic()
	name := pick(d)
	m, ok := d.Models[name]
	if !ok {
		return mcptool.SampleAnswer{}, errors.New("the model " + name + " of sampling.model in mcp/" + call.Server + ".json is not in the config: add it to config.json's models or change the declaration")
	}
	n := call.MaxTokens
	req := asModel(openai.ChatRequest{MaxTokens: &n}, m)
	for _, msg := range call.Messages {
		req.Messages = append(req.Messages, openai.Message{Role: msg.Role, Content: msg.Text})
	}
	ctx = lane.WithCallInfo(ctx, &lane.CallInfo{Purpose: PurposeMCPSampling + ":" + call.Server})
	if limit := d.Tunables.Budgets.LLMCallTimeoutMS; limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(limit)*time.Millisecond)
		defer cancel()
	}
	resp, err := modelClient{rt, pick}.Chat(ctx, req)
	if err != nil {
		return mcptool.SampleAnswer{}, err
	}
	rt.log.Info("MCP sampling answered", "mcp_server", call.Server, "model", name)
	return mcptool.SampleAnswer{Text: resp.Content, Model: resp.Model, Truncated: resp.FinishReason == "length"}, nil
}

// hostToolMCPNotice is choird's host tool that tells the agent's bound DM
// and every admin DM (choird/mcp_notice.go).
const hostToolMCPNotice = "choir.mcp.notice"

// mcpAdminNotice tells the bound DM and the admin DMs of an MCP server's
// tools withheld; a choird without the host tool, or one refusing it,
// leaves the bound DM told.
func (rt *Runtime) mcpAdminNotice(text string) {
	input, _ := json.Marshal(map[string]string{"text": text})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resp, err := rt.cp.ExecuteHostTool(ctx, rpc.HostToolReq{ToolName: hostToolMCPNotice, CallID: rpc.NewRequestID(), Input: input})
	if err == nil && resp.Status == rpc.ToolSuccess {
		return
	}
	if err == nil {
		err = errors.New(string(resp.Output))
	}
	rt.log.Warn("MCP notice not sent to the admin DMs; telling the bound DM", "error", err.Error())
	rt.notify(text)
}
