package lifecycle

import (
	"context"
	"slices"
	"time"

	"choir/internal/rpc"
)

// Idle heartbeats (§13.1) cost choird no database work. Liveness lives in
// memory (Run.lastHeartbeat, which the crash monitor reads) and reaches
// the store in batches: every LivenessEvery one statement records the
// newest heartbeat of every session whose newest the store lacks, and a
// heartbeat that stores events or a snapshot records its own in that
// transaction. An idle heartbeat (no events, no snapshot, not the final
// one) is answered from what the run remembers of the stored log (held),
// which every store call of the session's heartbeats updates; only when
// the run knows nothing yet (its first heartbeat, or after the store may
// have changed under it) does it ask the store, with one read.

// DefaultLivenessEvery is how often idle sessions' heartbeats are recorded
// in the store: `session show` and `session list` may show a last
// heartbeat this much older than choird's own (`agent status`).
const DefaultLivenessEvery = 15 * time.Second

// Liveness is a session's last heartbeat as choird received it, and the
// config version the agent said it runs.
type Liveness struct {
	SessionID     string
	At            time.Time
	ConfigVersion int64
}

// held is what the store holds of a session's log (its head and newest
// snapshot), as the last store call for its heartbeats answered; under
// Run.mu. gen moves whenever the store may have changed under it.
type held struct {
	known bool
	got   Replicated
	gen   uint64
}

// idle says a heartbeat brings nothing to store: no events, no snapshot,
// and it is not the final one of a graceful stop.
func idle(req rpc.HeartbeatReq) bool {
	return len(req.Patches) == 0 && len(req.Snapshot) == 0 && len(req.Summary) == 0 && !req.Final
}

// heldLog is what the run knows of its stored log, whether it knows, and
// the generation to note a store call's answer under (noteHeld).
func (r *Run) heldLog() (Replicated, bool, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held.got, r.held.known, r.held.gen
}

// noteHeld remembers a store call's answer, begun at generation gen: not
// when the store may have changed since (forgetHeld), nor when an answer
// already noted is newer (a log only grows).
func (r *Run) noteHeld(gen uint64, got Replicated) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held.gen != gen {
		return
	}
	if h := r.held; h.known && (got.Head.Rev < h.got.Head.Rev || got.SnapshotRev < h.got.SnapshotRev) {
		return
	}
	r.held.known, r.held.got = true, got
}

// forgetHeld makes the session's next heartbeat ask the store: the store
// may no longer hold what the run remembers (recorded again after a
// repair, or found missing). r.mu held.
func (r *Run) forgetHeld() {
	r.held.known = false
	r.held.gen++
}

// The first heartbeat comes one interval after the agent's opening calls
// (INIT_HELLO, GET_SECRETS, FETCH_DYNAMIC_CONFIG), and those wait on
// Postgres: with many agents starting at once, on one connection, they
// took seconds, and a deadline counted from INIT_HELLO alone crashed
// sessions that were still opening. So until a session's first heartbeat,
// each opening call, as it arrives and as it is answered, counts as a sign
// of life; from the first heartbeat on only heartbeats do, and crash
// detection is as exact as before.

// opening notes an opening call of r's session, before its first
// heartbeat, as a sign of life; call it as the call arrives and again
// (deferred) as it is answered.
func (m *Manager) opening(r *Run) {
	now := m.now()
	r.mu.Lock()
	if !r.beaten && now.After(r.lastHeartbeat) {
		r.lastHeartbeat = now
	}
	r.mu.Unlock()
}

// beatStored notes that the store holds the heartbeat received at at.
func (r *Run) beatStored(at time.Time) {
	r.mu.Lock()
	if at.After(r.beatRecorded) {
		r.beatRecorded = at
	}
	r.mu.Unlock()
}

// livenessEvery is LivenessEvery or its default.
func (m *Manager) livenessEvery() time.Duration {
	if m.LivenessEvery > 0 {
		return m.LivenessEvery
	}
	return DefaultLivenessEvery
}

// recordLiveness records, in one statement, the newest heartbeat of each
// of runs that the store lacks. A session the store does not hold as
// active asks the store at its next heartbeat (which says what is wrong:
// ended, or gone and repaired). A failure is logged once until a record
// succeeds; the heartbeats stay in memory and are recorded next time.
func (m *Manager) recordLiveness(ctx context.Context, runs []*Run) {
	var beats []Liveness
	var of []*Run
	for _, r := range runs {
		r.mu.Lock()
		if r.lastHeartbeat.After(r.beatRecorded) {
			beats = append(beats, Liveness{SessionID: r.SessionID, At: r.lastHeartbeat, ConfigVersion: r.configVersion})
			of = append(of, r)
		}
		r.mu.Unlock()
	}
	if len(beats) == 0 {
		return
	}
	missing, err := m.Store.RecordLiveness(ctx, beats)
	m.mu.Lock()
	failing := m.livenessFailing
	m.livenessFailing = err != nil
	m.mu.Unlock()
	switch {
	case err != nil && !failing:
		m.Log.Warn("recording the agents' heartbeats failed; they are kept in memory and recorded once the store answers", "sessions", len(beats), "error", err.Error())
		return
	case err != nil:
		return
	case failing:
		m.Log.Info("the agents' heartbeats are recorded again", "sessions", len(beats))
	}
	for i, r := range of {
		r.beatStored(beats[i].At)
		if slices.Contains(missing, r.SessionID) {
			r.mu.Lock()
			r.forgetHeld()
			r.mu.Unlock()
		}
	}
}

// flushLiveness records what the store lacks of every run's liveness,
// within 5 s (the monitor does it as it stops).
func (m *Manager) flushLiveness() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m.recordLiveness(ctx, m.allRuns())
}

// allRuns is every run choird has, by session.
func (m *Manager) allRuns() []*Run {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Run, 0, len(m.sessions))
	for _, r := range m.sessions {
		out = append(out, r)
	}
	return out
}
