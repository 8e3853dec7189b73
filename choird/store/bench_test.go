package store

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"choir/testkit/pgtest"
)

// BenchmarkAppendEvents measures one heartbeat's worth of replication: a
// batch of 10 new events, in one transaction.
func BenchmarkAppendEvents(b *testing.B) {
	s := newStore(b, Config{}, "alpha")
	ctx := context.Background()
	if _, err := s.CreateSession(ctx, NewSession{SessionID: "s1", AgentID: "alpha", LeaseID: "l", StartedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	var next int64 = 1
	b.ReportAllocs()
	for b.Loop() {
		batch := events(next, next+9)
		if _, err := s.AppendEvents(ctx, "s1", batch); err != nil {
			b.Fatal(err)
		}
		next += 10
	}
}

// BenchmarkExecModes compares pgx's query modes on a heartbeat's work (a
// batch of 10 events appended, the session read back): the store's
// (cache_describe) against the default statement cache, which it gave up
// (here with DEALLOCATE ALL at connect, without which it fails on PGlite's
// shared session once a client has used it), exec (untyped text
// parameters) and describe_exec (two round trips a query).
func BenchmarkExecModes(b *testing.B) {
	for _, m := range []pgx.QueryExecMode{execMode, pgx.QueryExecModeCacheStatement, pgx.QueryExecModeExec, pgx.QueryExecModeDescribeExec} {
		b.Run(m.String(), func(b *testing.B) {
			db := pgtest.DB(b)
			ctx := context.Background()
			s, err := open(ctx, Config{DSN: db.DSN, Namespace: db.Namespace}, func(c *pgxpool.Config) {
				c.ConnConfig.DefaultQueryExecMode = m
				if m == pgx.QueryExecModeCacheStatement {
					c.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
						_, err := conn.Exec(ctx, "DEALLOCATE ALL")
						return err
					}
				}
			})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Drop(ctx); s.Close() })
			if err := s.Bootstrap(ctx, []string{"alpha"}, dims); err != nil {
				b.Fatal(err)
			}
			if _, err := s.CreateSession(ctx, NewSession{SessionID: "s1", AgentID: "alpha", LeaseID: "l", StartedAt: time.Now()}); err != nil {
				b.Fatal(err)
			}
			var next int64 = 1
			for b.Loop() {
				if _, err := s.AppendEvents(ctx, "s1", events(next, next+9)); err != nil {
					b.Fatal(err)
				}
				if _, err := s.GetSession(ctx, "s1"); err != nil {
					b.Fatal(err)
				}
				next += 10
			}
		})
	}
}
