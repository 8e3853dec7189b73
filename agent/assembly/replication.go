package assembly

import (
	"encoding/json"
	"time"

	"choir/internal/rpc"
)

// What heartbeats replicate (agent/session): the arbiter's log, which
// keeps every committed event, and the lanes' working-memory snapshot.

func (rt *Runtime) events(after int64, max int) []rpc.Event {
	if a := rt.arbiter(); a != nil {
		return a.EventsAfter(after, max)
	}
	return nil
}

func (rt *Runtime) head() int64 {
	if a := rt.arbiter(); a != nil {
		rev, _ := a.Head()
		return rev
	}
	return 0
}

func (rt *Runtime) hashAt(rev int64) string {
	if a := rt.arbiter(); a != nil {
		h, _ := a.HashAt(rev)
		return h
	}
	return ""
}

// snapshotCadence is the config's snapshot_every_revs and
// snapshot_interval_ms.
func (rt *Runtime) snapshotCadence() (int64, time.Duration) {
	t := rt.dynamic().Tunables
	return int64(t.SnapshotEveryRevs), time.Duration(t.SnapshotIntervalMS) * time.Millisecond
}

// snapshotTries bounds the attempts at a snapshot while the log moves.
const snapshotTries = 3

// snapshot takes the lanes' working memory as §13.4's snapshot (exactly
// its members, rpc.Snapshot) and the revision it describes: the log's head,
// unchanged from before the lanes were read to after, so no event
// committed while they were read. A lane's state may lag the last events
// it committed (it updates after the commit returns): recovery rebuilds
// each window from the log at its event_window_boundary, not from the
// snapshot. When the log keeps moving, there is no snapshot this time.
func (rt *Runtime) snapshot() (int64, json.RawMessage, bool) {
	rt.mu.Lock()
	ln, arb := rt.lane, rt.arb
	rt.mu.Unlock()
	if ln == nil || arb == nil {
		return 0, nil, false
	}
	for range snapshotTries {
		before, _ := arb.Head()
		raw, err := ln.Snapshot()
		if err != nil {
			rt.log.Warn("snapshot failed", "error", err.Error())
			return 0, nil, false
		}
		if after, _ := arb.Head(); after != before {
			continue
		}
		doc, err := spec134(raw)
		if err != nil {
			rt.log.Warn("snapshot failed", "error", err.Error())
			return 0, nil, false
		}
		return before, doc, true
	}
	return 0, nil, false
}

// spec134 checks that the lanes' snapshot is §13.4's: exactly its
// members, none null (what choird refuses otherwise).
func spec134(raw json.RawMessage) (json.RawMessage, error) {
	if _, err := rpc.ParseSnapshot(raw); err != nil {
		return nil, err
	}
	return raw, nil
}
