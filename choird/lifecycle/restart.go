package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"choir/choird/lease"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/rpc"
)

// The restart policy (config.json's agents.<id>.restart). An agent whose
// policy is on-crash is started again when a session of it crashes after
// INIT_HELLO (its container died, its heartbeats stopped): never after a
// graceful or operator stop, a TERMINATE_SELF (a spent budget), a start
// that failed before INIT_HELLO, or while choird stops. The restart waits
// backoff_ms, doubling after each restart in a row up to max_backoff_ms;
// after max_restarts in a row choird gives up, says why in `agent status`
// and the DM, and leaves the agent stopped. A session that ran
// RestartStableAfter before it crashed starts the count over, and so
// does a session an operator started. Each attempt is Manager.Start with
// the crashed session's start bindings; a failed attempt counts and waits
// longer. `agent stop` cancels a pending restart (and one starting);
// StopRestarts cancels them all.

// RestartStableAfter is how long a session must run before a crash of it
// starts the count of restarts in a row over.
const RestartStableAfter = 10 * time.Minute

// Timer is a scheduled restart: a *time.Timer (see Manager.AfterFunc).
type Timer interface{ Stop() bool }

// restarter holds the restart policy's state of every agent.
type restarter struct {
	mu     sync.Mutex
	closed bool // choird is stopping: schedule nothing
	agents map[string]*restarts
	wg     sync.WaitGroup // attempts in flight
}

// restarts is one agent's: the pending restart and the count in a row.
type restarts struct {
	gen        int // bumped at each schedule: a timer of an older one does nothing
	count      int // restarts made in a row (failed ones too)
	due        time.Time
	wait       time.Duration
	timer      Timer
	attempting bool               // an attempt is in Start now
	cancel     context.CancelFunc // ends that attempt's Start
	run        *Run               // the session the last attempt started
	overrides  lease.Overrides    // the crashed session's start bindings
	session    string             // the crashed session
	lastCrash  string
	lastErr    string
	gaveUp     string
}

func (m *Manager) afterFunc(d time.Duration, f func()) Timer {
	if m.AfterFunc != nil {
		return m.AfterFunc(d, f)
	}
	return time.AfterFunc(d, f)
}

// restartPolicy is the agent's policy in the running config (zero when
// the agent is no longer configured).
func (m *Manager) restartPolicy(agentID string) config.RestartPolicy {
	l, _ := m.Config()
	return l.Config.Agents[agentID].Restart
}

// restartDelay is the wait before restart n+1 in a row: backoff doubled n
// times, at most max_backoff.
func restartDelay(p config.RestartPolicy, n int) time.Duration {
	d := time.Duration(p.BackoffMS) * time.Millisecond
	limit := time.Duration(p.MaxBackoffMS) * time.Millisecond
	for i := 0; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// overridesOf turns a session's start bindings into the overrides that
// start it the same way (as Restart does).
func overridesOf(b rpc.ResourceBindings) lease.Overrides {
	return lease.Overrides{Workspace: b.Workspace, LLM: b.LLM, VoiceProfile: b.VoiceProfile, GitIdentity: b.GitIdentity, Notion: b.Notion, Email: b.Email, DM: b.DM,
		CoreLLM: b.CoreLLM, SummaryLLM: b.SummaryLLM}
}

// restartNote is what a crash notice says of the restart policy.
type restartNote struct {
	text      string
	scheduled bool
}

// restartAfterCrash applies the restart policy to a session that crashed
// after INIT_HELLO (end calls it once the session's leases are released).
func (m *Manager) restartAfterCrash(r *Run, reason string) restartNote {
	p := m.restartPolicy(r.AgentID)
	if !p.OnCrash() {
		return restartNote{}
	}
	rs := &m.restarts
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.closed {
		m.restartLog(r.AgentID, r.SessionID, "not restarting the crashed agent: choird is stopping")
		return restartNote{}
	}
	if rs.agents == nil {
		rs.agents = map[string]*restarts{}
	}
	st := rs.agents[r.AgentID]
	if st == nil {
		st = &restarts{}
		rs.agents[r.AgentID] = st
	}
	ours := st.attempting || st.run == r
	if !ours || m.now().Sub(r.StartedAt) >= RestartStableAfter {
		st.count, st.lastErr, st.gaveUp = 0, "", "" // a new count
	}
	if st.timer != nil {
		st.timer.Stop()
	}
	st.gen++ // an attempt still in Start leaves this crash alone
	st.due, st.timer, st.run = time.Time{}, nil, nil
	st.overrides, st.session, st.lastCrash = overridesOf(r.started), r.SessionID, reason
	if st.count >= p.MaxRestarts {
		st.gaveUp = fmt.Sprintf("its session crashed after %d restarts in a row, the most its restart policy allows (max_restarts); the last crash: %s", st.count, reason)
		m.restartLog(r.AgentID, r.SessionID, "not restarting the crashed agent: max_restarts reached", "restarts", st.count, "max_restarts", p.MaxRestarts)
		return restartNote{text: fmt.Sprintf("choird restarted it %d times in a row, the most its restart policy allows, so it stays stopped. ", st.count)}
	}
	wait := m.scheduleRestart(r.AgentID, st, p)
	m.restartLog(r.AgentID, r.SessionID, "restart scheduled after a crash", "in", wait.String(), "restart", st.count+1, "max_restarts", p.MaxRestarts)
	return restartNote{scheduled: true, text: fmt.Sprintf("Its restart policy starts it again in %s (restart %d of at most %d in a row); `choirctl agent stop %s` cancels that.",
		wait, st.count+1, p.MaxRestarts, r.AgentID)}
}

// scheduleRestart arms the next attempt, with rs.mu held.
func (m *Manager) scheduleRestart(agentID string, st *restarts, p config.RestartPolicy) time.Duration {
	wait := restartDelay(p, st.count)
	st.gen++
	gen := st.gen
	st.wait, st.due = wait, m.now().Add(wait)
	st.timer = m.afterFunc(wait, func() { m.attemptRestart(agentID, gen) })
	return wait
}

// restartAttemptKey marks the context of a restart's own Start, which
// must not cancel the restart it is.
type restartAttemptKey struct{}

// attemptRestart runs when a scheduled restart is due: it starts the
// agent with the crashed session's bindings, and on failure schedules the
// next attempt or gives up.
func (m *Manager) attemptRestart(agentID string, gen int) {
	rs := &m.restarts
	rs.mu.Lock()
	st := rs.agents[agentID]
	if rs.closed || st == nil || st.gen != gen {
		rs.mu.Unlock()
		return // cancelled, or superseded by a later crash
	}
	st.due, st.timer = time.Time{}, nil
	p := m.restartPolicy(agentID)
	if !p.OnCrash() {
		delete(rs.agents, agentID)
		rs.mu.Unlock()
		m.restartLog(agentID, st.session, "pending restart dropped: the agent's restart policy is off now")
		return
	}
	if m.run(agentID) != nil {
		delete(rs.agents, agentID)
		rs.mu.Unlock()
		m.restartLog(agentID, st.session, "pending restart dropped: the agent was started meanwhile")
		return
	}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), restartAttemptKey{}, true))
	st.attempting, st.cancel = true, cancel
	st.count++
	n, o, crashed := st.count, st.overrides, st.session
	rs.wg.Add(1)
	rs.mu.Unlock()
	defer rs.wg.Done()
	defer cancel()

	m.restartLog(agentID, crashed, "restarting the agent after its session crashed", "restart", n, "max_restarts", p.MaxRestarts)
	started, err := m.Start(ctx, agentID, o)

	rs.mu.Lock()
	if rs.agents[agentID] == st {
		st.attempting, st.cancel = false, nil
	}
	if rs.closed || rs.agents[agentID] != st || st.gen != gen {
		rs.mu.Unlock()
		return // cancelled meanwhile (the stop ends what Start began), or the new session crashed already
	}
	switch {
	case err == nil:
		st.run, st.lastErr = m.run(agentID), ""
		rs.mu.Unlock()
		m.restartLog(agentID, started.SessionID, "agent restarted after a crash", "crashed_session_id", crashed, "restart", n)
		return
	case errors.Is(err, lease.ErrAlreadyRunning):
		delete(rs.agents, agentID)
		rs.mu.Unlock()
		m.restartLog(agentID, crashed, "pending restart dropped: the agent was started meanwhile")
		return
	}
	st.lastErr = err.Error()
	if n >= p.MaxRestarts {
		st.gaveUp = fmt.Sprintf("restart %d of %d in a row failed, the most its restart policy allows (max_restarts): %v", n, p.MaxRestarts, err)
		dm := o.DM
		rs.mu.Unlock()
		m.restartLog(agentID, crashed, "restart failed; giving up: max_restarts reached", "restart", n, "error", err.Error())
		m.tellGaveUp(agentID, dm, n, err)
		return
	}
	wait := m.scheduleRestart(agentID, st, p)
	rs.mu.Unlock()
	m.restartLog(agentID, crashed, "restart failed; trying again", "restart", n, "in", wait.String(), "error", err.Error())
}

// tellGaveUp lets the agent's DM know that its restarts failed.
func (m *Manager) tellGaveUp(agentID, dm string, n int, err error) {
	if m.Outbox == nil || dm == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	text := fmt.Sprintf("%s crashed, and choird could not start it again: %d restarts in a row failed, the most its restart policy allows, so it stays stopped. The last failure: %v. "+
		"Start it again with /start %s, or `choirctl agent start %s`, once that is fixed.", agentID, n, err, agentID, agentID)
	if derr := m.Outbox.Deliver(ctx, agentID, dm, rpc.DMSend{Kind: rpc.DMError, Text: text}); derr != nil {
		m.Log.Info("the restart notice did not reach the DM", "agent_id", agentID, "error", derr.Error())
	}
}

// cancelRestart forgets the agent's restart state (an operator stopped or
// started it): a pending restart is cancelled, one in Start is ended. It
// reports whether one was pending or starting.
func (m *Manager) cancelRestart(agentID, why string) bool {
	rs := &m.restarts
	rs.mu.Lock()
	st := rs.agents[agentID]
	delete(rs.agents, agentID)
	rs.mu.Unlock()
	if st == nil {
		return false
	}
	if st.timer != nil {
		st.timer.Stop()
	}
	if st.cancel != nil {
		st.cancel()
	}
	pending := !st.due.IsZero() || st.attempting
	if pending {
		m.restartLog(agentID, st.session, "pending restart cancelled", "by", why)
	}
	return pending
}

// StopRestarts cancels every pending restart, ends the attempts in
// Start, waits for them to return, and schedules no more: choird calls it
// when it begins to stop, before it stops the agents.
func (m *Manager) StopRestarts() {
	rs := &m.restarts
	rs.mu.Lock()
	rs.closed = true
	agents := rs.agents
	rs.agents = nil
	rs.mu.Unlock()
	for id, st := range agents {
		if st.timer != nil {
			st.timer.Stop()
		}
		if st.cancel != nil {
			st.cancel()
		}
		if !st.due.IsZero() || st.attempting {
			m.restartLog(id, st.session, "pending restart cancelled", "by", "choird stopping")
		}
	}
	rs.wg.Wait()
}

// restartStatus is the agent's restart policy as `agent status` shows
// it; r is its running session, if any.
func (m *Manager) restartStatus(agentID string, r *Run) *ctl.RestartStatus {
	p := m.restartPolicy(agentID)
	out := &ctl.RestartStatus{Policy: p.Policy}
	if out.Policy == "" {
		out.Policy = config.RestartOff
	}
	if p.OnCrash() {
		out.MaxRestarts = p.MaxRestarts
	}
	rs := &m.restarts
	rs.mu.Lock()
	defer rs.mu.Unlock()
	st := rs.agents[agentID]
	if st == nil || r != nil && !st.attempting && st.run != r {
		return out // nothing, or a session someone else started
	}
	out.Restarts, out.NextAt, out.Restarting = st.count, st.due, st.attempting
	if !st.due.IsZero() {
		out.Backoff = st.wait.String()
	}
	out.LastCrash, out.LastError, out.GaveUp = st.lastCrash, st.lastErr, st.gaveUp
	if r != nil && st.run == r && m.now().Sub(r.StartedAt) >= RestartStableAfter {
		out.Restarts = 0 // it has run long enough: a crash now starts over
	}
	return out
}

// restartLog logs to choird's log and the agent's own, as logf does.
func (m *Manager) restartLog(agentID, sessionID, msg string, args ...any) {
	m.logf(&Run{AgentID: agentID, SessionID: sessionID}, msg, args...)
}
