package lifecycle

import (
	"context"
	"fmt"
	"time"

	"choir/internal/rpc"
)

// AfterStart tells each agent's DM whose session choird found running
// when it started (choird had stopped, or died, under it: §6.2 step 7,
// CrashStaleSessions) that the session was interrupted, and applies the
// restart policy to it as to any crash: an on-crash agent is started
// again after its backoff and resumes its session. choird calls it once
// it serves its sockets, so a restart finds everything ready.
func (m *Manager) AfterStart(ctx context.Context) {
	m.mu.Lock()
	stale := m.stale
	m.stale = nil
	m.mu.Unlock()
	for _, s := range stale {
		if s.Kind == SessionRun {
			continue // a run's director learns it from the run's status, not the DM; it is not restarted
		}
		r := &Run{AgentID: s.AgentID, SessionID: s.SessionID, StartedAt: s.StartedAt, Bindings: s.Bindings, started: s.Bindings}
		const reason = "choird stopped while the session ran"
		note := m.restartAfterCrash(r, reason)
		if m.Outbox == nil || s.Bindings.DM == "" {
			continue
		}
		text := fmt.Sprintf("choird restarted while %s was running: whatever it was doing was interrupted. ", s.AgentID) + note.text
		if !note.scheduled {
			text += resumeHint(s.AgentID)
		}
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err := m.Outbox.Deliver(dctx, s.AgentID, s.Bindings.DM, rpc.DMSend{Kind: rpc.DMError, Text: text}); err != nil {
			m.Log.Info("the interruption notice did not reach the DM", "agent_id", s.AgentID, "session_id", s.SessionID, "error", err.Error())
		}
		cancel()
	}
}
