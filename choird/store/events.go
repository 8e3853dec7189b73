package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"choir/internal/chain"
)

// ErrChainBroken says events do not chain from the stored log: a hash is
// not the hash of its event chained to the one before (internal/chain).
var ErrChainBroken = errors.New("hash chain broken")

// Event is one committed event of a session's log (spec 11.3, 13.1).
type Event struct {
	Rev       int64           // 1, 2, 3, ... without gaps
	Type      string          // UserMsg, ToolCallCommitted, ...
	Lane      string          // "edge", "core" or "" (none)
	Hash      string          // the chain hash of this event (internal/chain)
	Payload   json.RawMessage // nil means none (stored as JSON null)
	Time      time.Time       // when the agent committed it; the hash covers it
	CreatedAt time.Time       // set by the store
}

// Head is where a session's stored log ends: its newest revision and that
// event's hash (0 and "" for an empty log).
type Head struct {
	Rev  int64
	Hash string
}

// RefusedError is a batch that does not follow a session's stored log:
// nothing of it was stored. Head says where the log ends, so the sender
// knows to resend from Head.Rev+1.
type RefusedError struct {
	SessionID string
	Head      Head
	Err       error  // ErrRevGap, ErrRevFork or ErrChainBroken
	Detail    string // which event and why
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("events for session %s refused (%v): %s; its stored log ends at revision %d (hash %q): send from revision %d",
		e.SessionID, e.Err, e.Detail, e.Head.Rev, e.Head.Hash, e.Head.Rev+1)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// Batch is what one heartbeat replicates: committed events (consecutive
// revisions) and, optionally, the working-memory snapshot of the state at
// SnapshotRev and, on the final heartbeat of a graceful stop, the session
// summary (spec 11.8), which replaces the one stored with the session.
type Batch struct {
	Events      []Event
	Snapshot    json.RawMessage
	SnapshotRev int64
	Summary     json.RawMessage
	// Beat, when set, is the heartbeat's liveness, recorded in the batch's
	// transaction when the batch writes anything; an empty batch (an idle
	// heartbeat) writes nothing, its liveness included (RecordLiveness).
	Beat *Liveness
}

// empty says the batch carries nothing to store.
func (b Batch) empty() bool {
	return len(b.Events) == 0 && len(b.Snapshot) == 0 && len(b.Summary) == 0
}

// Replicated is what the store holds for a session after a batch: the head
// of its log and the revision of its newest snapshot (-1 for none).
type Replicated struct {
	Head        Head
	SnapshotRev int64
}

// Replicate adds a heartbeat's batch to an active session, in one
// transaction, and returns what the session's log now holds.
//
// Events the log has already must carry the stored hashes and are skipped,
// so a resent heartbeat is a no-op. The first new event must be the one
// after the log's last, and each new event's hash must be the chain hash
// (chain.Hash) of the event chained to the one before, starting from the
// stored hash of the log's last event: the log stays one verifiable chain,
// and an event forged without the chain is refused. A batch that fails any
// of this is a *RefusedError (ErrRevGap, ErrRevFork or ErrChainBroken)
// naming where the log ends, and nothing of it is stored. Payloads are
// stored in canonical form (chain.Canonical), the form the hash covers.
//
// The snapshot is stored under SnapshotRev when the log holds that
// revision (after the batch) and no newer snapshot is stored; otherwise it
// is ignored, and Replicated.SnapshotRev tells the sender it was not kept.
// A summary is stored with the session in the same transaction.
//
// An empty batch (an idle heartbeat) is one read, outside any transaction,
// and writes nothing.
//
// A session that has ended takes nothing (ErrSessionEnded): a late
// heartbeat from a crashed agent cannot change its log.
func (s *Store) Replicate(ctx context.Context, sessionID string, b Batch) (Replicated, error) {
	events := b.Events
	for i, e := range events {
		switch {
		case e.Rev < 1:
			return Replicated{}, fmt.Errorf("replicate to %s: revision %d: revisions start at 1", sessionID, e.Rev)
		case i > 0 && e.Rev != events[i-1].Rev+1:
			return Replicated{}, fmt.Errorf("replicate to %s: revision %d follows %d in the batch: %w", sessionID, e.Rev, events[i-1].Rev, ErrRevGap)
		case e.Type == "" || e.Hash == "":
			return Replicated{}, fmt.Errorf("replicate to %s: revision %d needs a type and a hash", sessionID, e.Rev)
		case e.Lane != "" && e.Lane != "edge" && e.Lane != "core":
			return Replicated{}, fmt.Errorf("replicate to %s: revision %d: lane %q: want edge, core or none", sessionID, e.Rev, e.Lane)
		}
	}
	var out Replicated
	if b.empty() {
		if err := s.replicaHead(ctx, s.pool, sessionID, "", &out); err != nil {
			return Replicated{}, fmt.Errorf("replicate to %s: %w", sessionID, err)
		}
		return out, nil
	}
	var calls []CallRow // the ledger rows added, told once committed
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		calls = nil
		// Lock the session: batches of one session take turns.
		if err := s.replicaHead(ctx, tx, sessionID, "FOR UPDATE OF s", &out); err != nil {
			return err
		}
		if b.Beat != nil {
			if err := s.recordBeat(ctx, tx, sessionID, b.Beat); err != nil {
				return err
			}
		}
		if len(events) > 0 {
			before := out.Head.Rev
			if err := s.appendFresh(ctx, tx, sessionID, &out.Head, events); err != nil {
				return err
			}
			if out.Head.Rev > before && hasCalls(events) { // the usage ledger (ledger.go)
				var err error
				if calls, err = s.recordCalls(ctx, tx, sessionID, before); err != nil {
					return err
				}
			}
		}
		if len(b.Snapshot) > 0 && b.SnapshotRev > out.SnapshotRev && b.SnapshotRev <= out.Head.Rev {
			if _, err := tx.Exec(ctx, s.q(`
				INSERT INTO choir_control.session_snapshots (session_id, rev, snapshot)
				VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`), sessionID, b.SnapshotRev, b.Snapshot); err != nil {
				return fmt.Errorf("snapshot at %d: %w", b.SnapshotRev, err)
			}
			out.SnapshotRev = b.SnapshotRev
		}
		if len(b.Summary) > 0 {
			return s.saveSummary(ctx, tx, sessionID, b.Summary)
		}
		return nil
	})
	if err != nil {
		var refused *RefusedError
		if errors.As(err, &refused) {
			return Replicated{}, refused
		}
		return Replicated{}, fmt.Errorf("replicate to %s: %w", sessionID, err)
	}
	s.callsStored(calls)
	return out, nil
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// replicaHead reads where an active session's stored log ends and its
// newest snapshot's revision into out (lock: "" or a locking clause).
func (s *Store) replicaHead(ctx context.Context, q querier, sessionID, lock string, out *Replicated) error {
	var status SessionStatus
	err := q.QueryRow(ctx, s.q(`
		SELECT s.status, coalesce(h.rev, 0), coalesce(h.hash, ''),
		       coalesce((SELECT max(rev) FROM choir_control.session_snapshots p WHERE p.session_id = s.session_id), -1)
		FROM choir_control.sessions s
		LEFT JOIN LATERAL (SELECT rev, hash FROM choir_control.session_events e
		                   WHERE e.session_id = s.session_id ORDER BY rev DESC LIMIT 1) h ON true
		WHERE s.session_id = $1 `+lock), sessionID).Scan(&status, &out.Head.Rev, &out.Head.Hash, &out.SnapshotRev)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	if status != SessionActive {
		return fmt.Errorf("%s: %w", status, ErrSessionEnded)
	}
	return nil
}

// appendFresh checks events against the stored log ending at head and
// inserts those it lacks; head moves to the new end.
func (s *Store) appendFresh(ctx context.Context, tx pgx.Tx, sessionID string, head *Head, events []Event) error {
	refuse := func(err error, format string, args ...any) error {
		return &RefusedError{SessionID: sessionID, Head: *head, Err: err, Detail: fmt.Sprintf(format, args...)}
	}
	first, last := events[0].Rev, events[len(events)-1].Rev
	if first > head.Rev+1 {
		return refuse(ErrRevGap, "the batch starts at revision %d", first)
	}
	if first <= head.Rev {
		if err := s.checkStored(ctx, tx, sessionID, events[:min(head.Rev, last)-first+1]); err != nil {
			return refuse(ErrRevFork, "%v", err)
		}
	}
	if last <= head.Rev {
		return nil // all resent
	}
	fresh := events[head.Rev-first+1:]
	n := len(fresh)
	revs, types, hashes, payloads := make([]int64, n), make([]string, n), make([]string, n), make([]string, n)
	lanes, times := make([]*string, n), make([]time.Time, n)
	var h chain.Hasher
	prev := head.Hash
	for i, e := range fresh {
		p := []byte("null")
		if len(e.Payload) > 0 {
			var err error
			if p, err = chain.Canonical(e.Payload); err != nil {
				return refuse(ErrChainBroken, "event %d (%s): payload: %v", e.Rev, e.Type, err)
			}
		}
		e.Time = e.Time.UTC().Truncate(time.Microsecond) // what the hash covers
		if want := h.Sum(prev, chain.Event{Rev: e.Rev, Type: e.Type, Lane: e.Lane, Time: e.Time}, p); want != e.Hash {
			return refuse(ErrChainBroken, "%v", &chain.Break{Rev: e.Rev, Type: e.Type, Got: e.Hash, Want: want, Err: chain.ErrBroken})
		}
		prev = e.Hash
		revs[i], types[i], hashes[i], payloads[i], times[i] = e.Rev, e.Type, e.Hash, string(p), e.Time
		if e.Lane != "" {
			lanes[i] = &fresh[i].Lane
		}
	}
	if _, err := tx.Exec(ctx, s.q(`
		INSERT INTO choir_control.session_events (session_id, rev, event_type, lane, hash, payload, event_time)
		SELECT $1, r, t, l, h, p::jsonb, ts
		FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[]) AS x (r, t, l, h, p, ts)`),
		sessionID, revs, types, lanes, hashes, payloads, times); err != nil {
		return err
	}
	*head = Head{Rev: last, Hash: prev}
	return nil
}

// AppendEvents is Replicate of events alone, returning the acknowledged
// revision: the highest stored.
func (s *Store) AppendEvents(ctx context.Context, sessionID string, events []Event) (int64, error) {
	r, err := s.Replicate(ctx, sessionID, Batch{Events: events})
	return r.Head.Rev, err
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
	have, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Head])
	if err != nil {
		return err
	}
	if len(have) != len(resent) {
		return fmt.Errorf("the log has %d of revisions %d-%d", len(have), resent[0].Rev, resent[len(resent)-1].Rev)
	}
	for i, h := range have {
		if h.Hash != resent[i].Hash {
			return fmt.Errorf("revision %d is stored with hash %s, resent with %q", h.Rev, h.Hash, clipHash(resent[i].Hash))
		}
	}
	return nil
}

// clipHash shortens a hash a sender chose before it is echoed.
func clipHash(h string) string {
	if len(h) > 80 {
		return h[:80] + "…"
	}
	return h
}

// LogHead returns where a session's stored log ends.
func (s *Store) LogHead(ctx context.Context, sessionID string) (Head, error) {
	var h Head
	err := s.pool.QueryRow(ctx, s.q(`
		SELECT coalesce(h.rev, 0), coalesce(h.hash, '')
		FROM choir_control.sessions s
		LEFT JOIN LATERAL (SELECT rev, hash FROM choir_control.session_events e
		                   WHERE e.session_id = s.session_id ORDER BY rev DESC LIMIT 1) h ON true
		WHERE s.session_id = $1`), sessionID).Scan(&h.Rev, &h.Hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return Head{}, fmt.Errorf("log head of %s: %w", sessionID, ErrNotFound)
	}
	if err != nil {
		return Head{}, fmt.Errorf("log head of %s: %w", sessionID, err)
	}
	return h, nil
}

// AckedRev returns the highest revision stored for a session (0 for none).
func (s *Store) AckedRev(ctx context.Context, sessionID string) (int64, error) {
	h, err := s.LogHead(ctx, sessionID)
	return h.Rev, err
}

// EventsAfter returns a session's events with revisions above rev, in
// order: the tail to replay on top of a snapshot. Each verifies with
// chain.Verify from the hash of rev.
func (s *Store) EventsAfter(ctx context.Context, sessionID string, rev int64) ([]Event, error) {
	rows, err := s.pool.Query(ctx, s.q(`
		SELECT rev, event_type, coalesce(lane, ''), hash, payload, coalesce(event_time, created_at), created_at
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

// EventsPage returns at most max of a session's events after rev, in
// order, and the hash of rev ("" at 0), from which they verify: one page
// of a recovering agent's tail (FETCH_EVENTS). A rev the log does not hold
// is ErrNotFound.
func (s *Store) EventsPage(ctx context.Context, sessionID string, rev int64, max int) (string, []Event, error) {
	var prev string
	if rev > 0 {
		err := s.pool.QueryRow(ctx, s.q(`SELECT hash FROM choir_control.session_events WHERE session_id = $1 AND rev = $2`),
			sessionID, rev).Scan(&prev)
		if errors.Is(err, pgx.ErrNoRows) {
			return "", nil, fmt.Errorf("events of %s after %d: the log does not hold revision %d: %w", sessionID, rev, rev, ErrNotFound)
		}
		if err != nil {
			return "", nil, fmt.Errorf("events of %s after %d: %w", sessionID, rev, err)
		}
	}
	rows, err := s.pool.Query(ctx, s.q(`
		SELECT rev, event_type, coalesce(lane, ''), hash, payload, coalesce(event_time, created_at), created_at
		FROM choir_control.session_events
		WHERE session_id = $1 AND rev > $2 ORDER BY rev LIMIT $3`), sessionID, rev, max)
	if err != nil {
		return "", nil, fmt.Errorf("events of %s after %d: %w", sessionID, rev, err)
	}
	events, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Event])
	if err != nil {
		return "", nil, fmt.Errorf("events of %s after %d: %w", sessionID, rev, err)
	}
	return prev, events, nil
}

// Snapshot is a session's working memory at a revision (spec 13.4).
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
// or ErrNotFound. Recovery reads it, then the events from the oldest
// revision its lanes' windows hold (EventsAfter).
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
