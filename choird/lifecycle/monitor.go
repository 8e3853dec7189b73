package lifecycle

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"choir/internal/docker"
)

// watch waits for the container to exit. An exit nobody asked for is a
// crash; an exit after TERMINATE_SELF ends the session as stopped.
func (m *Manager) watch(r *Run) {
	resp, err := m.Docker.ContainerWait(context.Background(), r.ContainerID, docker.WaitNotRunning)
	r.mu.Lock()
	if err == nil {
		r.exitCode = resp.StatusCode
	} else {
		r.exitCode = -1
	}
	state, terminating := r.state, r.terminating
	r.mu.Unlock()
	close(r.exited)
	switch {
	case state == StateStopping || state == StateStarting:
		// Stop or Start is waiting on r.exited and ends the session itself.
	case terminating != "":
		m.end(r, StatusStopped, "terminated by the agent: "+terminating)
	default:
		m.end(r, StatusCrashed, fmt.Sprintf("container exited unexpectedly with code %d", r.exitCode))
	}
}

// Monitor detects agents whose heartbeats stopped (§13.1) until ctx ends.
func (m *Manager) Monitor(ctx context.Context) {
	l, _ := m.Config()
	every := time.Duration(l.Config.CrashDetectionThresholdMS) * time.Millisecond / 10
	every = min(max(every, 50*time.Millisecond), time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l, _ := m.Config()
		threshold := time.Duration(l.Config.CrashDetectionThresholdMS) * time.Millisecond
		m.mu.Lock()
		runs := make([]*Run, 0, len(m.runs))
		for _, r := range m.runs {
			runs = append(runs, r)
		}
		m.mu.Unlock()
		now := m.now()
		for _, r := range runs {
			r.mu.Lock()
			state, last := r.state, r.lastHeartbeat
			r.mu.Unlock()
			if state == StateRunning && now.Sub(last) > threshold {
				m.end(r, StatusCrashed, fmt.Sprintf("no heartbeat for %s (threshold %s)", now.Sub(last).Round(time.Millisecond), threshold))
			}
		}
	}
}

// pumpLogs copies the agent's output into its log file: its own JSON lines
// as they are, anything else (a panic, a shell's complaint) wrapped as one.
func (m *Manager) pumpLogs(r *Run) {
	w, err := m.Logs.AgentWriter(r.AgentID)
	if err != nil {
		return
	}
	s, err := m.Docker.ContainerLogs(context.Background(), r.ContainerID, docker.LogsOptions{Stdout: true, Stderr: true, Follow: true})
	if err != nil {
		return
	}
	defer s.Close()
	var mu sync.Mutex
	out := &lineWriter{w: w, mu: &mu, agent: r.AgentID, session: r.SessionID, stream: "stdout"}
	errw := &lineWriter{w: w, mu: &mu, agent: r.AgentID, session: r.SessionID, stream: "stderr"}
	s.Copy(out, errw)
	out.flush()
	errw.flush()
}

type lineWriter struct {
	w                      io.Writer
	mu                     *sync.Mutex
	agent, session, stream string
	buf                    []byte
}

func (lw *lineWriter) Write(p []byte) (int, error) {
	lw.buf = append(lw.buf, p...)
	for {
		i := bytes.IndexByte(lw.buf, '\n')
		if i < 0 {
			break
		}
		lw.emit(lw.buf[:i])
		lw.buf = lw.buf[i+1:]
	}
	return len(p), nil
}

func (lw *lineWriter) flush() {
	if len(lw.buf) > 0 {
		lw.emit(lw.buf)
		lw.buf = nil
	}
}

func (lw *lineWriter) emit(line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	var out []byte
	if jsonLine(line) {
		out = append(bytes.TrimSpace(line), '\n')
	} else {
		out, _ = json.Marshal(map[string]string{
			"time": time.Now().UTC().Format(time.RFC3339Nano), "level": "INFO", "msg": string(line),
			"source": lw.agent, "session_id": lw.session, "stream": lw.stream,
		})
		out = append(out, '\n')
	}
	lw.mu.Lock()
	lw.w.Write(out)
	lw.mu.Unlock()
}

// RemoveOrphans removes every container labelled choir.managed=true by this
// installation: at startup none of them belongs to a session this choird
// knows (§6.2 step 6). Other installations' containers on the same engine
// are left alone.
func (m *Manager) RemoveOrphans(ctx context.Context) (int, error) {
	cs, err := m.Docker.ContainerList(ctx, docker.ContainerListOptions{All: true, Filters: docker.Filters{"label": {LabelManaged + "=true", LabelInstance + "=" + m.Instance}}})
	if err != nil {
		return 0, fmt.Errorf("list containers: %w", err)
	}
	n := 0
	for _, c := range cs {
		if err := m.Docker.ContainerRemove(ctx, c.ID, docker.ContainerRemoveOptions{Force: true}); err != nil && !docker.IsNotFound(err) {
			return n, fmt.Errorf("remove orphaned container %s (agent %s): %w", shortID(c.ID), c.Labels[LabelAgent], err)
		}
		m.Log.Info("removed orphaned container", "container", shortID(c.ID), "agent_id", c.Labels[LabelAgent], "session_id", c.Labels[LabelSession])
		n++
	}
	return n, nil
}

// CrashStaleSessions marks sessions still recorded as active as crashed:
// their containers are gone (§6.2 step 7). Their leases were never taken in
// this process, so there is nothing else to release.
func (m *Manager) CrashStaleSessions(ctx context.Context) (int, error) {
	active, err := m.Store.ActiveSessions(ctx)
	if err != nil {
		return 0, fmt.Errorf("list active sessions: %w", err)
	}
	for _, s := range active {
		if err := m.Store.EndSession(ctx, s.SessionID, StatusCrashed); err != nil {
			return 0, fmt.Errorf("mark session %s crashed: %w", s.SessionID, err)
		}
		m.Log.Info("stale session marked crashed", "agent_id", s.AgentID, "session_id", s.SessionID)
	}
	return len(active), nil
}
