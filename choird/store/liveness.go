package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Liveness is a session's last heartbeat as choird received it: when, and
// the config version the agent runs. choird keeps it in memory (crash
// detection reads it there) and records it here in batches, or with a
// heartbeat whose batch is written anyway (Batch.Beat).
type Liveness struct {
	SessionID     string
	At            time.Time
	ConfigVersion int64
}

// RecordLiveness records the last heartbeat of many active sessions in one
// statement. A session's recorded heartbeat never moves back (a batch
// older than what a heartbeat's own transaction wrote changes nothing of
// it). It returns the sessions it did not find active (ended, or their row
// gone), which the caller should stop answering from memory.
func (s *Store) RecordLiveness(ctx context.Context, beats []Liveness) (missing []string, err error) {
	if len(beats) == 0 {
		return nil, nil
	}
	ids, ats, versions := make([]string, len(beats)), make([]time.Time, len(beats)), make([]int64, len(beats))
	for i, b := range beats {
		ids[i], ats[i], versions[i] = b.SessionID, b.At, b.ConfigVersion
	}
	rows, err := s.pool.Query(ctx, s.q(`
		UPDATE choir_control.sessions s
		SET last_heartbeat_at = greatest(s.last_heartbeat_at, v.at),
		    config_version = CASE WHEN s.last_heartbeat_at > v.at THEN s.config_version ELSE v.cv END
		FROM unnest($1::text[], $2::timestamptz[], $3::bigint[]) AS v (id, at, cv)
		WHERE s.session_id = v.id AND s.status = 'active'
		RETURNING s.session_id`), ids, ats, versions)
	if err != nil {
		return nil, fmt.Errorf("record the liveness of %d sessions: %w", len(beats), err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("record the liveness of %d sessions: %w", len(beats), err)
	}
	seen := make(map[string]bool, len(found))
	for _, id := range found {
		seen[id] = true
	}
	for _, id := range ids {
		if !seen[id] {
			missing = append(missing, id)
		}
	}
	return missing, nil
}

// recordBeat records a heartbeat's liveness in its batch's transaction.
func (s *Store) recordBeat(ctx context.Context, tx pgx.Tx, sessionID string, b *Liveness) error {
	_, err := tx.Exec(ctx, s.q(`
		UPDATE choir_control.sessions
		SET last_heartbeat_at = greatest(last_heartbeat_at, $2::timestamptz),
		    config_version = CASE WHEN last_heartbeat_at > $2::timestamptz THEN config_version ELSE $3 END
		WHERE session_id = $1`), sessionID, b.At, b.ConfigVersion)
	if err != nil {
		return fmt.Errorf("liveness: %w", err)
	}
	return nil
}
