package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Outcome is how a session ended: why (empty while it runs), and the
// session summary (spec 11.8) its last graceful stop's final heartbeat
// carried, nil when none did.
type Outcome struct {
	EndReason string
	Summary   json.RawMessage
}

// saveSummary stores a session summary with the session, in tx. It must be
// a JSON object (Postgres checks that it is JSON).
func (s *Store) saveSummary(ctx context.Context, tx pgx.Tx, sessionID string, summary json.RawMessage) error {
	var obj map[string]json.RawMessage
	if json.Unmarshal(summary, &obj) != nil || obj == nil {
		return fmt.Errorf("session summary of %s: not a JSON object", sessionID)
	}
	if _, err := tx.Exec(ctx, s.q(`UPDATE choir_control.sessions SET summary = $2 WHERE session_id = $1`), sessionID, summary); err != nil {
		return fmt.Errorf("session summary of %s: %w", sessionID, err)
	}
	return nil
}

// SessionOutcome returns why a session ended and its summary, or
// ErrNotFound.
func (s *Store) SessionOutcome(ctx context.Context, sessionID string) (Outcome, error) {
	var o Outcome
	err := s.pool.QueryRow(ctx, s.q(`SELECT end_reason, summary FROM choir_control.sessions WHERE session_id = $1`), sessionID).
		Scan(&o.EndReason, &o.Summary)
	if errors.Is(err, pgx.ErrNoRows) {
		return Outcome{}, fmt.Errorf("session %s: %w", sessionID, ErrNotFound)
	}
	if err != nil {
		return Outcome{}, fmt.Errorf("session %s: %w", sessionID, err)
	}
	return o, nil
}
