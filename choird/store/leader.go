package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Two choird replicas, one leader (issue 26): the leader is whoever holds
// a Postgres advisory lock on a connection of its own, for as long as that
// connection's session lives; Postgres frees the lock when the session
// ends (the process died, the server dropped the connection, or the
// session stayed idle past idle_session_timeout). Each acquisition bumps a
// term in choir_control.leader; the leader's store carries its term, and
// every leader-only write (the outbox senders' records, the scheduler's
// fire claims) checks it in the same transaction, so a deposed leader's
// late write is refused with ErrDeposed instead of racing the new one.

// ErrNotLeader is returned by TryLead when another session holds the lock.
var ErrNotLeader = errors.New("another replica leads")

// ErrDeposed is returned by a leader-only write of a store whose term is
// over: another replica took the lead since.
var ErrDeposed = errors.New("this replica's term as leader is over")

// Lead is this process's hold on the leader lock: a dedicated connection
// whose session holds the advisory lock. It is not safe for concurrent
// use: one goroutine checks it, then releases it.
type Lead struct {
	s    *Store
	conn *pgx.Conn
	term int64
}

// LeadOptions tune how Postgres notices a leader that is gone.
type LeadOptions struct {
	// Holder names the replica in choir_control.leader (host and pid).
	Holder string
	// IdleTimeout ends the lock's session, freeing the lock, when the
	// leader sent nothing on it for that long (a frozen process); the
	// leader checks the lock well within it. 0 leaves the server's
	// setting. Needs Postgres 14 or later.
	IdleTimeout time.Duration
	// Keepalive sets the session's TCP keepalives (idle, interval, three
	// probes): the server's bound on noticing a leader cut off by the
	// network. 0 leaves the server's settings.
	Keepalive time.Duration
}

// leaderTable holds the current term; made by the first TryLead.
const leaderTable = `CREATE TABLE IF NOT EXISTS choir_control.leader (
	id     int PRIMARY KEY CHECK (id = 1),
	term   bigint NOT NULL,
	holder text NOT NULL,
	since  timestamptz NOT NULL)`

// TryLead tries once to become the leader: it opens a connection of its
// own, takes the advisory lock without waiting, and bumps the term. It
// returns ErrNotLeader when another session holds the lock. From then on
// the store's leader-only writes carry the new term.
func (s *Store) TryLead(ctx context.Context, o LeadOptions) (*Lead, error) {
	cfg := s.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = "choird leader lock"
	if o.IdleTimeout > 0 {
		cfg.RuntimeParams["idle_session_timeout"] = fmt.Sprint(o.IdleTimeout.Milliseconds())
	}
	if o.Keepalive > 0 {
		secs := fmt.Sprint(max(1, int(o.Keepalive.Seconds())))
		cfg.RuntimeParams["tcp_keepalives_idle"] = secs
		cfg.RuntimeParams["tcp_keepalives_interval"] = secs
		cfg.RuntimeParams["tcp_keepalives_count"] = "3"
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("leader lock: connect: %s", redact(err, cfg.Password))
	}
	l := &Lead{s: s, conn: conn}
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtext($1))`, s.lockName()).Scan(&got); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("leader lock: %w", err)
	}
	if !got {
		conn.Close(ctx)
		return nil, ErrNotLeader
	}
	if _, err := conn.Exec(ctx, s.q(leaderTable)); err != nil && !isDuplicate(err) {
		conn.Close(ctx)
		return nil, fmt.Errorf("leader lock: create the leader table: %w", err)
	}
	if err := conn.QueryRow(ctx, s.q(`INSERT INTO choir_control.leader AS l (id, term, holder, since) VALUES (1, 1, $1, now())
		ON CONFLICT (id) DO UPDATE SET term = l.term + 1, holder = $1, since = now() RETURNING term`), o.Holder).Scan(&l.term); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("leader lock: bump the term: %w", err)
	}
	s.fence.Store(l.term)
	return l, nil
}

// isDuplicate reports the error two sessions making the leader table at
// the same instant may get (a unique violation on the catalog).
func isDuplicate(err error) bool {
	code, _ := pgCode(err)
	return code == "23505" || code == "42P07"
}

// lockName is what the advisory lock's key is hashed from: one leader per
// namespace of a database.
func (s *Store) lockName() string { return s.ns + "_control.leader" }

// Term is the term this lead began.
func (l *Lead) Term() int64 { return l.term }

// Check asks, on the lock's own connection, that the session still lives
// and the term is still this one. An error means the lead is lost (or
// cannot be confirmed): stop every leader-only part.
func (l *Lead) Check(ctx context.Context) error {
	var term int64
	if err := l.conn.QueryRow(ctx, l.s.q(`SELECT term FROM choir_control.leader WHERE id = 1`)).Scan(&term); err != nil {
		return fmt.Errorf("leader lock: the lock's session is gone: %w", err)
	}
	if term != l.term {
		return fmt.Errorf("leader lock: term %d is over, term %d leads: %w", l.term, term, ErrDeposed)
	}
	return nil
}

// Release gives the lock up (ending its session) and fences the store's
// leader-only writes off until it leads again.
func (l *Lead) Release(ctx context.Context) {
	l.s.fence.CompareAndSwap(l.term, -l.term)
	l.conn.Close(ctx) // the session ends: Postgres frees the lock
}

// fencedQuerier is a pool or a transaction, for leader-only writes.
type fencedQuerier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// fenced runs a leader-only write. A store that never led (a single
// choird) runs it as it is; a leader's runs it in a transaction that
// first reads the term under a share lock (so a new leader's bump waits
// for it, or it sees the bump) and refuses it with ErrDeposed when the
// term is not this store's any more.
func (s *Store) fenced(ctx context.Context, what string, fn func(q fencedQuerier) error) error {
	term := s.fence.Load()
	if term == 0 {
		return fn(s.pool)
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var cur int64
		if err := tx.QueryRow(ctx, s.q(`SELECT term FROM choir_control.leader WHERE id = 1 FOR SHARE`)).Scan(&cur); err != nil {
			return fmt.Errorf("%s: read the leader's term: %w", what, err)
		}
		if cur != term {
			return fmt.Errorf("%s: refused, term %d is over (term %d leads): %w", what, max(term, -term), cur, ErrDeposed)
		}
		return fn(tx)
	})
}
