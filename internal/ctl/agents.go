package ctl

import (
	"time"

	"choir/internal/rpc"
)

// AgentStatus is one agent as `choirctl agent status` and `agent list` show it.
type AgentStatus struct {
	AgentID       string                   `json:"agent_id"`
	State         string                   `json:"state"` // stopped, starting, running, stopping
	SessionID     string                   `json:"session_id,omitempty"`
	Container     string                   `json:"container,omitempty"`
	Image         string                   `json:"image,omitempty"`
	StartedAt     time.Time                `json:"started_at,omitzero"`
	Uptime        string                   `json:"uptime,omitempty"`
	LastHeartbeat time.Time                `json:"last_heartbeat,omitzero"`
	ConfigVersion int64                    `json:"config_version,omitempty"`
	Bindings      *rpc.ResourceBindings    `json:"bindings,omitempty"`
	Lanes         map[string]rpc.StatusReq `json:"lanes,omitempty"`
}

// StartRequest overrides an agent's default resources for one session.
type StartRequest struct {
	Workspace    string `json:"workspace,omitempty"`
	LLM          string `json:"llm,omitempty"`
	VoiceProfile string `json:"voice_profile,omitempty"`
	GitIdentity  string `json:"git_identity,omitempty"`
	Notion       string `json:"notion,omitempty"`
	Email        string `json:"email,omitempty"`
	DM           string `json:"dm,omitempty"`
}

// Workspace is one configured workspace and who leases it.
type Workspace struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Holder string `json:"holder,omitempty"`
}

// ResetResult says what a workspace reset did.
type ResetResult struct {
	Workspace      string `json:"workspace"`
	StoppedAgent   string `json:"stopped_agent,omitempty"`
	RemovedEntries int    `json:"removed_entries"`
}

// SecretsApplied says what `secret apply` did.
type SecretsApplied struct {
	Secrets        int   `json:"secrets"`
	ConfigVersion  int64 `json:"config_version"`
	AgentsNotified int   `json:"agents_notified"`
}

// ChatMessage is a line the operator sends to an agent (or injects).
type ChatMessage struct {
	Text string `json:"text"`
}

// ChatSent identifies a sent message; the agent's reply carries it as
// reply_to.
type ChatSent struct {
	ID string `json:"id"`
}
