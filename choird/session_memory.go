package main

import (
	"context"
	"log/slog"
	"time"

	"choir/choird/control"
	"choir/choird/ledger"
	"choir/choird/memory"
	"choir/choird/store"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/embed"
	"choir/internal/logs"
)

// memoryCloseTimeout bounds how long choird's stop waits for the session
// closes under way and the embedding queue; what is left is finished by the
// next start's sweep.
const memoryCloseTimeout = 10 * time.Second

// startMemory builds the embedder config.json asks for (charged to the
// spend ledger, to the agent of a session's call when agentOf knows it)
// and the session memory pipeline on it (choird/memory), flushes its
// embedding queue on every heartbeat interval, and returns it with the
// function that stops both (bounded by memoryCloseTimeout).
func startMemory(plane *control.Plane, st *store.Store, spend *ledger.Ledger, agentOf func(sessionID string) (string, bool), log *slog.Logger) (*memory.Service, func(), error) {
	l := plane.Config()
	emb, err := embed.FromConfig(l.Config.Embedding, l.Secrets)
	if err != nil {
		plane.Step("start the embedding pipeline", ctl.StepFailed, err.Error())
		return nil, nil, err
	}
	log.Info("embeddings", "embedder", embed.Describe(emb))
	emb = meterEmbeddings(emb, spend, agentOf, log) // spend.go: reserved, refused at a cap, recorded
	svc, err := memory.New(memory.Config{Store: st, Embedder: emb, Log: log,
		MidTermSessions: func() int { return plane.Config().Config.MidTermSessions }})
	if err != nil {
		plane.Step("start the embedding pipeline", ctl.StepFailed, err.Error())
		return nil, nil, err
	}
	plane.Step("start the embedding pipeline", ctl.StepOK, embed.Describe(emb))
	ctx, stopTicker := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		flushOnHeartbeat(ctx, svc, func() time.Duration {
			return time.Duration(plane.Config().Config.HeartbeatIntervalMS) * time.Millisecond
		})
	}()
	stop := func() {
		stopTicker()
		<-done
		cctx, cancel := context.WithTimeout(context.Background(), memoryCloseTimeout)
		defer cancel()
		if err := svc.Close(cctx); err != nil {
			log.Warn("memory pipeline stopped before it finished; the next start finishes it", logs.KeyError, err.Error())
		}
	}
	return svc, stop, nil
}

// flushOnHeartbeat flushes the embedding queue every heartbeat interval
// (§11.9: "flushed on heartbeat tick"), reading the interval again after
// each tick so a config apply changes it, until ctx ends.
func flushOnHeartbeat(ctx context.Context, svc *memory.Service, interval func() time.Duration) {
	for {
		d := interval()
		if d <= 0 {
			d = time.Duration(config.DefaultTunables().HeartbeatIntervalMS) * time.Millisecond
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
			svc.Flush()
		}
	}
}

// sweepMemory has the memory pipeline finish, in the background, what an
// earlier run left (sessions ended without their chunks, chunks without
// vectors) for every configured agent.
func sweepMemory(svc *memory.Service, plane *control.Plane) {
	agents := config.SortedNames(plane.Config().Config.Agents)
	svc.SweepInBackground(agents)
}
