package ctl

import (
	"fmt"
	"time"
)

// Change classes of `config diff` (design §16, §17.6).
const (
	// ClassHot changes are published by `config apply` and reach running
	// agents at once (FETCH_DYNAMIC_CONFIG).
	ClassHot = "hot-reload"
	// ClassNextStart changes are published by `config apply` and take
	// effect when an agent next starts or is next built.
	ClassNextStart = "next-start"
	// ClassRestart changes are never published by `config apply`: choird
	// must restart, or an agent's image must be rebuilt and the agent
	// updated.
	ClassRestart = "restart-required"
)

// ConfigChange is one difference between the staged and the running
// snapshot.
type ConfigChange struct {
	Op    string `json:"op"`    // "+", "-" or "~"
	Where string `json:"where"` // "config.json: models.default", "secrets.json: openai", "global:tools/x.json", "agent-1 repo"
	Class string `json:"class"`
	// From and To are the commits of a repo line.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Use says what applies the change ("included in: choirctl config
	// apply", "use: choirctl agent update agent-1").
	Use string `json:"use"`
	// Blocks says why `config apply` refuses the snapshot while it holds
	// this change, and what to do first; empty when it does not.
	Blocks string `json:"blocks,omitempty"`
}

// String is the change's line in `config diff` (§17.6).
func (c ConfigChange) String() string {
	where := c.Where
	if c.From != "" || c.To != "" {
		where = fmt.Sprintf("%s: %s -> %s", c.Where, orNone(c.From), orNone(c.To))
	}
	s := fmt.Sprintf("%s %s [%s] → %s", c.Op, where, c.Class, c.Use)
	if c.Blocks != "" {
		s += "\n    blocks config apply: " + c.Blocks
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// ConfigDiff is `config diff`, and what `config load` answers.
type ConfigDiff struct {
	// Staged is false when nothing is staged (no `config load` since the
	// last apply or since choird started); the rest is then empty.
	Staged   bool      `json:"staged"`
	StagedAt time.Time `json:"staged_at,omitzero"`
	// StagedHash and RunningHash identify config.json's content.
	StagedHash     string         `json:"staged_hash,omitempty"`
	RunningHash    string         `json:"running_hash,omitempty"`
	RunningVersion int64          `json:"running_version"`
	Changes        []ConfigChange `json:"changes"`
	// Warnings are what `config load` noticed without refusing: a repo
	// that could not be fetched (its clone may be stale), an image whose
	// content could not be read.
	Warnings []string `json:"warnings,omitempty"`
	// Applicable says whether `config apply` would publish the snapshot:
	// no change blocks it.
	Applicable bool `json:"applicable"`
}

// ConfigApplied is `config apply`.
type ConfigApplied struct {
	ConfigVersion  int64 `json:"config_version"`
	Published      int   `json:"published"` // config.json and secrets.json changes now running
	AgentsNotified int   `json:"agents_notified"`
	// Pending are the staged changes that apply does not publish: the
	// repos' content, applied by agent build / update.
	Pending []ConfigChange `json:"pending,omitempty"`
}

// Outcomes of agent update and update-all (§17.4, §17.5).
const (
	UpdateBuilt      = "built"      // a new image; the agent is stopped and starts on it next time
	UpdateRedeployed = "redeployed" // stopped and started again on a new image, its session resumed
	UpdateSkipped    = "skipped"    // already up to date
	UpdateFailed     = "failed"
)

// UpdateResult is one agent's outcome of agent update or update-all.
type UpdateResult struct {
	AgentID string `json:"agent_id"`
	Outcome string `json:"outcome"`
	Image   string `json:"image,omitempty"`
	// Detail says why it was skipped, or what failed and what to do.
	Detail string `json:"detail,omitempty"`
	// Status is the agent's status after a redeploy.
	Status *AgentStatus `json:"status,omitempty"`
}

// UpdateEvent is one line of an update stream: progress as it happens,
// one result per agent, or an error that ends the stream.
type UpdateEvent struct {
	Progress string        `json:"progress,omitempty"`
	Result   *UpdateResult `json:"result,omitempty"`
	Error    *Error        `json:"error,omitempty"`
}
