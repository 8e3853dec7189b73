package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The DM inbox (issue 26): with two choird replicas only the leader polls
// Telegram, so an update from a DM whose agent the other replica runs is
// queued here, and the replica that runs the DM's agent takes it and
// handles it as if it had polled it (choird/gateway's inbox.go).

// NewInbound is an update for a DM's inbox: Body is the update as
// Telegram sent it, opaque to the store; (Bot, UpdateID) makes an update
// queued again (Telegram handing it on again after a failover) a no-op.
type NewInbound struct {
	Bot      string
	UpdateID int64
	DM       string
	Instance string // the replica that ran the DM's agent when it was queued
	Body     json.RawMessage
}

// Inbound is a queued row of dm_inbox.
type Inbound struct {
	ID       int64
	Bot      string
	UpdateID int64
	DM       string
	Instance string
	Body     json.RawMessage
	Created  time.Time
}

// DMRoute is where an update from a DM should go, as InboundRoute finds it.
type DMRoute struct {
	// Elsewhere is the instance of another replica whose active
	// interactive session is bound to the DM ("" when none is), and
	// Agent that session's agent.
	Elsewhere, Agent string
	// Waiting counts the DM's updates queued and not yet delivered.
	Waiting int
}

// InboundRoute says, in one round trip, whether another instance than
// this one runs the agent bound to dm, and how many of the DM's updates
// wait in the inbox. Sessions recorded without an instance are no other
// replica's.
func (s *Store) InboundRoute(ctx context.Context, dm, instance string) (DMRoute, error) {
	var r DMRoute
	var elsewhere, agent *string
	err := s.pool.QueryRow(ctx, s.q(`SELECT o.instance, o.agent_id,
			(SELECT count(*) FROM choir_control.dm_inbox WHERE dm = $1 AND status = 'queued')
		FROM (SELECT 1) one LEFT JOIN LATERAL (
			SELECT instance, agent_id FROM choir_control.sessions
			WHERE status = 'active' AND kind = 'interactive' AND resource_bindings->>'dm' = $1
				AND instance <> $2 AND instance <> ''
			ORDER BY started_at DESC LIMIT 1) o ON true`), dm, instance).
		Scan(&elsewhere, &agent, &r.Waiting)
	if err != nil {
		return DMRoute{}, fmt.Errorf("route of DM %s: %w", dm, err)
	}
	if elsewhere != nil {
		r.Elsewhere = *elsewhere
	}
	if agent != nil {
		r.Agent = *agent
	}
	return r, nil
}

// QueueInbound adds an update to its DM's inbox; fresh is false when the
// bot's update id was queued before (nothing changes).
func (s *Store) QueueInbound(ctx context.Context, n NewInbound) (fresh bool, err error) {
	if n.Bot == "" || n.DM == "" {
		return false, errors.New("queue inbound update: bot and DM are required")
	}
	if !json.Valid(n.Body) {
		return false, fmt.Errorf("queue inbound update %d of bot %s: the body is not JSON", n.UpdateID, n.Bot)
	}
	tag, err := s.pool.Exec(ctx, s.q(`INSERT INTO choir_control.dm_inbox (bot, update_id, dm, instance, body)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (bot, update_id) DO NOTHING`), n.Bot, n.UpdateID, n.DM, n.Instance, n.Body)
	if err != nil {
		return false, fmt.Errorf("queue inbound update %d of bot %s: %w", n.UpdateID, n.Bot, err)
	}
	return tag.RowsAffected() == 1, nil
}

// QueuedInbound returns the queued updates of the named DMs, oldest first,
// at most limit of them (one indexed query; none for no DMs).
func (s *Store) QueuedInbound(ctx context.Context, dms []string, limit int) ([]Inbound, error) {
	if len(dms) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, s.q(`SELECT id, bot, update_id, dm, instance, body, created_at FROM choir_control.dm_inbox
		WHERE dm = ANY($1) AND status = 'queued' ORDER BY id LIMIT $2`), dms, limit)
	if err != nil {
		return nil, fmt.Errorf("inbox: queued updates: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Inbound])
	if err != nil {
		return nil, fmt.Errorf("inbox: queued updates: %w", err)
	}
	return out, nil
}

// InboundDelivered records that a queued update was handled. One already
// recorded is no error.
func (s *Store) InboundDelivered(ctx context.Context, id int64) error {
	if _, err := s.pool.Exec(ctx, s.q(`UPDATE choir_control.dm_inbox SET status = 'delivered', done_at = now()
		WHERE id = $1 AND status = 'queued'`), id); err != nil {
		return fmt.Errorf("inbox: record update %d delivered: %w", id, err)
	}
	return nil
}

// PruneInbound deletes delivered updates handled before a time and
// returns how many.
func (s *Store) PruneInbound(ctx context.Context, before time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, s.q(`DELETE FROM choir_control.dm_inbox WHERE status = 'delivered' AND done_at < $1`), before)
	if err != nil {
		return 0, fmt.Errorf("prune inbox: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
