package main

import (
	"choir/choird/memory"
	"choir/choird/store"
)

// memoryTools builds the memory host tools (choir.memory.query and
// choir.memory.upsert) and the operator's `choirctl memory` on the store
// and the session memory pipeline: queries embed with its embedder, and
// upserted knowledge is embedded through its queue, off the tool's path
// (until its vector arrives, text search finds the document).
func memoryTools(st *store.Store, mem *memory.Service) *memory.Tools {
	return &memory.Tools{Store: st, Embedder: mem.Embedder(), Index: mem}
}
