package store

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"choir/internal/metrics"
)

func TestPostgresErrorsAreCountedByClass(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		err   error
		class string // "" means not counted
	}{
		{"unique violation", context.Background(), &pgconn.PgError{Code: "23505"}, "23"},
		{"wrapped undefined table", context.Background(), fmt.Errorf("list: %w", &pgconn.PgError{Code: "42P01"}), "42"},
		{"no answer", context.Background(), errors.New("dial tcp 127.0.0.1:5432: connect: connection refused"), "connection"},
		{"malformed code", context.Background(), &pgconn.PgError{Code: "X"}, "connection"},
		{"no rows", context.Background(), pgx.ErrNoRows, ""},
		{"cancelled by the caller", cancelled, errors.New("conn closed"), ""},
		{"context.Canceled", context.Background(), fmt.Errorf("query: %w", context.Canceled), ""},
		{"success", context.Background(), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			classes := []string{"23", "42", "connection"}
			before := map[string]float64{}
			for _, c := range classes {
				before[c] = metrics.PostgresErrors.With(c).Value()
			}
			errorTracer{}.TraceQueryEnd(tc.ctx, nil, pgx.TraceQueryEndData{Err: tc.err})
			for _, c := range classes {
				want := before[c]
				if c == tc.class {
					want++
				}
				if got := metrics.PostgresErrors.With(c).Value(); got != want {
					t.Errorf("choir_postgres_errors_total{class=%q} after %v = %v; want %v", c, tc.err, got, want)
				}
			}
		})
	}
}
