package lifecycle

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"choir/internal/ctl"
	"choir/internal/docker"
	"choir/internal/rpc"
)

// StopGraceExtra is added to the session-summary timeout to bound how long a
// graceful stop waits for the agent to finish before it is stopped by force.
const StopGraceExtra = 15 * time.Second

// Stop ends an agent's session gracefully (§17.2): choird pushes shutdown,
// the agent finishes its safe point, flushes a final heartbeat and says
// TERMINATE_SELF; choird then removes the container and releases the leases.
// An agent that does not exit in time is stopped by the engine (SIGTERM,
// then SIGKILL).
//
// A restart the restart policy has pending (or is starting) is cancelled
// first: stopping an agent that waits to be restarted is not an error.
func (m *Manager) Stop(ctx context.Context, agentID string) error {
	cancelled := m.cancelRestart(agentID, "agent stop")
	lk := m.agentLock(agentID)
	lk.Lock()
	defer lk.Unlock()
	r := m.run(agentID)
	if r == nil {
		if cancelled {
			return nil
		}
		return fmt.Errorf("%s: %w", agentID, ErrNotRunning)
	}
	m.stop(ctx, r)
	return nil
}

// stop is Stop with the agent's lock held.
func (m *Manager) stop(ctx context.Context, r *Run) {
	r.setState(StateStopping)
	m.Sessions.Publish(r.SessionID, "shutdown", map[string]string{"reason": "agent stop"})
	l, _ := m.Config()
	grace := time.Duration(l.Config.SessionSummaryTimeoutMS)*time.Millisecond + StopGraceExtra
	t := time.NewTimer(grace)
	defer t.Stop()
	reason := "stopped"
	select {
	case <-r.exited:
		r.mu.Lock()
		if r.terminating == "" {
			reason = fmt.Sprintf("stopped, but the agent exited with code %d before its graceful stop ended (TERMINATE_SELF): no session summary, and what it committed after its last stored heartbeat is lost", r.exitCode)
		}
		r.mu.Unlock()
	case <-t.C:
		m.logf(r, "agent did not exit after shutdown; stopping its container", "grace", grace.String())
		reason = "stopped, but the agent did not exit within " + grace.String() + " of the shutdown: its container was stopped, so what it committed after its last stored heartbeat may be lost"
	case <-ctx.Done():
		reason = "stopped before the agent's graceful stop ended (the stop was cancelled): its container was stopped"
	}
	m.end(r, StatusStopped, reason)
}

// isEnding says whether a session of the agent is still being ended.
func (m *Manager) isEnding(agentID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ending[agentID] > 0
}

func (r *Run) setState(s string) {
	r.mu.Lock()
	r.state = s
	r.mu.Unlock()
}

func (r *Run) getState() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state
}

// end finishes a session once, whatever ended it: the token is revoked, the
// container removed, the session recorded, the leases released, the agent's
// log archived. Every step runs even if an earlier one failed.
func (m *Manager) end(r *Run, status, reason string) {
	m.mu.Lock()
	if m.sessions[r.SessionID] != r {
		m.mu.Unlock()
		return // already ended
	}
	delete(m.sessions, r.SessionID)
	if m.runs[r.AgentID] == r {
		delete(m.runs, r.AgentID)
	}
	// Until its leases are released, agent status says stopping, not
	// stopped: a start before then is refused as already running.
	if m.ending == nil {
		m.ending = map[string]int{}
	}
	if r.perf == nil { // a run session holds no lease of the agent's
		m.ending[r.AgentID]++
	}
	m.mu.Unlock()
	// A session that got as far as INIT_HELLO may have had a user waiting.
	wasRunning := r.getState() != StateStarting

	m.Sessions.Close(r.SessionID)
	if r.socket != nil {
		if err := r.socket.Close(); err != nil {
			m.logf(r, "close the agent's socket failed", "error", err.Error())
		}
	}
	if r.ContainerID != "" {
		m.endBox(r, status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m.recordLiveness(ctx, []*Run{r}) // its last heartbeat, before the end (liveness.go)
	if err := m.Store.EndSession(ctx, r.SessionID, status, reason); err != nil {
		m.logf(r, "record the session's end failed", "error", err.Error())
	}
	if r.perf != nil {
		m.endedRun(r, status, reason) // run_session.go: nothing of the agent's to release or tell
		return
	}
	released := m.Leases.Release(r.AgentID)
	m.mu.Lock()
	if m.ending[r.AgentID]--; m.ending[r.AgentID] <= 0 {
		delete(m.ending, r.AgentID)
	}
	m.mu.Unlock()
	level := "session ended"
	if status == StatusCrashed {
		level = "session crashed"
	}
	m.logf(r, level, "status", status, "reason", reason, "leases_released", len(released))
	if err := m.Logs.ArchiveAgent(r.AgentID); err != nil {
		m.Log.Warn("archive agent log failed", "agent_id", r.AgentID, "error", err.Error())
	}
	var restart restartNote
	if status == StatusCrashed && wasRunning {
		restart = m.restartAfterCrash(r, reason) // with the leases free for it
	}
	m.tell(ctx, r, status, reason, wasRunning, restart)
	if m.SessionClosed != nil {
		go m.SessionClosed(r.AgentID, r.SessionID, status)
	}
}

// SessionEnds is told when a session ends, after the DM heard about it:
// the console ends the chats that wait on the agent (an Outbox may have
// it).
type SessionEnds interface {
	SessionEnded(ctx context.Context, agentID string, end ctl.SessionEnd)
}

// tell lets the agent's DM know that a running session crashed, and how to
// go on, then tells whoever follows the agent that its session ended.
// A restart the restart policy scheduled is said instead of how to start.
func (m *Manager) tell(ctx context.Context, r *Run, status, reason string, wasRunning bool, restart restartNote) {
	if m.Outbox == nil {
		return
	}
	if status == StatusCrashed && wasRunning {
		text := fmt.Sprintf("%s stopped unexpectedly (%s): whatever it was doing was interrupted. ", r.AgentID, reason) + restart.text
		if !restart.scheduled {
			text += resumeHint(r.AgentID)
		}
		if err := m.Outbox.Deliver(ctx, r.AgentID, r.bindings().DM, rpc.DMSend{Kind: rpc.DMError, Text: text}); err != nil {
			m.logf(r, "the crash notice did not reach the DM", "error", err.Error())
		}
	}
	if ends, ok := m.Outbox.(SessionEnds); ok {
		ends.SessionEnded(ctx, r.AgentID, ctl.SessionEnd{SessionID: r.SessionID, Status: status, Reason: reason})
	}
}

// logf logs to choird's log and to the agent's own log.
func (m *Manager) logf(r *Run, msg string, args ...any) {
	args = append([]any{"agent_id", r.AgentID, "session_id", r.SessionID}, args...)
	m.Log.Info(msg, args...)
	if al, err := m.Logs.Agent(r.AgentID); err == nil {
		al.Info(msg, args[2:]...)
	}
}

// logTail returns the container's last lines for an error message.
func (m *Manager) logTail(id string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := m.runtime().Logs(ctx, id, docker.LogsOptions{Stdout: true, Stderr: true, Tail: "8"})
	if err != nil {
		return ""
	}
	defer s.Close()
	var out bytes.Buffer
	s.Copy(&out, &out)
	text := strings.TrimSpace(out.String())
	if text == "" {
		return ""
	}
	return "; its last output:\n" + text
}

// jsonLine reports whether a line is one JSON object (an agent log line).
func jsonLine(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 1 && b[0] == '{' && json.Valid(b)
}

// resumeHint tells a DM how to start an interrupted agent again, and that
// the start resumes its session.
func resumeHint(agentID string) string {
	return fmt.Sprintf("Start it again with /start %s, or `choirctl agent start %s`: it resumes this session where it was last saved (/start %s fresh begins a new one).", agentID, agentID, agentID)
}

// endBox stops the session's box if it still runs (SIGTERM, SIGKILL after
// 10 s) and removes it, within a minute and at most MaxBoxEnds at once; a
// box it cannot remove is left for the monitor's sweep.
func (m *Manager) endBox(r *Run, status string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if !m.boxPlace(ctx) {
		m.logf(r, "the engine is busy ending other boxes; removing this one once it answers", "container", shortID(r.ContainerID))
		m.leaveBehind(r.ContainerID, r.AgentID)
		return
	}
	defer m.freeBoxPlace()
	select {
	case <-r.exited:
	default:
		if r.Offline {
			m.readNet(r) // the last count, before the namespace goes (netattempts.go)
		}
		if err := m.runtime().Stop(ctx, r.ContainerID, 10*time.Second); err != nil && !isGone(err) {
			m.logf(r, "stop container failed", "error", err.Error())
		} else {
			m.logf(r, "agent container stopped by choird", "container", shortID(r.ContainerID), "status", status)
		}
	}
	if err := m.runtime().Remove(ctx, r.ContainerID); err != nil && !isGone(err) {
		m.logf(r, "remove container failed; removing it once the engine answers", "error", err.Error())
		m.leaveBehind(r.ContainerID, r.AgentID)
	} else {
		m.logf(r, "agent container removed", "container", shortID(r.ContainerID))
	}
}

// MaxBoxEnds is how many boxes the lifecycle stops and removes at once.
// Sessions end together (choird's stop ends them all at once, so that it
// takes as long as the slowest agent's summary), but a thousand stops and
// removals sent to Docker 20.10 at the same moment left containerd without
// the containers' shims while dockerd still listed them as up, and the
// engine had to be restarted (issue 19's 1,000-agent run): the engine gets
// them a few at a time. A box that finds no place within its end's 60 s
// is left for the monitor's sweep, or the next start's RemoveOrphans.
const MaxBoxEnds = 16

// boxPlace waits for a place to stop and remove a box; false when ctx
// ended first.
func (m *Manager) boxPlace(ctx context.Context) bool {
	m.boxOpsOne.Do(func() { m.boxOps = make(chan struct{}, MaxBoxEnds) })
	select {
	case m.boxOps <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (m *Manager) freeBoxPlace() { <-m.boxOps }
