package rpc

import (
	"encoding/json"
	"time"
)

// Verb names an RPC; it is the last path element of POST /rpc/<VERB>.
type Verb string

// The verbs of §12.5.
const (
	VerbInitHello          Verb = "INIT_HELLO"
	VerbGetSecrets         Verb = "GET_SECRETS"
	VerbHeartbeat          Verb = "HEARTBEAT"
	VerbRequestApproval    Verb = "REQUEST_APPROVAL"
	VerbReportStatus       Verb = "REPORT_STATUS"
	VerbTerminateSelf      Verb = "TERMINATE_SELF"
	VerbFetchDynamicConfig Verb = "FETCH_DYNAMIC_CONFIG"
	VerbExecuteHostTool    Verb = "EXECUTE_HOST_TOOL"
	// VerbFetchEvents pages a recovering session's stored log (§13.2):
	// INIT_HELLO names the snapshot and the head, the agent reads the
	// tail it needs from here, a bounded page at a time.
	VerbFetchEvents Verb = "FETCH_EVENTS"
)

// Verbs lists every verb, in the design's order.
var Verbs = []Verb{
	VerbInitHello, VerbGetSecrets, VerbHeartbeat, VerbRequestApproval,
	VerbReportStatus, VerbTerminateSelf, VerbFetchDynamicConfig, VerbExecuteHostTool,
	VerbFetchEvents,
}

// Envelope is the logical envelope every call carries. Over HTTP its first
// three fields travel as headers and the verb as the path; it exists as a
// type so that a future transport carries the same fields.
type Envelope struct {
	RequestID  string          `json:"request_id"`
	SessionID  string          `json:"session_id"`
	LeaseToken string          `json:"lease_token"`
	Verb       Verb            `json:"verb"`
	Payload    json.RawMessage `json:"payload"`
}

// ResourceBindings are the named resources a session holds (§23.1).
type ResourceBindings struct {
	Workspace    string `json:"workspace"`
	LLM          string `json:"llm"`
	CoreLLM      string `json:"core_llm,omitempty"`    // the core jobs' model; "" means LLM's
	SummaryLLM   string `json:"summary_llm,omitempty"` // the summary's and compaction's model; "" means LLM's
	VoiceProfile string `json:"voice_profile,omitempty"`
	GitIdentity  string `json:"git_identity"`
	Notion       string `json:"notion,omitempty"`
	Email        string `json:"email,omitempty"`
	DM           string `json:"dm"`
}

// Event is one committed event of the arbiter's log as it is replicated.
// Hash chains the log: Hash = SHA-256(previous hash ‖ canonical event).
type Event struct {
	Rev     int64           `json:"rev"`
	Type    string          `json:"type"`
	Lane    string          `json:"lane,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
	Hash    string          `json:"hash"`
	Time    time.Time       `json:"time"`
}

// InitHelloReq opens a session: the agent says who it is and what image it runs.
type InitHelloReq struct {
	AgentID      string `json:"agent_id"`
	SessionID    string `json:"session_id"`
	ImageVersion string `json:"image_version"`
	// The commits version.json names; the manifest hashes are computed
	// from the files the agent finds under /choir/tools and /choir/skills
	// (internal/manifest), not copied from version.json.
	GlobalRepoCommit  string `json:"global_repo_commit,omitempty"`
	AgentRepoCommit   string `json:"agent_repo_commit,omitempty"`
	ToolManifestHash  string `json:"tool_manifest_hash"`
	SkillManifestHash string `json:"skill_manifest_hash"`
}

// Init statuses.
const (
	InitFresh   = "fresh"   // start a new session
	InitRecover = "recover" // rehydrate from Recovery (§13.2)
)

// InitHelloResp tells the agent its bindings and, when the session is
// resumed, the state to rehydrate to: the last host-acknowledged revision.
type InitHelloResp struct {
	Status           string           `json:"status"`
	LeaseToken       string           `json:"lease_token"`
	ResourceBindings ResourceBindings `json:"resource_bindings"`
	ConfigVersion    int64            `json:"config_version"`
	// Recovery is set when Status is InitRecover.
	Recovery *Recovery `json:"recovery,omitempty"`
	// ModelProxy says the agent sends its model calls through choird
	// (POST /v1/model/<name>/chat/completions on this endpoint, with the
	// lease token; modelproxy.go) and holds no model key: a run container
	// without network, or agents.<id>.model_proxy.
	ModelProxy bool `json:"model_proxy,omitempty"`
	// Tunnel says the container has no network route: the agent's own
	// clients (search, Notion, TTS, mail) reach their services through
	// CONNECT on this endpoint (tunnel.go), to the endpoints the agent's
	// configuration names only.
	Tunnel bool `json:"tunnel,omitempty"`
	// NetFetch says an interactive session's agent is in network policy
	// mode (agents.<id>.network): the agent offers choir.net.fetch, its
	// only way out. A run session offers it when its brief names it.
	NetFetch bool `json:"net_fetch,omitempty"`
	// Run is set when the session is a headless run session (choird's
	// lifecycle Perform): the agent offers only the tools it names.
	Run *RunBrief `json:"run,omitempty"`
}

// RunBrief tells a run session's agent what it may do: ID is the
// director's run, Tools the exact tool names the session offers the model
// and runs (choir.dm.send, its answer, always; nothing else outside the
// list, not even the agent's own lane tools).
type RunBrief struct {
	ID    string   `json:"id"`
	Tools []string `json:"tools"`
}

// Recovery is where a resumed session stands in choird (§13.2): the head
// of its stored log and its newest snapshot (none when SnapshotRev is 0).
// The agent reads the tail it needs with FETCH_EVENTS and verifies it
// against Head before it rehydrates.
type Recovery struct {
	Head        ChainHead       `json:"head"`
	SnapshotRev int64           `json:"snapshot_rev,omitempty"`
	Snapshot    json.RawMessage `json:"snapshot,omitempty"`
	// Resumes counts the times this session was resumed, this one included.
	Resumes int `json:"resumes"`
}

// FetchEventsReq asks for at most Max stored events after AfterRev (at
// most HeartbeatMaxEvents; 0 means that many).
type FetchEventsReq struct {
	AfterRev int64 `json:"after_rev"`
	Max      int   `json:"max,omitempty"`
}

// FetchEventsResp carries the events, in order, with their hashes, and the
// hash of AfterRev ("" at 0), from which they verify with chain.Verify.
// A page ends early (fewer than Max) only at the log's head or at about
// HeartbeatMaxBytes.
type FetchEventsResp struct {
	PrevHash string  `json:"prev_hash"`
	Events   []Event `json:"events"`
}

// SecretReq asks for secrets by name; only those of the session's bound
// resources are granted, and an empty list asks for all of them.
type SecretReq struct {
	Resources []string `json:"resources"`
}

// SecretResp carries secret values. It must never be logged.
type SecretResp struct {
	Secrets map[string]string `json:"secrets"`
}

// HeartbeatReq replicates committed events (§13.1): Patches are the
// committed events BaseRev+1 … NewRev, in order, each with its chain hash;
// HashPrev is the hash of BaseRev ("" for 0) and HashNew that of NewRev.
// choird stores them only if they follow what it holds for the session
// (contiguous, and chained from its stored hash of BaseRev), else it
// refuses the whole heartbeat with 409 replication_refused and says where
// it stands (Error.Head). Events it holds already are skipped, so a resend
// is harmless. The agent sends at most HeartbeatMaxEvents events and about
// HeartbeatMaxBytes of them a heartbeat; a longer backlog drains over
// several.
type HeartbeatReq struct {
	BaseRev       int64     `json:"base_rev"`
	NewRev        int64     `json:"new_rev"`
	Patches       []Event   `json:"patches"`
	ConfigVersion int64     `json:"config_version"`
	HashPrev      string    `json:"hash_prev"`
	HashNew       string    `json:"hash_new"`
	Timestamp     time.Time `json:"timestamp"`
	// Snapshot is the working-memory snapshot (§13.4, a Snapshot as JSON)
	// of the state at revision SnapshotRev, sent every N revisions or T
	// seconds; choird stores it under SnapshotRev once it holds that
	// revision (SnapshotRev ≤ NewRev).
	Snapshot    json.RawMessage `json:"snapshot,omitempty"`
	SnapshotRev int64           `json:"snapshot_rev,omitempty"`
	// Final marks the last heartbeat of a graceful stop; Summary is the
	// session summary generated for it, when there is one (§11.8).
	Final   bool            `json:"final,omitempty"`
	Summary json.RawMessage `json:"summary,omitempty"`
}

// HeartbeatResp acknowledges a revision and says which config is current.
// AckRev is the newest revision choird holds for the session and AckHash
// its chain hash: the next heartbeat sends from AckRev+1. SnapshotRev is
// the revision of the newest snapshot it holds (0 for none).
type HeartbeatResp struct {
	AckRev              int64  `json:"ack_rev"`
	AckHash             string `json:"ack_hash,omitempty"`
	SnapshotRev         int64  `json:"snapshot_rev,omitempty"`
	ConfigVersionLatest int64  `json:"config_version_latest"`
}

// How much one heartbeat carries: the agent fills a heartbeat with the
// oldest unacknowledged events up to HeartbeatMaxEvents of them or
// HeartbeatMaxBytes of their JSON (one larger event goes alone), well
// under MaxPatches and the 4 MiB body cap with a snapshot beside them.
// choird stores each heartbeat in one transaction, whose fixed cost a
// batch of hundreds amortises (see BenchmarkReplicate in choird/store).
const (
	HeartbeatMaxEvents = 512
	HeartbeatMaxBytes  = 1 << 20
)

// ChainHead is where a session's replicated log ends: the newest revision
// choird holds and its chain hash ("" at revision 0).
type ChainHead struct {
	Rev  int64  `json:"rev"`
	Hash string `json:"hash"`
}

// Snapshot is the working-memory snapshot of §13.4, exactly its fields:
// each lane's reference summary (§11.3), per lane the revision of the
// oldest event in its window, the skill runs (skill, state, local
// context), each lane's status and budgets, and the open core jobs with
// the tool each has in flight. The revision it describes travels beside it
// (HeartbeatReq.SnapshotRev) and is the key choird stores it under; to
// recover, the newest snapshot is read with the events from the oldest
// window boundary on. The members are kept as JSON: their shapes belong to
// the agent's lanes.
type Snapshot struct {
	ReferenceSummaryEdge json.RawMessage `json:"reference_summary_edge"`
	ReferenceSummaryCore json.RawMessage `json:"reference_summary_core"`
	EventWindowBoundary  json.RawMessage `json:"event_window_boundary"`
	SkillState           json.RawMessage `json:"skill_state"`
	LaneState            json.RawMessage `json:"lane_state"`
	OpenJobs             json.RawMessage `json:"open_jobs"`
}

// Approval statuses.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalRejected = "rejected"
)

// ApprovalReq proposes a capability change for a human to decide.
type ApprovalReq struct {
	RequestType string          `json:"request_type"`
	Payload     json.RawMessage `json:"payload"`
}

// ApprovalResp identifies the stored request and its status.
type ApprovalResp struct {
	ApprovalID string `json:"approval_id"`
	Status     string `json:"status"`
}

// StatusReq reports a lane's state for `choirctl agent status`.
type StatusReq struct {
	Lane            string           `json:"lane"`
	State           string           `json:"state"`
	Skill           string           `json:"skill,omitempty"`
	Step            int              `json:"step,omitempty"`
	BudgetRemaining map[string]int64 `json:"budget_remaining,omitempty"`
	// TokensUsed and ToolCalls are what the lane has used so far: a core
	// job's own model tokens and tool calls; for the edge, the session's
	// totals (every lane's), which its budget_remaining bounds.
	TokensUsed int64 `json:"tokens_used,omitempty"`
	ToolCalls  int64 `json:"tool_calls,omitempty"`
	// MCPDown names the MCP servers that are not up, with why (edge only).
	MCPDown string `json:"mcp_down,omitempty"`
	// MCPProgress lists the MCP calls in flight with their servers' last
	// progress notification (edge only).
	MCPProgress string `json:"mcp_progress,omitempty"`
	// MCPServers is each MCP server's state, pinned and offered tools and
	// changes withheld (edge only; `choirctl mcp list`).
	MCPServers []MCPServerStatus `json:"mcp_servers,omitempty"`
}

// MCPServerStatus is one MCP server as the agent runs it: Pinned are the
// MCP tool names recorded at build, Offered the ones the model is offered
// now, Withheld the differences not offered ("+added", "-removed",
// "~changed"). Truncated: the lists were cut to fit the report.
type MCPServerStatus struct {
	Server    string   `json:"server"`
	State     string   `json:"state"`
	Pinned    []string `json:"pinned,omitempty"`
	Offered   []string `json:"offered,omitempty"`
	Withheld  []string `json:"withheld,omitempty"`
	Truncated bool     `json:"truncated,omitempty"`
}

// StatusResp acknowledges a status report.
type StatusResp struct {
	Ack bool `json:"ack"`
}

// TerminateReq says the agent is exiting and why.
type TerminateReq struct {
	Reason string `json:"reason"`
}

// TerminateResp acknowledges; the lease token is revoked after it.
type TerminateResp struct {
	Ack bool `json:"ack"`
}

// ConfigReq asks for the hot-reloadable config when the agent is behind.
type ConfigReq struct {
	CurrentConfigVersion int64 `json:"current_config_version"`
}

// ConfigResp carries the whole current config blob, or none when the agent
// is current. The agent swaps it in atomically.
type ConfigResp struct {
	ConfigVersion int64           `json:"config_version"`
	Config        json.RawMessage `json:"config,omitempty"`
}

// Host tool statuses.
const (
	ToolSuccess = "success"
	ToolError   = "error"
)

// HostToolReq runs a tool that needs the host (browser, memory).
type HostToolReq struct {
	ToolName string          `json:"tool_name"`
	CallID   string          `json:"call_id"`
	Input    json.RawMessage `json:"input"`
}

// HostToolResp is the tool's result.
type HostToolResp struct {
	CallID string          `json:"call_id"`
	Status string          `json:"status"`
	Output json.RawMessage `json:"output"`
}
