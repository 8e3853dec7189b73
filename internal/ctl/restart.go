package ctl

import "time"

// RestartStatus is an agent's restart policy (config.json's
// agents.<id>.restart) and what it has done, as `agent status` shows it.
type RestartStatus struct {
	Policy      string `json:"policy"` // off or on-crash
	MaxRestarts int    `json:"max_restarts,omitempty"`
	// Restarts counts the restarts made in a row (a session that runs
	// long enough starts the count over).
	Restarts int `json:"restarts"`
	// NextAt is when the pending restart runs, after Backoff; zero when
	// none is pending.
	NextAt  time.Time `json:"next_at,omitzero"`
	Backoff string    `json:"backoff,omitempty"`
	// Restarting says a restart is starting the agent now.
	Restarting bool   `json:"restarting,omitempty"`
	LastCrash  string `json:"last_crash,omitempty"` // why the last session crashed
	LastError  string `json:"last_error,omitempty"` // why the last restart failed
	// GaveUp says why choird stopped restarting the agent; it stays
	// stopped until someone starts it.
	GaveUp string `json:"gave_up,omitempty"`
}
