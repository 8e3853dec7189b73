package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"
)

// RecordRunning records again, as active, each session this choird runs
// that the store does not hold as active: after Postgres came back without
// choird's schemas (a server replaced, or a restore without them) and
// Bootstrap made them again, the running sessions' rows are gone. Each is
// recorded as it was at start (same session id, lease id, bindings,
// leases and image) but as a new session, with an empty log: the agent's
// next heartbeat is refused naming head 0, and the agent resends its log
// from revision 1. Sessions being stopped are left alone (their end is
// being recorded). It returns how many sessions it recorded; a session it
// could not record is named in the error, and the others are still tried.
func (m *Manager) RecordRunning(ctx context.Context) (int, error) {
	active, err := m.Store.ActiveSessions(ctx)
	if err != nil {
		return 0, fmt.Errorf("record the running sessions again: list the active sessions: %w", err)
	}
	stored := make(map[string]bool, len(active))
	for _, s := range active {
		stored[s.SessionID] = true
	}
	m.mu.Lock()
	runs := make([]*Run, 0, len(m.sessions))
	for _, r := range m.sessions {
		runs = append(runs, r)
	}
	m.mu.Unlock()
	sort.Slice(runs, func(i, j int) bool { return runs[i].StartedAt.Before(runs[j].StartedAt) })
	n := 0
	var errs []error
	for _, r := range runs {
		r.mu.Lock()
		state := r.state
		r.mu.Unlock()
		if stored[r.SessionID] || state == StateStopping {
			continue
		}
		r.mu.Lock()
		r.forgetHeld() // its next heartbeat asks the store, which holds an empty log
		r.beatRecorded = time.Time{}
		r.mu.Unlock()
		rec := SessionRecord{SessionID: r.SessionID, AgentID: r.AgentID, LeaseID: r.SessionID, Status: StatusActive,
			StartedAt: r.StartedAt, Bindings: r.bindings(), Leases: r.Resources, Image: r.Image, Kind: r.kind(), RunID: r.runID(), Instance: m.Instance}
		if err := m.Store.CreateSession(ctx, rec); err != nil {
			m.logf(r, "could not record the running session again", "error", err.Error())
			errs = append(errs, fmt.Errorf("session %s of %s: %w", r.SessionID, r.AgentID, err))
			continue
		}
		n++
		m.logf(r, "running session recorded again: the store had lost it; the agent resends its log from revision 1")
	}
	if err := errors.Join(errs...); err != nil {
		return n, fmt.Errorf("record the running sessions again: %w", err)
	}
	return n, nil
}
