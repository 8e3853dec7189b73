package ctl

import "time"

// Replication is how far a session's heartbeats have replicated its log
// (`choirctl agent status`): the newest revision choird holds, its newest
// snapshot's revision, and the heartbeats choird refused because their
// events did not follow the stored log (a gap, or a chain that does not
// verify): nothing of those was stored, and the agent resends from
// AckedRev+1. Degraded says whether heartbeats are being refused now.
type Replication struct {
	AckedRev      int64     `json:"acked_rev"`
	SnapshotRev   int64     `json:"snapshot_rev,omitempty"`
	Refusals      int       `json:"refusals,omitempty"`
	LastRefusal   string    `json:"last_refusal,omitempty"`
	LastRefusalAt time.Time `json:"last_refusal_at,omitzero"`
}
