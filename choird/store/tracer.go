package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"choir/internal/metrics"
)

// errorTracer counts failed queries, batches and connection acquisitions
// in choir_postgres_errors_total (pgx calls it for every one; it does no
// other work): by SQLSTATE class for an error the server answered, as
// "connection" for one it did not. A cancelled call and "no rows" are not
// errors of Postgres.
type errorTracer struct{}

var (
	_ pgx.QueryTracer       = errorTracer{}
	_ pgx.BatchTracer       = errorTracer{}
	_ pgxpool.AcquireTracer = errorTracer{}
)

func (errorTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (errorTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	countError(ctx, d.Err)
}

func (errorTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (errorTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (errorTracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchEndData) {
	countError(ctx, d.Err)
}

func (errorTracer) TraceAcquireStart(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	return ctx
}

func (errorTracer) TraceAcquireEnd(ctx context.Context, _ *pgxpool.Pool, d pgxpool.TraceAcquireEndData) {
	countError(ctx, d.Err)
}

func countError(ctx context.Context, err error) {
	if err == nil || errors.Is(err, pgx.ErrNoRows) || errors.Is(err, context.Canceled) || ctx.Err() != nil {
		return
	}
	metrics.PostgresErrors.With(errorClass(err)).Inc()
}

// errorClass is the SQLSTATE class (its first two characters: "23"
// integrity constraint violation, "42" syntax or access rule, "53"
// insufficient resources, ...) or "connection" when the server did not answer.
func errorClass(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && len(pe.Code) == 5 {
		return pe.Code[:2]
	}
	return "connection"
}
