package ctl

import (
	"fmt"
	"time"
)

// Status is choird's health summary for `choirctl status`.
type Status struct {
	Healthy       bool            `json:"healthy"`
	PID           int             `json:"pid"`
	Home          string          `json:"home"`
	StartedAt     time.Time       `json:"started_at"`
	ConfigVersion int64           `json:"config_version"`
	ConfigHash    string          `json:"config_hash"`
	Resources     map[string]int  `json:"resources"`
	Transport     string          `json:"transport"`
	AgentSocket   string          `json:"agent_socket,omitempty"`
	Listen        string          `json:"listen,omitempty"`
	Steps         []Step          `json:"startup"`
	AgentsRunning int             `json:"agents_running"`
	Gateways      []GatewayStatus `json:"gateways,omitempty"`
	// Degraded says what is wrong now, one reason each (Postgres or the
	// Docker engine unreachable); Healthy is false while it is not empty.
	Degraded []string `json:"degraded,omitempty"`
	// LogArchive is what logs/archive/ holds, pruned by log_retention_days
	// and log_retention_mb.
	LogArchive LogArchive `json:"log_archive"`
}

// LogArchive counts the archived logs under logs/archive/.
type LogArchive struct {
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
}

// Step is one step of choird's startup sequence (§6.2) and how it went.
type Step struct {
	N      int    `json:"n"`
	Name   string `json:"name"`
	Status string `json:"status"` // ok, skipped, failed
	Detail string `json:"detail,omitempty"`
}

// Step statuses.
const (
	StepOK      = "ok"
	StepSkipped = "skipped"
	StepFailed  = "failed"
)

// Error is an admin API failure.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

// Errorf builds an *Error.
func Errorf(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorBody is the JSON body of an error answer.
type ErrorBody struct {
	Error *Error `json:"error"`
}
