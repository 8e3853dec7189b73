package main

import (
	"context"
	"log/slog"
	"path/filepath"

	"choir/choird/control"
	"choir/choird/headless"
	"choir/choird/headless/kb"
	"choir/choird/headless/objects"
	"choir/choird/store"
	"choir/internal/config"
	"choir/internal/embed"
	"choir/internal/logs"
)

// startKB starts the local knowledge base of headless runs
// (choird/headless/kb): its indexer follows the receipts (woken by the
// director after each append), its vectors come from the embedder memory
// uses, the director checks notes' object citations with it, and the
// admin API searches it. The function it returns stops the indexer and
// the embedding queue (bounded like memory's). Without the object store
// choird runs without a knowledge base, and says so.
func startKB(plane *control.Plane, st *store.Store, director *headless.Director, emb embed.Embedder, home config.Home, log *slog.Logger) (*kb.KB, func()) {
	objs, err := objects.Open(filepath.Join(home.Dir, "objects"))
	if err == nil {
		var k *kb.KB
		if k, err = kb.New(kb.Config{Store: st, Objects: objs, Embedder: emb, Log: log}); err == nil {
			director.CheckCites = k.CheckCites
			director.Changed = func(string, headless.Kind) { k.Kick() } // startHeadless chains the loop's kick
			plane.SetKnowledgeBase(kb.Operator{KB: k})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); k.Run(ctx) }()
			return k, func() {
				cancel()
				<-done
				cctx, stop := context.WithTimeout(context.Background(), memoryCloseTimeout)
				defer stop()
				if err := k.Close(cctx); err != nil {
					log.Warn("kb: embedding queue stopped before it finished; the next start queues the rest", logs.KeyError, err.Error())
				}
			}
		}
	}
	log.Error("the knowledge base is not available", logs.KeyError, err.Error())
	return nil, func() {}
}

// evidenceFunc is the runner's Evidence hook: pointers of the knowledge
// base for a run's context pack.
type evidenceFunc = func(ctx context.Context, agent, query string, limit int) ([]headless.Pointer, error)

// kbEvidence is k's search for the context pack; nil (no evidence) when
// choird runs without a knowledge base.
func kbEvidence(k *kb.KB) evidenceFunc {
	if k == nil {
		return nil
	}
	return k.Evidence
}
