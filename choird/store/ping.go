package store

import "context"

// Ping checks that Postgres answers, on a connection of the pool: the
// control plane's health probe.
func (s *Store) Ping(ctx context.Context) error {
	return s.pool.Ping(ctx)
}
