package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// SessionStatus is a session's state: active until it ends, stopped or
// crashed.
type SessionStatus string

const (
	SessionActive  SessionStatus = "active"
	SessionStopped SessionStatus = "stopped"
	SessionCrashed SessionStatus = "crashed"
)

// Lease names one exclusive resource (spec 6.4), such as
// {Kind: "workspace", Name: "main"}.
type Lease struct {
	Kind string
	Name string
}

// LeaseHeldError says which session holds a resource that a new session
// asked for. It matches ErrLeaseHeld.
type LeaseHeldError struct {
	Lease     Lease
	SessionID string // the holder
	AgentID   string // the holder's agent
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("%s %q is leased to session %s of agent %q", e.Lease.Kind, e.Lease.Name, e.SessionID, e.AgentID)
}

func (e *LeaseHeldError) Is(target error) bool { return target == ErrLeaseHeld }

// NewSession is what CreateSession records.
type NewSession struct {
	SessionID     string
	AgentID       string
	LeaseID       string
	StartedAt     time.Time
	Bindings      json.RawMessage // resource_bindings; nil means {}
	Leases        []Lease         // exclusive resources to lease for the session's life
	ConfigVersion int64
	ImageVersion  string
	// Resume reopens the ended session SessionID of the agent instead of
	// recording a new one (spec 13.2): it is active again with these
	// bindings and leases, its log and snapshots kept, its resumes
	// counted.
	Resume bool
	// Kind is SessionInteractive ("" too) or SessionRun; RunID names the
	// director's run a run session performs. Only interactive sessions
	// are one per agent, resumed, and adopted.
	Kind  string
	RunID string
	// Instance is the choird instance that runs the session (issue 26:
	// replicas share the table); a resume records the one resuming it.
	Instance string
}

// Session kinds.
const (
	SessionInteractive = "interactive"
	SessionRun         = "run"
)

// Session is a row of sessions.
type Session struct {
	SessionID       string
	AgentID         string
	LeaseID         string
	Status          SessionStatus
	StartedAt       time.Time
	EndedAt         time.Time // zero while active
	Bindings        json.RawMessage
	LastHeartbeatAt time.Time // zero before the first heartbeat
	ConfigVersion   int64
	ImageVersion    string
	Kind            string // SessionInteractive or SessionRun
	RunID           string // the run a run session performs
	Instance        string // the choird instance running it ('' before replicas)
}

const sessionColumns = `session_id, agent_id, lease_id, status, started_at, ended_at,
	resource_bindings, last_heartbeat_at, config_version, image_version, kind, run_id, instance`

func scanSession(row pgx.Row) (Session, error) {
	var s Session
	var ended, beat *time.Time
	err := row.Scan(&s.SessionID, &s.AgentID, &s.LeaseID, &s.Status, &s.StartedAt, &ended,
		&s.Bindings, &beat, &s.ConfigVersion, &s.ImageVersion, &s.Kind, &s.RunID, &s.Instance)
	if ended != nil {
		s.EndedAt = *ended
	}
	if beat != nil {
		s.LastHeartbeatAt = *beat
	}
	return s, err
}

func collectSessions(rows pgx.Rows) ([]Session, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Session, error) { return scanSession(r) })
}

// CreateSession records a new active session and leases its exclusive
// resources, all or nothing. It fails with ErrAgentActive when the agent
// already has an active session (design invariant 11), with a
// *LeaseHeldError when another session holds one of the resources, with
// ErrSessionExists when the id is taken, and with ErrNotFound when the agent
// was not bootstrapped.
func (s *Store) CreateSession(ctx context.Context, ns NewSession) (Session, error) {
	if ns.SessionID == "" || ns.AgentID == "" || ns.LeaseID == "" {
		return Session{}, errors.New("create session: session id, agent id and lease id are required")
	}
	if ns.StartedAt.IsZero() {
		return Session{}, errors.New("create session: StartedAt is required")
	}
	bindings := ns.Bindings
	if bindings == nil {
		bindings = json.RawMessage("{}")
	}
	var kinds, resNames []string
	seen := map[Lease]bool{}
	for _, l := range ns.Leases {
		if l.Kind == "" || l.Name == "" {
			return Session{}, fmt.Errorf("create session %s: lease %+v needs a kind and a name", ns.SessionID, l)
		}
		if !seen[l] {
			seen[l] = true
			kinds = append(kinds, l.Kind)
			resNames = append(resNames, l.Name)
		}
	}

	kind := ns.Kind
	if kind == "" {
		kind = SessionInteractive
	}
	if kind != SessionInteractive && kind != SessionRun {
		return Session{}, fmt.Errorf("create session %s: kind %q is not %q or %q", ns.SessionID, kind, SessionInteractive, SessionRun)
	}
	if (kind == SessionRun) != (ns.RunID != "") || (kind == SessionRun && ns.Resume) {
		return Session{}, fmt.Errorf("create session %s: a session of kind run needs a run id, is never resumed, and only it has one (kind %q, run id %q, resume %v)", ns.SessionID, kind, ns.RunID, ns.Resume)
	}
	var out Session
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		if ns.Resume {
			out, err = scanSession(tx.QueryRow(ctx, s.q(`
				UPDATE choir_control.sessions SET status = 'active', ended_at = NULL, end_reason = '',
					resumes = resumes + 1, lease_id = $3, resource_bindings = $4, config_version = $5, image_version = $6, instance = $7
				WHERE session_id = $1 AND agent_id = $2 AND status <> 'active' AND kind = 'interactive'
				RETURNING `+sessionColumns),
				ns.SessionID, ns.AgentID, ns.LeaseID, bindings, ns.ConfigVersion, ns.ImageVersion, ns.Instance))
		} else {
			out, err = scanSession(tx.QueryRow(ctx, s.q(`
				INSERT INTO choir_control.sessions (session_id, agent_id, lease_id, status, started_at,
					resource_bindings, config_version, image_version, kind, run_id, instance)
				VALUES ($1, $2, $3, 'active', $4, $5, $6, $7, $8, $9, $10)
				RETURNING `+sessionColumns),
				ns.SessionID, ns.AgentID, ns.LeaseID, ns.StartedAt, bindings, ns.ConfigVersion, ns.ImageVersion, kind, ns.RunID, ns.Instance))
		}
		if errors.Is(err, pgx.ErrNoRows) && ns.Resume {
			return fmt.Errorf("session %s of agent %q is not an ended session: %w", ns.SessionID, ns.AgentID, ErrNotFound)
		}
		if err != nil {
			switch code, constraint := pgCode(err); {
			case code == "23505" && constraint == "sessions_one_active_interactive_per_agent":
				return fmt.Errorf("agent %q: %w", ns.AgentID, ErrAgentActive)
			case code == "23505":
				return fmt.Errorf("session %s: %w", ns.SessionID, ErrSessionExists)
			case code == "23503":
				return fmt.Errorf("agent %q (not bootstrapped): %w", ns.AgentID, ErrNotFound)
			}
			return err
		}
		if len(kinds) == 0 {
			return nil
		}
		// Take every free lease; a conflict leaves the held ones out.
		rows, err := tx.Query(ctx, s.q(`
			INSERT INTO choir_control.leases (resource_kind, resource_name, session_id)
			SELECT k, n, $3 FROM unnest($1::text[], $2::text[]) AS r (k, n)
			ON CONFLICT DO NOTHING
			RETURNING resource_kind, resource_name`), kinds, resNames, ns.SessionID)
		if err != nil {
			return err
		}
		got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Lease])
		if err != nil {
			return err
		}
		if len(got) == len(kinds) {
			return nil
		}
		taken := map[Lease]bool{}
		for _, l := range got {
			taken[l] = true
		}
		for i := range kinds {
			l := Lease{Kind: kinds[i], Name: resNames[i]}
			if taken[l] {
				continue
			}
			held := &LeaseHeldError{Lease: l}
			err := tx.QueryRow(ctx, s.q(`
				SELECT l.session_id, s.agent_id FROM choir_control.leases l
				JOIN choir_control.sessions s USING (session_id)
				WHERE l.resource_kind = $1 AND l.resource_name = $2`), l.Kind, l.Name).Scan(&held.SessionID, &held.AgentID)
			if err != nil {
				return fmt.Errorf("find holder of %s %q: %w", l.Kind, l.Name, err)
			}
			return held
		}
		return nil
	})
	if err != nil {
		return Session{}, fmt.Errorf("create session %s: %w", ns.SessionID, err)
	}
	return out, nil
}

// EndSession marks an active session stopped or crashed at the given time
// and releases its leases. A session that has already ended gives
// ErrSessionEnded; an unknown one ErrNotFound.
func (s *Store) EndSession(ctx context.Context, sessionID string, status SessionStatus, at time.Time) error {
	return s.EndSessionWhy(ctx, sessionID, status, at, "")
}

// EndSessionWhy is EndSession recording why the session ended (say it for
// the operator; a new start reads it to decide whether to resume).
func (s *Store) EndSessionWhy(ctx context.Context, sessionID string, status SessionStatus, at time.Time, reason string) error {
	if status != SessionStopped && status != SessionCrashed {
		return fmt.Errorf("end session %s: status %q: want stopped or crashed", sessionID, status)
	}
	var ended int
	err := s.pool.QueryRow(ctx, s.q(`
		WITH ended AS (
			UPDATE choir_control.sessions SET status = $2, ended_at = $3, end_reason = $4
			WHERE session_id = $1 AND status = 'active'
			RETURNING session_id
		), released AS (
			DELETE FROM choir_control.leases WHERE session_id IN (SELECT session_id FROM ended)
		)
		SELECT count(*) FROM ended`), sessionID, status, at, reason).Scan(&ended)
	if err != nil {
		return fmt.Errorf("end session %s: %w", sessionID, err)
	}
	if ended == 0 {
		return s.whyNotActive(ctx, "end session", sessionID)
	}
	return nil
}

// whyNotActive explains why a statement on an active session touched no
// row: ErrNotFound or ErrSessionEnded.
func (s *Store) whyNotActive(ctx context.Context, op, sessionID string) error {
	var status SessionStatus
	err := s.pool.QueryRow(ctx, s.q(`SELECT status FROM choir_control.sessions WHERE session_id = $1`), sessionID).Scan(&status)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("%s %s: %w", op, sessionID, ErrNotFound)
	case err != nil:
		return fmt.Errorf("%s %s: %w", op, sessionID, err)
	case status == SessionActive: // it was not a moment ago
		return fmt.Errorf("%s %s: session changed concurrently; retry", op, sessionID)
	}
	return fmt.Errorf("%s %s (%s): %w", op, sessionID, status, ErrSessionEnded)
}

// Heartbeat records a heartbeat of an active session: when choird received
// it and the config version the agent runs (RecordLiveness of one
// session). A session that has ended gives ErrSessionEnded; an unknown one
// ErrNotFound.
func (s *Store) Heartbeat(ctx context.Context, sessionID string, at time.Time, configVersion int64) error {
	missing, err := s.RecordLiveness(ctx, []Liveness{{SessionID: sessionID, At: at, ConfigVersion: configVersion}})
	if err != nil {
		return fmt.Errorf("heartbeat %s: %w", sessionID, err)
	}
	if len(missing) > 0 {
		return s.whyNotActive(ctx, "heartbeat", sessionID)
	}
	return nil
}

// GetSession returns one session, or ErrNotFound.
func (s *Store) GetSession(ctx context.Context, sessionID string) (Session, error) {
	out, err := scanSession(s.pool.QueryRow(ctx, s.q(`SELECT `+sessionColumns+` FROM choir_control.sessions WHERE session_id = $1`), sessionID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Session{}, fmt.Errorf("session %s: %w", sessionID, ErrNotFound)
	}
	if err != nil {
		return Session{}, fmt.Errorf("session %s: %w", sessionID, err)
	}
	return out, nil
}

// ActiveSessions returns the active sessions of every instance, oldest
// first: at start, this instance's (and those recorded without one) are
// stale, their containers gone (spec 6.2 step 7).
func (s *Store) ActiveSessions(ctx context.Context) ([]Session, error) {
	rows, err := s.pool.Query(ctx, s.q(`SELECT `+sessionColumns+` FROM choir_control.sessions
		WHERE status = 'active' ORDER BY started_at, session_id`))
	if err != nil {
		return nil, fmt.Errorf("active sessions: %w", err)
	}
	out, err := collectSessions(rows)
	if err != nil {
		return nil, fmt.Errorf("active sessions: %w", err)
	}
	return out, nil
}

// LastSession returns the agent's most recently started interactive session, the one a
// new start resumes from, or ErrNotFound.
func (s *Store) LastSession(ctx context.Context, agentID string) (Session, error) {
	out, err := scanSession(s.pool.QueryRow(ctx, s.q(`SELECT `+sessionColumns+` FROM choir_control.sessions
		WHERE agent_id = $1 AND kind = 'interactive' ORDER BY started_at DESC, session_id DESC LIMIT 1`), agentID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Session{}, fmt.Errorf("last session of agent %q: %w", agentID, ErrNotFound)
	}
	if err != nil {
		return Session{}, fmt.Errorf("last session of agent %q: %w", agentID, err)
	}
	return out, nil
}

// Sessions lists an agent's sessions ("" for every agent), newest first, at
// most limit of them.
func (s *Store) Sessions(ctx context.Context, agentID string, limit int) ([]Session, error) {
	if limit <= 0 {
		limit = 50
	}
	rows, err := s.pool.Query(ctx, s.q(`SELECT `+sessionColumns+` FROM choir_control.sessions
		WHERE $1 = '' OR agent_id = $1 ORDER BY started_at DESC, session_id DESC LIMIT $2`), agentID, limit)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return collectSessions(rows)
}

// Ended is an agent's last session once it has ended: what a new start
// may resume (spec 13.2).
type Ended struct {
	SessionID string
	Status    SessionStatus
	EndedAt   time.Time
	EndReason string
	Resumes   int
	Head      Head // where its stored log ends
}

// LastEnded returns the agent's most recently started interactive session with the
// head of its log, or ErrNotFound when the agent has none or its last one
// is still active.
func (s *Store) LastEnded(ctx context.Context, agentID string) (Ended, error) {
	var e Ended
	err := s.pool.QueryRow(ctx, s.q(`
		SELECT s.session_id, s.status, s.ended_at, s.end_reason, s.resumes, coalesce(h.rev, 0), coalesce(h.hash, '')
		FROM (SELECT * FROM choir_control.sessions WHERE agent_id = $1 AND kind = 'interactive'
		      ORDER BY started_at DESC, session_id DESC LIMIT 1) s
		LEFT JOIN LATERAL (SELECT rev, hash FROM choir_control.session_events ev
		                   WHERE ev.session_id = s.session_id ORDER BY rev DESC LIMIT 1) h ON true
		WHERE s.status <> 'active'`), agentID).
		Scan(&e.SessionID, &e.Status, &e.EndedAt, &e.EndReason, &e.Resumes, &e.Head.Rev, &e.Head.Hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return Ended{}, fmt.Errorf("ended session of agent %q: %w", agentID, ErrNotFound)
	}
	if err != nil {
		return Ended{}, fmt.Errorf("ended session of agent %q: %w", agentID, err)
	}
	return e, nil
}
