package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"choir/choird/control"
	"choir/choird/lifecycle"
	"choir/internal/rpc"
)

// HostToolMCPNotice is the host tool by which choir-agent reports an MCP
// server whose live tools differ from the ones pinned at build (issue 24):
// choird tells the agent's bound DM and every admin DM, like a spend
// notice. Its input is {"text": "..."}.
const HostToolMCPNotice = "choir.mcp.notice"

// Bounds on what an agent can make choird say to the admins.
const (
	maxMCPNoticeBytes      = 2048
	maxMCPNoticesInSession = 32
)

// mcpNoticeTool is the host tool's handler.
func mcpNoticeTool(plane *control.Plane, agents *lifecycle.Manager, log *slog.Logger) func(ctx context.Context, agentID, sessionID string, input json.RawMessage) (json.RawMessage, error) {
	var mu sync.Mutex
	sent := map[string]int{}
	return func(_ context.Context, agentID, sessionID string, input json.RawMessage) (json.RawMessage, error) {
		var in struct {
			Text string `json:"text"`
		}
		if err := rpc.DecodeStrict(input, &in); err != nil {
			return nil, fmt.Errorf("%s input: %w", HostToolMCPNotice, err)
		}
		in.Text = strings.TrimSpace(in.Text)
		switch {
		case in.Text == "":
			return nil, errors.New(HostToolMCPNotice + ": empty text")
		case len(in.Text) > maxMCPNoticeBytes:
			return nil, fmt.Errorf("%s: %d bytes of text; at most %d", HostToolMCPNotice, len(in.Text), maxMCPNoticeBytes)
		}
		mu.Lock()
		if len(sent) > 1024 {
			clear(sent) // sessions end; the bound only has to hold within one
		}
		sent[sessionID]++
		n := sent[sessionID]
		mu.Unlock()
		if n > maxMCPNoticesInSession {
			return nil, fmt.Errorf("%s: %d notices in session %s already; no more are sent", HostToolMCPNotice, maxMCPNoticesInSession, sessionID)
		}
		log.Info("MCP notice to the bound and admin DMs", "agent", agentID, "session", sessionID)
		spendNotice(plane, agents, agentID, "Agent "+agentID+": "+in.Text, log) // spend.go: the bound DM and every admin DM
		return json.RawMessage(`{"status":"success","summary":"delivered"}`), nil
	}
}
