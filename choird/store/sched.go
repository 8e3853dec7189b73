package store

import (
	"context"
	"fmt"
	"time"

	"choir/choird/headless/sched"

	"github.com/jackc/pgx/v5/pgconn"
)

// The headless scheduler's fires (issue 16): sched_fires in the control
// schema. A claim is an insert of a unique key, so of two claims of the
// same fire, by one choird or by one before and one after a restart,
// exactly one succeeds.

// Fires is the store as choird/headless/sched claims its fires.
type Fires struct{ s *Store }

var _ sched.Store = Fires{}

// Fires returns the scheduler's view of the store.
func (s *Store) Fires() Fires { return Fires{s} }

// fireRetention is how long claimed fires are kept: longer than a year,
// so the newest slot of a yearly schedule is still there after a restart.
const fireRetention = 400 * 24 * time.Hour

// ClaimFire records f and reports whether this call was the first to
// claim its (agent, schedule, key). On a first claim it prunes the
// schedule's fires older than fireRetention before f.
func (f Fires) ClaimFire(ctx context.Context, fire sched.Fire) (bool, error) {
	var tag pgconn.CommandTag
	err := f.s.fenced(ctx, "claim fire", func(q fencedQuerier) (err error) {
		tag, err = q.Exec(ctx, f.s.q(`
		INSERT INTO choir_control.sched_fires (agent_id, schedule_id, fire_key, cron, at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (agent_id, schedule_id, fire_key) DO NOTHING`),
			fire.Agent, fire.Schedule, fire.Key, fire.Cron, fire.At.UTC())
		return err
	})
	if err != nil {
		return false, fmt.Errorf("claim fire %s of schedule %s/%s: %w", fire.Key, fire.Agent, fire.Schedule, err)
	}
	if tag.RowsAffected() == 0 {
		return false, nil
	}
	if _, err := f.s.pool.Exec(ctx, f.s.q(`
		DELETE FROM choir_control.sched_fires WHERE agent_id = $1 AND schedule_id = $2 AND at < $3`),
		fire.Agent, fire.Schedule, fire.At.UTC().Add(-fireRetention)); err != nil {
		return true, fmt.Errorf("prune fires of schedule %s/%s: %w", fire.Agent, fire.Schedule, err)
	}
	return true, nil
}

// LastFire returns the slot of the schedule's newest claimed cron fire,
// the zero Time when it has none.
func (f Fires) LastFire(ctx context.Context, agent, schedule string) (time.Time, error) {
	var last *time.Time
	err := f.s.pool.QueryRow(ctx, f.s.q(`
		SELECT max(at) FROM choir_control.sched_fires WHERE agent_id = $1 AND schedule_id = $2 AND cron`),
		agent, schedule).Scan(&last)
	if err != nil {
		return time.Time{}, fmt.Errorf("last fire of schedule %s/%s: %w", agent, schedule, err)
	}
	if last == nil {
		return time.Time{}, nil
	}
	return last.UTC(), nil
}
