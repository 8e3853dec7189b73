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
	"choir/internal/metrics"
	"choir/internal/rpc"
)

// Engine retry bounds: how soon and how often the lifecycle asks an engine
// it lost again.
const (
	DefaultEngineRetry = 200 * time.Millisecond
	MaxEngineRetry     = 5 * time.Second
)

// watch waits for the container to exit. An exit nobody asked for is a
// crash; an exit after TERMINATE_SELF ends the session as stopped. An
// engine that stops answering is not an exit: see waitExit.
func (m *Manager) watch(r *Run) {
	code, gone := m.waitExit(r)
	r.mu.Lock()
	r.exitCode = code
	state, terminating := r.state, r.terminating
	r.mu.Unlock()
	close(r.exited)
	switch {
	case state == StateStopping || state == StateStarting:
		// Stop or Start is waiting on r.exited and ends the session itself.
	case terminating != "":
		m.end(r, StatusStopped, "terminated by the agent: "+terminating)
	case gone:
		m.end(r, StatusCrashed, "the container is gone (removed while the Docker engine was not answering?)")
	default:
		m.end(r, StatusCrashed, fmt.Sprintf("container exited unexpectedly with code %d", code))
	}
}

// waitExit waits until the container is no longer running and returns its
// exit code, or gone when the engine no longer knows it. A wait that fails
// otherwise (the engine restarting, its socket unreachable) says nothing
// about the container: choird asks the engine again, with backoff, and
// reconciles once it answers: the container still runs (the wait starts
// over), has exited (its code), or is gone. Meanwhile `agent status` says
// the engine is lost. It gives up when the session has ended by another
// path.
func (m *Manager) waitExit(r *Run) (code int64, gone bool) {
	first := m.EngineRetry
	if first <= 0 {
		first = DefaultEngineRetry
	}
	for {
		code, err := m.runtime().Wait(context.Background(), r.ContainerID)
		switch {
		case err == nil:
			m.engineAnswers(r)
			return code, false
		case isGone(err):
			m.engineAnswers(r)
			return -1, true
		}
		for backoff := first; ; backoff = min(2*backoff, MaxEngineRetry) {
			if m.bySession(r.SessionID) != r {
				return -1, false // ended meanwhile: nothing to reconcile
			}
			m.engineLost(r, err)
			t := time.NewTimer(backoff)
			<-t.C
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			c, ierr := m.runtime().Inspect(ctx, r.ContainerID)
			cancel()
			if isGone(ierr) {
				m.engineAnswers(r)
				return -1, true
			}
			if ierr != nil {
				err = ierr
				continue
			}
			m.engineAnswers(r)
			if !c.Running {
				return c.ExitCode, false // it exited while nobody could see
			}
			break // still there: wait on it again
		}
	}
}

// engineLost notes that the engine did not answer about r's container;
// the first time is logged.
func (m *Manager) engineLost(r *Run, err error) {
	r.mu.Lock()
	first := r.engineLost.IsZero()
	if first {
		r.engineLost = m.now()
	}
	r.engineWhy = err.Error()
	r.mu.Unlock()
	if first {
		m.logf(r, "the Docker engine does not answer about the container; the session goes on, asking again", "error", err.Error())
	}
}

// engineAnswers clears engineLost, logging the recovery.
func (m *Manager) engineAnswers(r *Run) {
	r.mu.Lock()
	lost := r.engineLost
	r.engineLost, r.engineWhy = time.Time{}, ""
	r.mu.Unlock()
	if !lost.IsZero() {
		m.logf(r, "the Docker engine answers again", "lost_for", m.now().Sub(lost).Round(time.Millisecond).String())
	}
}

// Handler is the Manager as the agent protocol server calls it: each verb
// as the Manager answers it, and the outcome of every heartbeat noted on
// its session, so a session whose heartbeats are refused or fail (its
// events not stored) shows as degraded in `agent status` until one passes.
func (m *Manager) Handler() rpc.ControlPlaneHandler { return watched{m} }

type watched struct{ *Manager }

func (w watched) HandleHeartbeat(ctx context.Context, req rpc.HeartbeatReq) (rpc.HeartbeatResp, error) {
	resp, err := w.Manager.HandleHeartbeat(ctx, req)
	if r, cerr := w.caller(ctx); cerr == nil {
		w.noteHeartbeat(r, err)
	}
	return resp, err
}

// noteHeartbeat records a heartbeat's outcome; the first refusal and the
// recovery are logged.
func (m *Manager) noteHeartbeat(r *Run, err error) {
	r.mu.Lock()
	was := r.hbRefused
	if err == nil {
		r.hbRefused, r.hbRefusedWhy = 0, ""
	} else {
		if r.hbRefused == 0 {
			r.hbRefusedSince = m.now()
		}
		r.hbRefused++
		r.hbRefusedWhy = err.Error()
	}
	r.mu.Unlock()
	switch {
	case err != nil && was == 0:
		m.logf(r, "heartbeat refused; the session shows degraded until one passes", "error", err.Error())
	case err == nil && was > 0:
		m.logf(r, "heartbeats accepted again", "refused_before", was)
	}
}

// sweepLeftovers removes the containers whose removal failed (the engine
// was not answering when their session ended).
func (m *Manager) sweepLeftovers() {
	m.mu.Lock()
	left := make(map[string]string, len(m.leftovers))
	for id, agent := range m.leftovers {
		left[id] = agent
	}
	m.mu.Unlock()
	for id, agent := range left {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := m.runtime().Remove(ctx, id)
		cancel()
		if err != nil && !isGone(err) {
			continue
		}
		m.mu.Lock()
		delete(m.leftovers, id)
		m.mu.Unlock()
		m.Log.Info("removed a container left behind", "container", shortID(id), "agent_id", agent)
	}
}

// leaveBehind remembers a container whose removal failed; the monitor
// removes it once the engine answers.
func (m *Manager) leaveBehind(id, agent string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.leftovers == nil {
		m.leftovers = map[string]string{}
	}
	m.leftovers[id] = agent
}

// Monitor detects agents whose heartbeats stopped (§13.1) until ctx ends,
// from the heartbeats choird holds in memory, and records them in the
// store every LivenessEvery (and as it stops).
func (m *Manager) Monitor(ctx context.Context) {
	l, _ := m.Config()
	every := time.Duration(l.Config.CrashDetectionThresholdMS) * time.Millisecond / 10
	every = min(max(every, 50*time.Millisecond), time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	defer m.flushLiveness()
	recorded, netRead := m.now(), m.now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m.sweepLeftovers()
		if now := m.now(); now.Sub(recorded) >= m.livenessEvery() {
			recorded = now
			m.recordLiveness(ctx, m.allRuns()) // liveness.go
		}
		if now := m.now(); now.Sub(netRead) >= NetAttemptsEvery {
			netRead = now
			m.watchNetAttempts() // netattempts.go
		}
		l, _ := m.Config()
		threshold := time.Duration(l.Config.CrashDetectionThresholdMS) * time.Millisecond
		m.mu.Lock()
		runs := make([]*Run, 0, len(m.sessions)) // run sessions too (run_session.go)
		for _, r := range m.sessions {
			runs = append(runs, r)
		}
		m.mu.Unlock()
		now := m.now()
		for _, r := range runs {
			r.mu.Lock()
			state, last, beating := r.state, r.lastHeartbeat, r.beating
			r.mu.Unlock()
			// A heartbeat still being served (its events waiting on a
			// slow Postgres) is a sign of life: the agent waits on choird.
			if state == StateRunning && beating == 0 && now.Sub(last) > threshold {
				metrics.HeartbeatsMissed.With(r.AgentID).Inc()
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
	var mu sync.Mutex
	var last time.Time // the stamp of the newest line written
	out := &lineWriter{w: w, mu: &mu, agent: r.AgentID, session: r.SessionID, stream: "stdout", last: &last}
	errw := &lineWriter{w: w, mu: &mu, agent: r.AgentID, session: r.SessionID, stream: "stderr", last: &last}
	retry := m.EngineRetry
	if retry <= 0 {
		retry = DefaultEngineRetry
	}
	// The stream ends when the container exits, or when the engine stops
	// answering (restarted, its socket gone): then it is opened again from
	// the newest line's stamp once the engine answers, and the lines already
	// written are skipped, until the session has ended.
	for wait := retry; ; wait = min(2*wait, MaxEngineRetry) {
		mu.Lock()
		since := last
		mu.Unlock()
		s, err := m.runtime().Logs(context.Background(), r.ContainerID, docker.LogsOptions{Stdout: true, Stderr: true, Follow: true, Timestamps: true, Since: since})
		if err == nil {
			s.Copy(out, errw)
			s.Close()
			out.flush()
			errw.flush()
			wait = retry
		} else if isGone(err) {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-r.exited:
			t.Stop()
			if err == nil {
				return // the stream ended with the container: all was read
			}
			// One more read after the exit: the last lines since the
			// engine went away.
			if s, err := m.runtime().Logs(context.Background(), r.ContainerID, docker.LogsOptions{Stdout: true, Stderr: true, Timestamps: true, Since: since}); err == nil {
				s.Copy(out, errw)
				s.Close()
				out.flush()
				errw.flush()
			}
			return
		case <-t.C:
		}
		if m.bySession(r.SessionID) != r {
			return
		}
	}
}

type lineWriter struct {
	w                      io.Writer
	mu                     *sync.Mutex
	agent, session, stream string
	buf                    []byte
	last                   *time.Time // with mu: the engine's stamp of the newest line written
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
	// The engine stamps every line (Timestamps): a line at or before the
	// newest one written was read before the stream was opened again.
	var stamp time.Time
	if ts, rest, ok := bytes.Cut(line, []byte{' '}); ok {
		if t, err := time.Parse(time.RFC3339Nano, string(ts)); err == nil {
			stamp, line = t, rest
		}
	}
	if !stamp.IsZero() && lw.last != nil {
		lw.mu.Lock()
		seen := !stamp.After(*lw.last)
		if !seen {
			*lw.last = stamp
		}
		lw.mu.Unlock()
		if seen {
			return
		}
	}
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
	labels := map[string]string{LabelManaged: "true", LabelInstance: m.Instance}
	cs, err := m.runtime().List(ctx, labels)
	if err != nil {
		return 0, fmt.Errorf("list containers: %w", err)
	}
	n := 0
	for _, c := range cs {
		if err := m.runtime().Remove(ctx, c.ID); err != nil && !isGone(err) {
			return n, fmt.Errorf("remove orphaned container %s (agent %s): %w", shortID(c.ID), c.Labels[LabelAgent], err)
		}
		m.Log.Info("removed orphaned container", "container", shortID(c.ID), "agent_id", c.Labels[LabelAgent], "session_id", c.Labels[LabelSession], "run_id", c.Labels[LabelRun])
		n++
	}
	if sw, ok := m.runtime().(Sweeper); ok {
		swept, err := sw.Sweep(ctx, labels)
		if err != nil {
			return n, fmt.Errorf("remove what boxes never made left behind: %w", err)
		}
		if swept > 0 {
			m.Log.Info("removed leftovers of boxes never made", "count", swept)
		}
	}
	return n, nil
}

// CrashStaleSessions marks this instance's sessions still recorded as
// active as crashed: their containers are gone (§6.2 step 7). Their leases
// were never taken in this process, so there is nothing else to release.
// With Replicated, sessions another instance runs (a replica sharing the
// database, issue 26) are left alone: their agents run on; sessions
// recorded without an instance (before replicas) are this instance's as
// they always were.
func (m *Manager) CrashStaleSessions(ctx context.Context) (int, error) {
	all, err := m.Store.ActiveSessions(ctx)
	if err != nil {
		return 0, fmt.Errorf("list active sessions: %w", err)
	}
	var stale []SessionRecord
	for _, s := range all {
		if m.Replicated && s.Instance != "" && s.Instance != m.Instance {
			continue
		}
		if err := m.Store.EndSession(ctx, s.SessionID, StatusCrashed, "choird stopped while the session ran"); err != nil {
			return 0, fmt.Errorf("mark session %s crashed: %w", s.SessionID, err)
		}
		m.Log.Info("stale session marked crashed", "agent_id", s.AgentID, "session_id", s.SessionID)
		stale = append(stale, s)
	}
	m.mu.Lock()
	m.stale = append(m.stale, stale...)
	m.mu.Unlock()
	return len(stale), nil
}
