package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"choir/choird/lifecycle"
	"choir/choird/store"
)

// Defaults of schemaRepair.
const (
	// defaultRepairGap is the least time between two repair attempts, so a
	// database that keeps losing its tables (or refuses to create them) is
	// not hammered by the probe and every failed heartbeat.
	defaultRepairGap = 15 * time.Second
	// repairTimeout bounds one attempt: Bootstrap and the sessions' records.
	repairTimeout = 2 * time.Minute
)

// schemaRepair makes the schemas again when Postgres answers without them:
// the server was replaced, or restored from a backup that lacks choird's
// schemas. The Postgres probe asks it after each ping (check), and a
// heartbeat that fails because a table or schema is missing, or because
// the session's row is gone, asks it at once (kick). A repair runs
// Bootstrap with the agents and embedding dimensions of the start, then
// records the running sessions again (lifecycle.Manager.RecordRunning), so
// their agents' heartbeats are refused naming head 0 and they resend their
// logs from revision 1. At most one attempt runs at a time, and attempts
// are at least gap apart.
type schemaRepair struct {
	st     *store.Store
	agents []string
	dims   int
	// targets, when set, gives the agents and dimensions of the running
	// config at each check instead: an agent added to it (a config
	// applied while choird runs) gets its schema within a probe interval.
	targets  func() ([]string, int)
	sessions interface {
		RecordRunning(ctx context.Context) (int, error)
	}
	log *slog.Logger
	// base ends when choird stops; a repair outlives the probe's 5 s but
	// not choird.
	base context.Context
	gap  time.Duration // zero means defaultRepairGap

	mu   sync.Mutex
	busy bool
	last time.Time // when the last attempt began
	wg   sync.WaitGroup
}

// check is the Postgres probe after a successful ping: nil when every
// table is there or a repair just made them, else why not (the probe shows
// choird degraded with it).
func (r *schemaRepair) check(ctx context.Context) error {
	r.refresh()
	missing, err := r.st.MissingTables(ctx, r.currentAgents())
	if err != nil {
		return err
	}
	if len(missing) == 0 {
		return nil
	}
	if !r.claim() {
		return fmt.Errorf("Postgres lacks choird's tables %s; a repair is under way or was tried less than %s ago", strings.Join(missing, ", "), r.interval())
	}
	defer r.release()
	rctx, cancel := context.WithTimeout(r.base, repairTimeout)
	defer cancel()
	return r.repair(rctx, missing)
}

// kick starts a repair in the background if none runs and the last began
// at least gap ago: a heartbeat failed in a way a repair mends.
func (r *schemaRepair) kick() {
	if !r.claim() {
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer r.release()
		ctx, cancel := context.WithTimeout(r.base, repairTimeout)
		defer cancel()
		r.refresh()
		missing, err := r.st.MissingTables(ctx, r.currentAgents())
		if err != nil {
			r.log.Warn("cannot check choird's tables after a failed heartbeat", "error", err.Error())
			return
		}
		r.repair(ctx, missing)
	}()
}

// repair creates the missing tables, if any, and records the running
// sessions the store lacks.
func (r *schemaRepair) repair(ctx context.Context, missing []string) error {
	if len(missing) > 0 {
		agents, dims := r.current()
		r.log.Warn("Postgres lacks choird's tables: creating them (a new agent, or a database replaced or restored without them)",
			"missing", strings.Join(missing, ", "), "agents", strings.Join(agents, ", "))
		if err := r.st.Bootstrap(ctx, agents, dims); err != nil {
			r.log.Error("recreating choird's tables failed", "error", err.Error())
			return fmt.Errorf("Postgres lacks choird's tables %s and creating them again failed: %w; choird tries again in %s",
				strings.Join(missing, ", "), err, r.interval())
		}
	}
	n, err := r.sessions.RecordRunning(ctx)
	if err != nil {
		r.log.Error("recording the running sessions again failed", "error", err.Error(), "recorded", n)
		return fmt.Errorf("choird's tables are there, but %w; choird tries again in %s", err, r.interval())
	}
	if len(missing) > 0 || n > 0 {
		r.log.Info("choird's tables are back", "tables_created", len(missing), "sessions_recorded", n)
	}
	return nil
}

func (r *schemaRepair) claim() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if r.busy || (!r.last.IsZero() && now.Sub(r.last) < r.interval()) {
		return false
	}
	r.busy, r.last = true, now
	return true
}

func (r *schemaRepair) release() {
	r.mu.Lock()
	r.busy = false
	r.mu.Unlock()
}

func (r *schemaRepair) interval() time.Duration {
	if r.gap > 0 {
		return r.gap
	}
	return defaultRepairGap
}

// repairingStore is the lifecycle's Store that asks for a repair when a
// heartbeat's batch cannot be stored because a table or schema is missing
// (SQLSTATE 42P01, 3F000) or the session's row is gone.
type repairingStore struct {
	lifecycle.Store
	repair *schemaRepair
}

func (s *repairingStore) Replicate(ctx context.Context, sessionID string, b lifecycle.Replication) (lifecycle.Replicated, error) {
	got, err := s.Store.Replicate(ctx, sessionID, b)
	if err != nil && (store.IsMissingSchema(err) || errors.Is(err, store.ErrNotFound)) {
		s.repair.kick()
	}
	return got, err
}

// refresh takes the running config's agents and dimensions, when targets
// is set.
func (r *schemaRepair) refresh() {
	if r.targets == nil {
		return
	}
	agents, dims := r.targets()
	r.mu.Lock()
	r.agents, r.dims = agents, dims
	r.mu.Unlock()
}

// current is the agents and dimensions a repair bootstraps.
func (r *schemaRepair) current() ([]string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.agents, r.dims
}

func (r *schemaRepair) currentAgents() []string {
	agents, _ := r.current()
	return agents
}
