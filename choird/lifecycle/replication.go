package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"choir/internal/ctl"
	"choir/internal/rpc"
)

// Replication is one heartbeat's committed events and snapshot, for the
// store (§13.1, §13.4), and on the final heartbeat of a graceful stop the
// session summary (§11.8), which the store keeps with the session in the
// same transaction.
type Replication struct {
	Events      []rpc.Event
	Snapshot    json.RawMessage
	SnapshotRev int64
	Summary     json.RawMessage
	// Beat is the heartbeat's liveness, recorded in the same transaction
	// when the batch stores anything (nil: none).
	Beat *Liveness
}

// Replicated is what the store holds for the session after a Replication:
// the head of its log and its newest snapshot's revision (-1 for none).
type Replicated struct {
	Head        rpc.ChainHead
	SnapshotRev int64
}

// ReplicationRefused is the store's refusal of events that do not follow
// the session's stored log (a gap, a fork, or a hash chain that does not
// verify); nothing of them was stored. Head is where the stored log ends.
type ReplicationRefused struct {
	Head   rpc.ChainHead
	Reason string
}

func (e *ReplicationRefused) Error() string { return e.Reason }

// replication is a run's replication progress, under Run.mu.
type replication = ctl.Replication

// checkBatch checks that a heartbeat is consistent in itself: its patches
// are BaseRev+1 … NewRev and HashNew is the last one's hash.
func checkBatch(req rpc.HeartbeatReq) error {
	if req.BaseRev < 0 {
		return fmt.Errorf("base_rev is %d; revisions start at 0", req.BaseRev)
	}
	if want := req.BaseRev + int64(len(req.Patches)); req.NewRev != want {
		return fmt.Errorf("new_rev is %d but base_rev %d and %d patches end at %d", req.NewRev, req.BaseRev, len(req.Patches), want)
	}
	for i, e := range req.Patches {
		if want := req.BaseRev + 1 + int64(i); e.Rev != want {
			return fmt.Errorf("patches[%d] is revision %d; want %d (patches are base_rev+1 … new_rev, in order)", i, e.Rev, want)
		}
	}
	if n := len(req.Patches); n > 0 && req.HashNew != req.Patches[n-1].Hash {
		return fmt.Errorf("hash_new is not the hash of revision %d", req.NewRev)
	}
	return rpc.CheckSummary(req.Summary, req.Final) // rpc.Server checked it; callers may not
}

// replicate stores a heartbeat's events, snapshot and summary with its
// liveness in one transaction and answers with the acknowledged head (a
// final heartbeat is logged, saying whether it brought a summary); an idle
// heartbeat is answered from what the run knows the store holds, without
// the store (liveness.go). Or it refuses: 400 for a heartbeat
// inconsistent in itself or a summary over its bound, 409
// replication_refused (with the head to resend from) for events that do
// not follow the stored log, 503 when the store cannot take them. Nothing
// of a refused heartbeat is stored; each refusal is logged with its reason
// and counted in agent status (and the failed heartbeat shows the session
// degraded, see noteHeartbeat).
func (m *Manager) replicate(ctx context.Context, r *Run, req rpc.HeartbeatReq, now time.Time) (Replicated, error) {
	if err := checkBatch(req); err != nil {
		m.refused(r, err.Error())
		return Replicated{}, rpc.Errorf(http.StatusBadRequest, rpc.CodeBadRequest, "heartbeat: %v", err)
	}
	held, known, gen := r.heldLog()
	if idle(req) && known {
		return held, nil
	}
	summary := req.Summary
	if string(summary) == "null" {
		summary = nil
	}
	beat := &Liveness{SessionID: r.SessionID, At: now, ConfigVersion: req.ConfigVersion}
	got, err := m.Store.Replicate(ctx, r.SessionID, Replication{Events: req.Patches, Snapshot: req.Snapshot, SnapshotRev: req.SnapshotRev, Summary: summary, Beat: beat})
	var refused *ReplicationRefused
	switch {
	case errors.As(err, &refused):
		m.refused(r, refused.Reason)
		e := rpc.Errorf(http.StatusConflict, rpc.CodeReplicationRefused, "heartbeat refused, nothing stored: %s", refused.Reason)
		e.Head = &refused.Head
		return Replicated{}, e
	case err != nil:
		m.logf(r, "heartbeat not stored", "error", err.Error())
		return Replicated{}, rpc.Errorf(http.StatusServiceUnavailable, rpc.CodeUnavailable,
			"heartbeat not stored: the store failed (%v); keep the events and resend", err)
	}
	r.noteHeld(gen, got)
	if len(req.Patches) > 0 || len(req.Snapshot) > 0 || len(summary) > 0 { // the store wrote the beat with them
		r.beatStored(beat.At)
	}
	r.mu.Lock()
	after := r.repl.AckedRev
	r.repl.AckedRev, r.repl.SnapshotRev = got.Head.Rev, max(got.SnapshotRev, 0)
	r.mu.Unlock()
	if m.EventsStored != nil {
		m.EventsStored(r.AgentID, after, req.Patches)
	}
	m.logStored(r, req, got)
	if req.Final {
		m.logf(r, "final heartbeat", "base_rev", req.BaseRev, "new_rev", req.NewRev, "acked_rev", got.Head.Rev,
			"snapshot_rev", max(got.SnapshotRev, 0), "summary", len(summary) > 0, "summary_bytes", len(summary))
	}
	return got, nil
}

// logStored records a stored batch (§22.1 heartbeat revisions): the
// revisions it carried, the head acknowledged, and the snapshot when one
// was stored with it. An empty heartbeat (nothing new) is not logged.
func (m *Manager) logStored(r *Run, req rpc.HeartbeatReq, got Replicated) {
	snapshot := len(req.Snapshot) > 0 && got.SnapshotRev == req.SnapshotRev
	if len(req.Patches) == 0 && !snapshot {
		return
	}
	args := []any{"from_rev", req.BaseRev + 1, "to_rev", req.NewRev, "events", len(req.Patches), "acked_rev", got.Head.Rev}
	if snapshot {
		args = append(args, "snapshot_rev", got.SnapshotRev, "snapshot_bytes", len(req.Snapshot))
	}
	if req.Final {
		args = append(args, "final", true)
	}
	m.logf(r, "heartbeat stored", args...)
}

// refused records and logs a refused heartbeat.
func (m *Manager) refused(r *Run, reason string) {
	now := m.now()
	r.mu.Lock()
	st := &r.repl
	st.Refusals, st.LastRefusal, st.LastRefusalAt = st.Refusals+1, clipTo(reason, 300), now
	n := st.Refusals
	r.mu.Unlock()
	m.logf(r, "heartbeat refused", "reason", reason, "refusals", n)
}

// replicationStatus is the run's replication for agent status; r.mu held.
func (r *Run) replicationStatus() *ctl.Replication {
	st := r.repl
	return &st
}

func clipTo(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
