package main

import (
	"context"
	"log/slog"
	"time"

	"choir/choird/memory"
	"choir/choird/store"
	"choir/internal/config"
	"choir/internal/embed"
	"choir/internal/logs"
)

// memoryTools builds the memory host tools (choir.memory.query and
// choir.memory.upsert) and the operator's `choirctl memory` on the store
// and the configured embedder. An embedder that cannot be built (a
// missing secret) leaves semantic search to text search, which says so in
// every answer.
func memoryTools(l *config.Loaded, st *store.Store, log *slog.Logger) *memory.Tools {
	t := &memory.Tools{Store: st}
	emb, err := embed.FromConfig(l.Config.Embedding, l.Secrets)
	if err != nil {
		log.Warn("memory tools without an embedder: semantic search answers by text", logs.KeyError, err.Error())
		return t
	}
	t.Embedder = emb
	t.Index = &directIndex{st: st, emb: emb, log: log, slots: make(chan struct{}, 4)}
	return t
}

// directIndex embeds upserted knowledge off the tool's path, one goroutine
// per document and at most cap(slots) at a time; when all are busy the
// document waits for text search alone. It stands in until the session
// pipeline's queue (memory.Service.EnqueueKnowledge) is wired here.
type directIndex struct {
	st    *store.Store
	emb   embed.Embedder
	log   *slog.Logger
	slots chan struct{}
}

var _ memory.Indexer = (*directIndex)(nil)

func (x *directIndex) EnqueueKnowledge(agentID, docID, text string) {
	select {
	case x.slots <- struct{}{}:
	default:
		x.log.Warn("knowledge document left without a vector: the embedder is busy; text search finds it", "agent", agentID, "document", docID)
		return
	}
	go func() {
		defer func() { <-x.slots }()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		vecs, err := x.emb.Embed(ctx, []string{text})
		if err == nil {
			err = embed.CheckVectors(vecs, 1, x.emb.Dimensions())
		}
		if err == nil {
			err = x.st.SetKnowledgeVector(ctx, agentID, docID, store.ContentHash(text), vecs[0])
		}
		if err != nil {
			x.log.Warn("knowledge document left without a vector; text search finds it", "agent", agentID, "document", docID, logs.KeyError, err.Error())
		}
	}()
}
