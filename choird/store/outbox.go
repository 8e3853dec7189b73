package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The states of an outbox message (dm_outbox.status).
const (
	OutboxQueued = "queued"
	OutboxSent   = "sent"
	OutboxFailed = "failed"
)

// ErrOutboxFull is returned by QueueOutbox when the agent already has its
// cap of messages queued.
var ErrOutboxFull = errors.New("outbox full")

// NewOutbox is a message for a DM's outbox: Body is the sender's plan of
// parts, opaque to the store; Key makes a resend of the same message a
// no-op (the agent's call id, or a random one).
type NewOutbox struct {
	AgentID, DM, Key string
	Body             json.RawMessage
}

// OutboxMessage is a row of dm_outbox.
type OutboxMessage struct {
	ID               int64
	AgentID, DM, Key string
	Body             json.RawMessage
	Status           string
	// PartsDone parts were accepted by Telegram, with these message ids
	// (0 for a part that sent nothing, such as a refused file); Attempt is
	// the part whose send started last (-1 before any): Attempt ==
	// PartsDone means that part's send started and its outcome was never
	// recorded.
	PartsDone   int
	Attempt     int
	TelegramIDs []int64
	Notes       []string // what the sender noted per part (files refused)
	Error       string
	Created     time.Time
	Done        time.Time // zero while queued
}

const outboxColumns = `id, agent_id, dm, msg_key, body, status, parts_done, attempt, telegram_ids, notes, error, created_at, done_at`

func scanOutbox(row pgx.Row) (OutboxMessage, error) {
	var m OutboxMessage
	var done *time.Time
	err := row.Scan(&m.ID, &m.AgentID, &m.DM, &m.Key, &m.Body, &m.Status, &m.PartsDone, &m.Attempt,
		&m.TelegramIDs, &m.Notes, &m.Error, &m.Created, &done)
	if done != nil {
		m.Done = *done
	}
	return m, err
}

// QueueOutbox adds a message to its DM's outbox and returns it with fresh
// set, or, when the agent already queued a message with the same key,
// returns that one unchanged with fresh false. When the agent has max
// messages queued (max > 0) it adds nothing and returns ErrOutboxFull.
// The common case is one statement, one round trip: the count and the
// insert are one INSERT ... SELECT, so on a pool of several connections
// two sends of one agent at the same instant may both pass a cap that
// only one had room for (an agent's sends come one after the other; the
// cap bounds a flood, not a race).
func (s *Store) QueueOutbox(ctx context.Context, n NewOutbox, max int) (m OutboxMessage, fresh bool, err error) {
	if n.AgentID == "" || n.DM == "" || n.Key == "" {
		return OutboxMessage{}, false, errors.New("queue outbox message: agent id, DM and key are required")
	}
	if !json.Valid(n.Body) {
		return OutboxMessage{}, false, fmt.Errorf("queue outbox message %s of %s: the body is not JSON", n.Key, n.AgentID)
	}
	m, err = scanOutbox(s.pool.QueryRow(ctx, s.q(`INSERT INTO choir_control.dm_outbox (agent_id, dm, msg_key, body)
		SELECT $1, $2, $3, $4
		WHERE $5::int <= 0 OR (SELECT count(*) FROM choir_control.dm_outbox WHERE agent_id = $1 AND status = 'queued') < $5::int
		ON CONFLICT (agent_id, msg_key) DO NOTHING
		RETURNING `+outboxColumns), n.AgentID, n.DM, n.Key, n.Body, max))
	if err == nil {
		return m, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return OutboxMessage{}, false, fmt.Errorf("queue outbox message %s of %s: %w", n.Key, n.AgentID, err)
	}
	// Nothing inserted: a resend, or the cap.
	var id *int64
	var queued int
	if err := s.pool.QueryRow(ctx, s.q(outboxKeyAndDepth), n.AgentID, n.Key).Scan(&id, &queued); err != nil {
		return OutboxMessage{}, false, fmt.Errorf("queue outbox message %s of %s: %w", n.Key, n.AgentID, err)
	}
	if id == nil {
		return OutboxMessage{}, false, fmt.Errorf("%w: %s has %d messages queued, its cap", ErrOutboxFull, n.AgentID, queued)
	}
	m, err = s.OutboxByKey(ctx, n.AgentID, n.Key)
	return m, false, err
}

// outboxKeyAndDepth finds the message of an agent's key, if any, and the
// agent's queued messages.
const outboxKeyAndDepth = `SELECT
	(SELECT id FROM choir_control.dm_outbox WHERE agent_id = $1 AND msg_key = $2),
	(SELECT count(*) FROM choir_control.dm_outbox WHERE agent_id = $1 AND status = 'queued')`

// NextOutbox returns the oldest queued message of a DM, or ErrNotFound,
// and records in the same statement that the send of its first part not
// done starts (as OutboxAttempt does): the message returned carries the
// attempt recorded before, so Attempt == PartsDone still tells a part
// whose earlier send was never recorded.
func (s *Store) NextOutbox(ctx context.Context, dm string) (m OutboxMessage, err error) {
	err = s.fenced(ctx, "outbox of DM "+dm, func(q fencedQuerier) error {
		m, err = scanOutbox(q.QueryRow(ctx, s.q(`WITH next AS (
			SELECT id, attempt FROM choir_control.dm_outbox
			WHERE dm = $1 AND status = 'queued' ORDER BY id LIMIT 1 FOR UPDATE)
		UPDATE choir_control.dm_outbox o SET attempt = o.parts_done FROM next WHERE o.id = next.id
		RETURNING o.id, o.agent_id, o.dm, o.msg_key, o.body, o.status, o.parts_done, next.attempt,
			o.telegram_ids, o.notes, o.error, o.created_at, o.done_at`), dm))
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return OutboxMessage{}, fmt.Errorf("outbox of DM %s: nothing queued: %w", dm, ErrNotFound)
	}
	if err != nil {
		return OutboxMessage{}, fmt.Errorf("outbox of DM %s: %w", dm, err)
	}
	return m, nil
}

// OutboxByKey returns the message an agent queued with a key, or
// ErrNotFound.
func (s *Store) OutboxByKey(ctx context.Context, agentID, key string) (OutboxMessage, error) {
	m, err := scanOutbox(s.pool.QueryRow(ctx, s.q(`SELECT `+outboxColumns+` FROM choir_control.dm_outbox
		WHERE agent_id = $1 AND msg_key = $2`), agentID, key))
	if errors.Is(err, pgx.ErrNoRows) {
		return OutboxMessage{}, fmt.Errorf("outbox message %s of %s: %w", key, agentID, ErrNotFound)
	}
	if err != nil {
		return OutboxMessage{}, fmt.Errorf("outbox message %s of %s: %w", key, agentID, err)
	}
	return m, nil
}

// OutboxAttempt records that the send of a queued message's part starts.
func (s *Store) OutboxAttempt(ctx context.Context, id int64, part int) error {
	return s.outboxUpdate(ctx, id, "start part", `UPDATE choir_control.dm_outbox SET attempt = $2
		WHERE id = $1 AND status = 'queued' AND parts_done = $2`, id, part)
}

// OutboxPartSent records a part Telegram accepted (its message id; 0 for a
// part that sent nothing) with an optional note, and, when it was the
// last, that the message is sent. A part recorded before is not recorded
// again.
func (s *Store) OutboxPartSent(ctx context.Context, id int64, part int, telegramID int64, note string, last bool) error {
	status := OutboxQueued
	if last {
		status = OutboxSent
	}
	return s.outboxUpdate(ctx, id, "record part", `UPDATE choir_control.dm_outbox
		SET parts_done = $2 + 1, telegram_ids = telegram_ids || $3::bigint,
			notes = CASE WHEN $4 = '' THEN notes ELSE notes || $4 END,
			status = $5, done_at = CASE WHEN $5 = 'sent' THEN now() END
		WHERE id = $1 AND status = 'queued' AND parts_done = $2`, id, part, telegramID, note, status)
}

// FailOutbox marks a queued message failed, with why; it is not sent again.
func (s *Store) FailOutbox(ctx context.Context, id int64, reason string) error {
	return s.outboxUpdate(ctx, id, "fail", `UPDATE choir_control.dm_outbox SET status = 'failed', error = $2, done_at = now()
		WHERE id = $1 AND status = 'queued'`, id, reason)
}

func (s *Store) outboxUpdate(ctx context.Context, id int64, what, sql string, args ...any) error {
	if err := s.fenced(ctx, "outbox", func(q fencedQuerier) error {
		_, err := q.Exec(ctx, s.q(sql), args...)
		return err
	}); err != nil {
		return fmt.Errorf("outbox message %d: %s: %w", id, what, err)
	}
	return nil
}

// FailQueuedOutbox marks every queued message of a DM failed, with why (a
// chat Telegram refuses), and returns how many there were.
func (s *Store) FailQueuedOutbox(ctx context.Context, dm, reason string) (int, error) {
	var tag pgconn.CommandTag
	err := s.fenced(ctx, "outbox", func(q fencedQuerier) (err error) {
		tag, err = q.Exec(ctx, s.q(`UPDATE choir_control.dm_outbox SET status = 'failed', error = $2, done_at = now()
		WHERE dm = $1 AND status = 'queued'`), dm, reason)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("outbox of DM %s: fail queued messages: %w", dm, err)
	}
	return int(tag.RowsAffected()), nil
}

// OutboxStat is one DM's outbox as one agent filled it.
type OutboxStat struct {
	AgentID, DM string
	Queued      int       // messages waiting for Telegram
	Oldest      time.Time // the oldest queued message's, zero when none
	Failed      int       // messages given up on
	// LastError is why the newest failed message failed, when no message
	// of the DM was sent after it (the chat still refuses), and when.
	LastError   string
	LastErrorAt time.Time
}

// OutboxStats returns every (agent, DM) pair with messages in the outbox,
// of one agent or of all ("").
func (s *Store) OutboxStats(ctx context.Context, agentID string) ([]OutboxStat, error) {
	rows, err := s.pool.Query(ctx, s.q(`
		WITH per AS (
			SELECT agent_id, dm,
				count(*) FILTER (WHERE status = 'queued') AS queued,
				min(created_at) FILTER (WHERE status = 'queued') AS oldest,
				count(*) FILTER (WHERE status = 'failed') AS failed,
				max(id) FILTER (WHERE status = 'failed') AS last_failed,
				max(id) FILTER (WHERE status = 'sent') AS last_sent
			FROM choir_control.dm_outbox
			WHERE $1 = '' OR agent_id = $1
			GROUP BY agent_id, dm)
		SELECT per.agent_id, per.dm, per.queued, per.oldest, per.failed,
			coalesce(f.error, ''), f.done_at
		FROM per LEFT JOIN choir_control.dm_outbox f
			ON f.id = per.last_failed AND per.last_failed > coalesce(per.last_sent, 0)
		ORDER BY per.agent_id, per.dm`), agentID)
	if err != nil {
		return nil, fmt.Errorf("outbox statistics: %w", err)
	}
	defer rows.Close()
	var out []OutboxStat
	for rows.Next() {
		var st OutboxStat
		var oldest, errAt *time.Time
		if err := rows.Scan(&st.AgentID, &st.DM, &st.Queued, &oldest, &st.Failed, &st.LastError, &errAt); err != nil {
			return nil, fmt.Errorf("outbox statistics: %w", err)
		}
		if oldest != nil {
			st.Oldest = *oldest
		}
		if errAt != nil {
			st.LastErrorAt = *errAt
		}
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("outbox statistics: %w", err)
	}
	return out, nil
}

// PruneOutbox deletes sent and failed messages finished before a time
// (their keys no longer stop a resend) and returns how many.
func (s *Store) PruneOutbox(ctx context.Context, before time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, s.q(`DELETE FROM choir_control.dm_outbox
		WHERE status <> 'queued' AND done_at < $1`), before)
	if err != nil {
		return 0, fmt.Errorf("prune outbox: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// OutboxFileDir is where a queued message's files wait: the agent's
// workspace on the host and the message's directory under it.
type OutboxFileDir struct{ Workspace, Dir string }

// QueuedOutboxDirs returns the file directories of the messages still
// queued, which the sweep of orphaned outbox files must keep.
func (s *Store) QueuedOutboxDirs(ctx context.Context) ([]OutboxFileDir, error) {
	rows, err := s.pool.Query(ctx, s.q(`SELECT body->>'workspace', body->>'dir' FROM choir_control.dm_outbox
		WHERE status = 'queued' AND coalesce(body->>'dir', '') <> ''`))
	if err != nil {
		return nil, fmt.Errorf("outbox: list the directories of queued messages: %w", err)
	}
	defer rows.Close()
	var out []OutboxFileDir
	for rows.Next() {
		var d OutboxFileDir
		if err := rows.Scan(&d.Workspace, &d.Dir); err != nil {
			return nil, fmt.Errorf("outbox: list the directories of queued messages: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("outbox: list the directories of queued messages: %w", err)
	}
	return out, nil
}

// QueuedDMs returns the DMs that have messages queued (the leader's
// senders poll it, for what the other replica queued).
func (s *Store) QueuedDMs(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, s.q(`SELECT DISTINCT dm FROM choir_control.dm_outbox WHERE status = 'queued'`))
	if err != nil {
		return nil, fmt.Errorf("outbox: list the DMs with queued messages: %w", err)
	}
	dms, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("outbox: list the DMs with queued messages: %w", err)
	}
	return dms, nil
}
