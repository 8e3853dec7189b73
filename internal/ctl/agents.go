package ctl

import (
	"encoding/json"
	"time"

	"choir/internal/rpc"
)

// AgentStatus is one agent as `choirctl agent status` and `agent list` show it.
type AgentStatus struct {
	AgentID       string                `json:"agent_id"`
	State         string                `json:"state"` // stopped, starting, running, stopping
	SessionID     string                `json:"session_id,omitempty"`
	Container     string                `json:"container,omitempty"`
	Image         string                `json:"image,omitempty"`
	StartedAt     time.Time             `json:"started_at,omitzero"`
	Uptime        string                `json:"uptime,omitempty"`
	LastHeartbeat time.Time             `json:"last_heartbeat,omitzero"`
	ConfigVersion int64                 `json:"config_version,omitempty"`
	Bindings      *rpc.ResourceBindings `json:"bindings,omitempty"`
	// Overrides are the bindings that are not the agent's defaults, each
	// with why: given at start, or a model set / voice set since.
	Overrides   []string                 `json:"overrides,omitempty"`
	Lanes       map[string]rpc.StatusReq `json:"lanes,omitempty"`
	Replication *Replication             `json:"replication,omitempty"`
	// Resumed is set when this session resumed an earlier run of it
	// (spec 13.2): from which revision, and how many times so far.
	Resumed *Resumed `json:"resumed,omitempty"`
	// Restart is the agent's restart policy and what it has done.
	Restart *RestartStatus `json:"restart,omitempty"`
	// Degraded says what is wrong now for this agent, one reason each: its
	// heartbeats refused or failing, the engine unreachable while choird
	// watches its container, Postgres or the engine down for all.
	Degraded []string `json:"degraded,omitempty"`
	// Spend is today's spend against the agent's daily caps (issue 23),
	// "" when no daily cap applies.
	Spend string `json:"spend,omitempty"`
	// Outbox is each Telegram DM's outbox of the agent's messages (issue
	// 19): the DMs it has messages in, waiting or failed.
	Outbox []DMOutbox `json:"outbox,omitempty"`
}

// DMOutbox is what an agent's messages to one Telegram DM wait for.
type DMOutbox struct {
	DM     string `json:"dm"`
	Queued int    `json:"queued"` // messages not yet delivered
	// OldestAgeSeconds is how long the oldest queued message has waited.
	OldestAgeSeconds float64 `json:"oldest_age_seconds,omitempty"`
	Failed           int     `json:"failed,omitempty"` // given up on (kept 7 days)
	// Refused is why Telegram refuses the DM (blocked, chat not found),
	// while no message was delivered since; its messages are not retried.
	Refused   string    `json:"refused,omitempty"`
	RefusedAt time.Time `json:"refused_at,omitzero"`
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
	// CoreLLM and SummaryLLM override defaults.core_llm and summary_llm.
	CoreLLM    string `json:"core_llm,omitempty"`
	SummaryLLM string `json:"summary_llm,omitempty"`
	// Fresh starts a new session instead of resuming the agent's last one
	// (choirctl agent start --fresh).
	Fresh bool `json:"fresh,omitempty"`
}

// Resumed says which ended session a start resumed: the session's log
// continues from Rev, where its last run left it.
type Resumed struct {
	Rev     int64  `json:"rev"`
	Resumes int    `json:"resumes"`
	From    string `json:"from"` // how the last run ended: stopped or crashed
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

// BuildResult is what `agent build` made (choird/build.Result as JSON).
type BuildResult struct {
	AgentID      string   `json:"agent_id"`
	Image        string   `json:"image"`
	ImageVersion string   `json:"image_version"`
	BaseImage    string   `json:"base_image"`
	BaseBuilt    bool     `json:"base_built"`
	AgentBuilt   bool     `json:"agent_built"`
	Tools        []string `json:"tools"`
	Warnings     []string `json:"warnings,omitempty"`
	Version      struct {
		GlobalRepoCommit  string `json:"global_repo_commit"`
		AgentRepoCommit   string `json:"agent_repo_commit"`
		ToolManifestHash  string `json:"tool_manifest_hash"`
		SkillManifestHash string `json:"skill_manifest_hash"`
	} `json:"version"`
}

// BuildEvent is one line of the build stream: progress as it happens, then
// exactly one result or error.
type BuildEvent struct {
	Progress string       `json:"progress,omitempty"`
	Result   *BuildResult `json:"result,omitempty"`
	Error    *Error       `json:"error,omitempty"`
}

// Approval is a proposal waiting for (or past) a human decision.
type Approval struct {
	ID          string          `json:"id"`
	SessionID   string          `json:"session_id,omitempty"`
	AgentID     string          `json:"agent_id"`
	RequestType string          `json:"request_type"`
	Summary     string          `json:"summary"`
	Payload     json.RawMessage `json:"payload,omitempty"`
	Status      string          `json:"status"`
	CreatedAt   time.Time       `json:"created_at"`
	ResolvedAt  time.Time       `json:"resolved_at,omitzero"`
	ResolvedBy  string          `json:"resolved_by,omitempty"`
}

// GatewayStatus is one Telegram bot's poller.
type GatewayStatus struct {
	Gateway          string    `json:"gateway"`
	Polling          bool      `json:"polling"`
	LastOK           time.Time `json:"last_ok,omitzero"`
	Updates          int64     `json:"updates"`
	Dropped          int64     `json:"dropped"`
	Errors           int       `json:"errors"`
	LastErr          string    `json:"last_error,omitempty"`
	Conflicts        int       `json:"conflicts"`
	Unauthorized     bool      `json:"unauthorized,omitempty"`
	WatchdogRestarts int       `json:"watchdog_restarts"`
}

// SessionInfo is one session as `choirctl session list` shows it.
type SessionInfo struct {
	SessionID     string          `json:"session_id"`
	AgentID       string          `json:"agent_id"`
	Status        string          `json:"status"`
	StartedAt     time.Time       `json:"started_at"`
	EndedAt       time.Time       `json:"ended_at,omitzero"`
	LastHeartbeat time.Time       `json:"last_heartbeat,omitzero"`
	Image         string          `json:"image,omitempty"`
	Bindings      json.RawMessage `json:"bindings,omitempty"`
	// Kind is "interactive" or "run" (a headless run's session, RunID).
	Kind  string `json:"kind,omitempty"`
	RunID string `json:"run_id,omitempty"`
}

// SessionEvent is one replicated event of a session's log.
type SessionEvent struct {
	Rev     int64           `json:"rev"`
	Type    string          `json:"type"`
	Lane    string          `json:"lane,omitempty"`
	Hash    string          `json:"hash"`
	Payload json.RawMessage `json:"payload,omitempty"`
	Time    time.Time       `json:"time"`
}

// ModelChoice is the model and voice an agent uses now, or the change to
// make (empty fields unchanged).
type ModelChoice struct {
	LLM          string `json:"llm,omitempty"`
	VoiceProfile string `json:"voice_profile,omitempty"`
	// CoreLLM and SummaryLLM are the core jobs' and the session summary's
	// (and compaction's) models; empty in an answer means the edge's.
	CoreLLM    string `json:"core_llm,omitempty"`
	SummaryLLM string `json:"summary_llm,omitempty"`
}

// ModelCatalog lists the named models, TTS providers and voice profiles.
type ModelCatalog struct {
	Models        []NamedModel `json:"models"`
	TTS           []NamedModel `json:"tts"`
	VoiceProfiles []NamedModel `json:"voice_profiles"`
}

// NamedModel is one entry of the catalog.
type NamedModel struct {
	Name     string `json:"name"`
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
}

// CancelRequest names the core job to cancel.
type CancelRequest struct {
	JobName string `json:"job_name"`
}

// ConsoleMessage is what `choirctl chat` receives: a message the agent sent
// to its DM, with the files it named attached (the console has no other way
// to reach them).
type ConsoleMessage struct {
	rpc.DMSend
	Attachments []Attachment `json:"attachments,omitempty"`
	// Ended, when set, is not a message but the news that the agent's
	// session ended; after a crash it is the last line of the stream.
	Ended *SessionEnd `json:"session_ended,omitempty"`
}

// SessionEnd is how an agent's session ended.
type SessionEnd struct {
	SessionID string `json:"session_id"`
	Status    string `json:"status"` // stopped or crashed
	Reason    string `json:"reason"`
}

// Attachment is one file an agent sent, by its base name.
type Attachment struct {
	Name string `json:"name"`
	Data []byte `json:"data"`
}
