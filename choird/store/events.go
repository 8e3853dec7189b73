package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Event is one committed event of a session's log (spec 11.3, 13.1).
type Event struct {
	Rev       int64           // 1, 2, 3, ... without gaps
	Type      string          // LLM_CALL_COMMITTED, TOOL_CALL_COMMITTED, ...
	Lane      string          // "edge", "core" or "" (none)
	Hash      string          // the agent's chain hash of this event
	Payload   json.RawMessage // nil means {}
	CreatedAt time.Time       // set by the store
}

// AppendEvents adds a heartbeat's committed events to an active session's
// log and returns the acknowledged revision: the highest stored. The events
// must have consecutive revisions. Events the log already has are checked
// and skipped, so a resent heartbeat is a no-op; the first new event must
// follow the log's last (else ErrRevGap), and a stored revision whose hash
// differs from the one sent is ErrRevFork. Nothing is stored on error. An
// empty batch just returns the acknowledged revision. A session that has
// ended takes no events (ErrSessionEnded): a late heartbeat from a crashed
// agent cannot change its log.
func (s *Store) AppendEvents(ctx context.Context, sessionID string, events []Event) (int64, error) {
	for i, e := range events {
		switch {
		case e.Rev < 1:
			return 0, fmt.Errorf("append events to %s: revision %d: revisions start at 1", sessionID, e.Rev)
		case i > 0 && e.Rev != events[i-1].Rev+1:
			return 0, fmt.Errorf("append events to %s: revision %d follows %d in the batch: %w", sessionID, e.Rev, events[i-1].Rev, ErrRevGap)
		case e.Type == "" || e.Hash == "":
			return 0, fmt.Errorf("append events to %s: revision %d needs a type and a hash", sessionID, e.Rev)
		case e.Lane != "" && e.Lane != "edge" && e.Lane != "core":
			return 0, fmt.Errorf("append events to %s: revision %d: lane %q: want edge, core or none", sessionID, e.Rev, e.Lane)
		}
	}
	var acked int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// Lock the session: appends to one session take turns.
		var status SessionStatus
		err := tx.QueryRow(ctx, s.q(`
			SELECT status, (SELECT coalesce(max(rev), 0) FROM choir_control.session_events e
			                WHERE e.session_id = s.session_id)
			FROM choir_control.sessions s WHERE session_id = $1 FOR UPDATE`), sessionID).Scan(&status, &acked)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if status != SessionActive {
			return fmt.Errorf("%s: %w", status, ErrSessionEnded)
		}
		if len(events) == 0 {
			return nil
		}
		first, last := events[0].Rev, events[len(events)-1].Rev
		if first > acked+1 {
			return fmt.Errorf("log ends at revision %d, batch starts at %d: %w", acked, first, ErrRevGap)
		}
		if first <= acked {
			if err := s.checkStored(ctx, tx, sessionID, events[:min(acked, last)-first+1]); err != nil {
				return err
			}
		}
		if last <= acked {
			return nil // all resent
		}
		fresh := events[acked-first+1:]
		revs := make([]int64, len(fresh))
		types := make([]string, len(fresh))
		lanes := make([]*string, len(fresh))
		hashes := make([]string, len(fresh))
		payloads := make([]string, len(fresh))
		for i, e := range fresh {
			revs[i], types[i], hashes[i] = e.Rev, e.Type, e.Hash
			if e.Lane != "" {
				lanes[i] = &fresh[i].Lane
			}
			payloads[i] = "{}"
			if e.Payload != nil {
				payloads[i] = string(e.Payload)
			}
		}
		if _, err := tx.Exec(ctx, s.q(`
			INSERT INTO choir_control.session_events (session_id, rev, event_type, lane, hash, payload)
			SELECT $1, r, t, l, h, p::jsonb
			FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[]) AS x (r, t, l, h, p)`),
			sessionID, revs, types, lanes, hashes, payloads); err != nil {
			return err
		}
		acked = last
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("append events to %s: %w", sessionID, err)
	}
	return acked, nil
}

// checkStored compares resent events with the stored ones by hash.
func (s *Store) checkStored(ctx context.Context, tx pgx.Tx, sessionID string, resent []Event) error {
	rows, err := tx.Query(ctx, s.q(`
		SELECT rev, hash FROM choir_control.session_events
		WHERE session_id = $1 AND rev BETWEEN $2 AND $3 ORDER BY rev`),
		sessionID, resent[0].Rev, resent[len(resent)-1].Rev)
	if err != nil {
		return err
	}
	type stored struct {
		Rev  int64
		Hash string
	}
	have, err := pgx.CollectRows(rows, pgx.RowToStructByPos[stored])
	if err != nil {
		return err
	}
	if len(have) != len(resent) {
		return fmt.Errorf("log has %d of revisions %d-%d: %w", len(have), resent[0].Rev, resent[len(resent)-1].Rev, ErrRevGap)
	}
	for i, h := range have {
		if h.Hash != resent[i].Hash {
			return fmt.Errorf("revision %d is stored with hash %s, resent with %s: %w", h.Rev, h.Hash, resent[i].Hash, ErrRevFork)
		}
	}
	return nil
}

// AckedRev returns the highest revision stored for a session (0 for none).
func (s *Store) AckedRev(ctx context.Context, sessionID string) (int64, error) {
	var rev int64
	err := s.pool.QueryRow(ctx, s.q(`
		SELECT (SELECT coalesce(max(rev), 0) FROM choir_control.session_events e WHERE e.session_id = s.session_id)
		FROM choir_control.sessions s WHERE session_id = $1`), sessionID).Scan(&rev)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("acked revision of %s: %w", sessionID, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("acked revision of %s: %w", sessionID, err)
	}
	return rev, nil
}

// EventsAfter returns a session's events with revisions above rev, in
// order: the tail to replay on top of a snapshot.
func (s *Store) EventsAfter(ctx context.Context, sessionID string, rev int64) ([]Event, error) {
	rows, err := s.pool.Query(ctx, s.q(`
		SELECT rev, event_type, coalesce(lane, ''), hash, payload, created_at
		FROM choir_control.session_events
		WHERE session_id = $1 AND rev > $2 ORDER BY rev`), sessionID, rev)
	if err != nil {
		return nil, fmt.Errorf("events of %s after %d: %w", sessionID, rev, err)
	}
	events, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Event])
	if err != nil {
		return nil, fmt.Errorf("events of %s after %d: %w", sessionID, rev, err)
	}
	if len(events) == 0 {
		if _, err := s.GetSession(ctx, sessionID); err != nil {
			return nil, err
		}
	}
	return events, nil
}

// Snapshot is a session's folded state at a revision.
type Snapshot struct {
	SessionID string
	Rev       int64
	Data      json.RawMessage
	CreatedAt time.Time
}

// SaveSnapshot stores the state at rev, which the log must already hold
// (else ErrSnapshotAhead). Saving the same revision again keeps the first.
func (s *Store) SaveSnapshot(ctx context.Context, sessionID string, rev int64, data json.RawMessage) error {
	if rev < 0 {
		return fmt.Errorf("save snapshot of %s: revision %d is negative", sessionID, rev)
	}
	if data == nil {
		return fmt.Errorf("save snapshot of %s at %d: no data", sessionID, rev)
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var acked int64
		err := tx.QueryRow(ctx, s.q(`
			SELECT (SELECT coalesce(max(rev), 0) FROM choir_control.session_events e WHERE e.session_id = s.session_id)
			FROM choir_control.sessions s WHERE session_id = $1 FOR SHARE`), sessionID).Scan(&acked)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if rev > acked {
			return fmt.Errorf("revision %d, log ends at %d: %w", rev, acked, ErrSnapshotAhead)
		}
		_, err = tx.Exec(ctx, s.q(`
			INSERT INTO choir_control.session_snapshots (session_id, rev, snapshot)
			VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`), sessionID, rev, data)
		return err
	})
	if err != nil {
		return fmt.Errorf("save snapshot of %s at %d: %w", sessionID, rev, err)
	}
	return nil
}

// LatestSnapshot returns the session's snapshot with the highest revision,
// or ErrNotFound.
func (s *Store) LatestSnapshot(ctx context.Context, sessionID string) (Snapshot, error) {
	var snap Snapshot
	err := s.pool.QueryRow(ctx, s.q(`
		SELECT session_id, rev, snapshot, created_at FROM choir_control.session_snapshots
		WHERE session_id = $1 ORDER BY rev DESC LIMIT 1`), sessionID).
		Scan(&snap.SessionID, &snap.Rev, &snap.Data, &snap.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Snapshot{}, fmt.Errorf("latest snapshot of %s: %w", sessionID, ErrNotFound)
	}
	if err != nil {
		return Snapshot{}, fmt.Errorf("latest snapshot of %s: %w", sessionID, err)
	}
	return snap, nil
}
