package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"choir/internal/rpc"
)

// Outbox delivers what an agent sends to its bound DM (choir.dm.send): the
// gateway for Telegram DMs, the console for choirctl chat.
type Outbox interface {
	Deliver(ctx context.Context, agentID, dm string, msg rpc.DMSend) error
}

// AgentForDM returns the running agent bound to a DM.
func (m *Manager) AgentForDM(dm string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, r := range m.runs {
		if r.bindings().DM == dm {
			return id, true
		}
	}
	return "", false
}

// SendUserMessage queues a user message for the agent's edge lane; it
// returns the message id.
func (m *Manager) SendUserMessage(agentID string, msg rpc.UserMessage) (string, error) {
	r := m.run(agentID)
	if r == nil || r.getState() != StateRunning {
		return "", fmt.Errorf("%s: %w", agentID, ErrNotRunning)
	}
	if msg.ID == "" {
		msg.ID = rpc.NewRequestID()
	}
	if _, ok := m.Sessions.Publish(r.SessionID, rpc.EventUserMessage, msg); !ok {
		return "", fmt.Errorf("%s: %w", agentID, ErrNotRunning)
	}
	return msg.ID, nil
}

// Inject appends text to the agent's edge context at its next safe point.
func (m *Manager) Inject(agentID, text string) error {
	r := m.run(agentID)
	if r == nil || r.getState() != StateRunning {
		return fmt.Errorf("%s: %w", agentID, ErrNotRunning)
	}
	if _, ok := m.Sessions.Publish(r.SessionID, rpc.EventInject, rpc.Injection{ID: rpc.NewRequestID(), Text: text}); !ok {
		return fmt.Errorf("%s: %w", agentID, ErrNotRunning)
	}
	return nil
}

// HandleHostTool runs the host tools: choir.dm.send delivers to the
// session's bound DM; other host tools arrive with their issues.
func (m *Manager) HandleHostTool(ctx context.Context, req rpc.HostToolReq) (rpc.HostToolResp, error) {
	r, err := m.caller(ctx)
	if err != nil {
		return rpc.HostToolResp{}, err
	}
	switch req.ToolName {
	case rpc.HostToolDMSend:
		var msg rpc.DMSend
		if err := rpc.DecodeStrict(req.Input, &msg); err != nil {
			return toolError(req.CallID, "bad_input", err.Error()), nil
		}
		if r.perf != nil { // run_session.go: the run's answer, not the DM's
			return r.perf.deliver(req.CallID, msg), nil
		}
		if m.Outbox == nil {
			return toolError(req.CallID, "unavailable", "no DM delivery in this choird"), nil
		}
		if msg.ID == "" {
			msg.ID = req.CallID // the key that makes a resend a no-op
		}
		if err := m.Outbox.Deliver(ctx, r.AgentID, r.bindings().DM, msg); err != nil {
			return toolError(req.CallID, "delivery_failed", err.Error()), nil
		}
		// Queued for a Telegram DM (its outbox delivers it in order),
		// delivered for the console.
		return rpc.HostToolResp{CallID: req.CallID, Status: rpc.ToolSuccess, Output: json.RawMessage(`{"status":"success","summary":"queued"}`)}, nil
	}
	if h := m.HostTools[req.ToolName]; h != nil {
		out, err := h(ctx, r.AgentID, r.SessionID, req.Input)
		if err != nil {
			code := "host_error"
			var c interface{ ToolCode() string }
			if errors.As(err, &c) {
				code = c.ToolCode()
			}
			return toolError(req.CallID, code, err.Error()), nil
		}
		return rpc.HostToolResp{CallID: req.CallID, Status: rpc.ToolSuccess, Output: out}, nil
	}
	return rpc.HostToolResp{}, rpc.Errorf(http.StatusNotFound, rpc.CodeNotFound, "no host tool named %q in this choird", req.ToolName)
}

func toolError(callID, code, message string) rpc.HostToolResp {
	out, _ := json.Marshal(map[string]any{"status": "error", "error": map[string]string{"code": code, "message": message}})
	return rpc.HostToolResp{CallID: callID, Status: rpc.ToolError, Output: out}
}

// WorkspacePath is the host directory of a running agent's workspace.
func (m *Manager) WorkspacePath(agentID string) (string, error) {
	r := m.run(agentID)
	if r == nil {
		return "", fmt.Errorf("%s: %w", agentID, ErrNotRunning)
	}
	l, _ := m.Config()
	name := r.bindings().Workspace
	ws, ok := l.Config.Workspaces[name]
	if !ok {
		return "", fmt.Errorf("%s: workspace %q is no longer configured", agentID, name)
	}
	return ws.Path, nil
}
