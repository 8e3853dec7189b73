package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"choir/choird/control"
	"choir/choird/lease"
	"choir/choird/lifecycle"
	"choir/choird/store"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/docker"
	"choir/internal/logs"
)

// defaultEmbeddingDims sizes the vector columns when no embedding model is
// configured (text-embedding-3-small, §11.9).
const defaultEmbeddingDims = 1536

// openStore runs startup steps 3-5: connect to Postgres with the admin
// credentials, create the control schema and each agent's schema and role,
// and report the pool.
func openStore(ctx context.Context, plane *control.Plane) (*store.Store, error) {
	l := plane.Config()
	pg := l.Config.Postgres
	user, password := config.SplitCredentials(l.Secrets[pg.Secret])
	st, err := store.Open(ctx, store.Config{
		Host: pg.Host, Port: pg.Port, Database: pg.Database, User: user, Password: password,
		SSLMode: pg.SSLMode, MaxConns: pg.PoolSize, Namespace: pg.Namespace,
	})
	where := net.JoinHostPort(pg.Host, strconv.Itoa(pg.Port)) + "/" + pg.Database
	if err != nil {
		plane.Step("connect to Postgres", ctl.StepFailed, err.Error())
		return nil, err
	}
	plane.Step("connect to Postgres", ctl.StepOK, where+" as "+user)
	ids, dims := bootstrapTargets(l)
	if err := st.Bootstrap(ctx, ids, dims); err != nil {
		st.Close()
		plane.Step("initialise per-agent schemas and roles", ctl.StepFailed, err.Error())
		return nil, err
	}
	plane.Step("initialise per-agent schemas and roles", ctl.StepOK, fmt.Sprintf("%s_control and %d agent schemas", pg.Namespace, len(ids)))
	plane.Step("initialise the connection pool", ctl.StepOK, fmt.Sprintf("at most %d connections", pg.PoolSize))
	return st, nil
}

// bootstrapTargets are the agents whose schemas Bootstrap makes and the
// size of their embeddings, at start and again when the tables go missing.
func bootstrapTargets(l *config.Loaded) (agents []string, dims int) {
	dims = defaultEmbeddingDims
	if l.Config.Embedding != nil {
		dims = l.Config.Embedding.Dimensions
	}
	return config.SortedNames(l.Config.Agents), dims
}

// startLifecycle runs startup steps 6 and 7 against the Docker engine and
// returns the agent lifecycle.
func startLifecycle(ctx context.Context, plane *control.Plane, st *store.Store, lm *logs.Manager, home config.Home, replica bool, log *slog.Logger) (*lifecycle.Manager, *docker.Client, error) {
	dc, err := docker.New(ctx, "")
	if err != nil {
		err = fmt.Errorf("the Docker engine is not reachable (%w): start dockerd, or set DOCKER_HOST", err)
		plane.Step("remove orphaned containers", ctl.StepFailed, err.Error())
		return nil, nil, err
	}
	ids, dims := bootstrapTargets(plane.Config())
	repair := &schemaRepair{st: st, agents: ids, dims: dims, log: log.With(logs.KeySystem, "store"), base: ctx,
		targets: func() ([]string, int) { return bootstrapTargets(plane.Config()) }}
	m := &lifecycle.Manager{
		Docker: dc, Store: &repairingStore{Store: sessionStore{st}, repair: repair}, Leases: lease.NewTable(), Logs: lm, Home: home,
		Log: log.With(logs.KeySystem, "lifecycle"), Config: plane.Current, Instance: instanceID(home),
		Replicated: replica,
	}
	if m.Runtime, err = agentRuntime(ctx, plane, dc); err != nil {
		plane.Step("remove orphaned containers", ctl.StepFailed, err.Error())
		dc.Close()
		return nil, nil, err
	}
	repair.sessions = m
	n, err := m.RemoveOrphans(ctx)
	if err != nil {
		plane.Step("remove orphaned containers", ctl.StepFailed, err.Error())
		dc.Close()
		return nil, nil, err
	}
	plane.Step("remove orphaned containers", ctl.StepOK, fmt.Sprintf("%d removed (engine %s, API %s)", n, dc.Host(), dc.APIVersion()))
	n, err = m.CrashStaleSessions(ctx)
	if err != nil {
		plane.Step("clean up stale leases", ctl.StepFailed, err.Error())
		dc.Close()
		return nil, nil, err
	}
	plane.Step("clean up stale leases", ctl.StepOK, fmt.Sprintf("%d stale sessions marked crashed", n))
	return m, dc, nil
}

// instanceID names this installation on the Docker engine: a hash of its
// home directory, so two choirds sharing an engine never touch each other's
// containers.
func instanceID(home config.Home) string {
	sum := sha256.Sum256([]byte(home.Dir))
	return hex.EncodeToString(sum[:6])
}

// healthProbes are what the control plane checks to tell a degraded choird.
// The Postgres probe pings, then checks that choird's tables are there and
// makes them again if the database came back without them (schemaRepair).
func healthProbes(st *store.Store, dc *docker.Client, m *lifecycle.Manager) []control.Probe {
	pg := st.Ping
	if rs, ok := m.Store.(*repairingStore); ok {
		pg = postgresProbe(st, rs.repair)
	}
	return []control.Probe{
		{Name: "Postgres", Check: pg,
			Fix: "committed events and heartbeats are not stored meanwhile (the agents keep them and resend); check that the database server in config.json's postgres block runs; choird creates its schemas again if the database comes back without them"},
		{Name: "the Docker engine", Check: func(ctx context.Context) error { _, err := dc.Ping(ctx); return err },
			Fix: "agents cannot start or stop meanwhile; start dockerd, or check DOCKER_HOST"},
	}
}

// postgresProbe pings Postgres, then has repair check its tables.
func postgresProbe(st *store.Store, repair *schemaRepair) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := st.Ping(ctx); err != nil {
			return err
		}
		return repair.check(ctx)
	}
}
