package gateway

import (
	"context"
	"errors"

	"choir/choird/approval"
	"choir/choird/lease"
	"choir/internal/ctl"
	"choir/internal/rpc"
)

// Control is choird's control plane as the gateway reaches it. The gateway
// only translates: every command's meaning lives behind these methods, the
// same ones the admin API serves choirctl with.
type Control interface {
	Router
	Agents
	System
}

// Router carries a DM's messages to its agent.
type Router interface {
	// AgentForDM returns the running agent bound to the named DM.
	AgentForDM(dm string) (agentID string, ok bool)
	// SendUserMessage queues msg for the agent's edge lane (rpc.EventUserMessage).
	SendUserMessage(agentID string, msg rpc.UserMessage) (string, error)
	// Inject appends text to the agent's edge context at its next safe point.
	Inject(agentID, text string) error
	// WorkspacePath is the host directory of the running agent's workspace
	// (its bound workspace's configured path), where .choirtmp/recv and
	// .choirtmp/send live.
	WorkspacePath(agentID string) (string, error)
}

// Agents is the agent lifecycle (`choirctl agent …`).
type Agents interface {
	// Start starts an agent with overrides; the gateway always sets o.DM to
	// the DM that sent /start. It returns once the agent said hello.
	Start(ctx context.Context, agentID string, o lease.Overrides) (ctl.AgentStatus, error)
	Stop(ctx context.Context, agentID string) error
	Restart(ctx context.Context, agentID string) (ctl.AgentStatus, error)
	Status(agentID string) (ctl.AgentStatus, error)
	List() []ctl.AgentStatus
}

// System is the rest of the operator's commands.
type System interface {
	Workspaces() []ctl.Workspace
	ResetWorkspace(ctx context.Context, name string) (ctl.ResetResult, error)
	// SecretNames lists the names in secrets.json, never their values.
	SecretNames() []string
	// Command runs a command the control plane may not back yet (/cores,
	// /cancel, /compact, /events, /model, /voice, /update, /update-all,
	// /config, /agent build) and returns the text to answer with. A
	// command it does not implement returns ErrNotAvailable.
	Command(ctx context.Context, c Command) (string, error)
}

// Command is a gateway command handed to Control.Command.
type Command struct {
	// Name without the slash: cores, cancel, compact, events, model,
	// voice, update, update-all, config, agent-build.
	Name string
	// Agent is the target: the DM's bound agent, or the one an admin named
	// ("" for update-all and config).
	Agent string
	// Args are the words after the command (and after the agent an admin
	// named).
	Args []string
	// DM is the DM that sent it; Admin whether it is an admin DM.
	DM    string
	Admin bool
	// Progress sends an interim line to the DM (update-all reports each
	// agent as it goes, §19.7). It is safe to call from any goroutine.
	Progress func(text string)
}

// ErrNotAvailable is what Control.Command returns for a command this choird
// does not implement yet; the DM is told so.
var ErrNotAvailable = errors.New("not available in this choird yet")

// Approvals is the approval pipeline (choird/approval.Service).
type Approvals interface {
	Decide(ctx context.Context, id string, approve bool, who approval.Decider) (approval.Approval, error)
	List(ctx context.Context, agentID string) ([]approval.Approval, error)
}
