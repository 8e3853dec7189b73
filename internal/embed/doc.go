// Package embed turns text into vectors for choir's memory (spec §11.9).
//
// An Embedder embeds a batch of texts into vectors of a fixed size. Two
// implementations exist:
//
//   - Client calls an OpenAI-compatible POST <endpoint>/embeddings through
//     internal/openai (the only wire code for that endpoint): the configured
//     model, "dimensions" and "encoding_format": "float" in the body, the key
//     as a Bearer token and never in an error. The answer must hold one
//     vector per text, each of the configured size; Embed returns them in
//     input order.
//   - Hashing is the offline embedder of tests, `make demo` and installations
//     without an embedding key: lower-cased words and character trigrams
//     hashed with signs into N dimensions, L2-normalised. Texts that share
//     words score higher under cosine than texts that share none, but it
//     knows no synonyms: its Model says "hashing (offline, not semantic)".
//
// FromConfig picks one from config.json's "embedding" block.
//
// # The queue
//
// Queue is the pipeline between the writers of memory (choir.memory.upsert,
// the session-close chunker) and the Embedder. Enqueue never waits for the
// network: it appends the item, or refuses it at once when 10,000 items are
// outstanding or the queue is closed. A goroutine embeds what is pending when
// Flush is called (choird calls it on each heartbeat tick) or as soon as 32
// items wait, in calls of at most 32 texts. A failed call is retried 3 times
// after 1 s, 2 s and 4 s (each plus up to half again of jitter, and never
// sooner than a 429's Retry-After); only rate limits, server errors,
// timeouts, network failures and malformed answers are retried; a batch the
// provider refuses as a bad request is tried again one text at a time, so
// that one text it will not take costs no other its vector. Every
// accepted item is handed to the Deliver callback exactly once: with its
// vector, or with an error and no vector, when the caller stores the chunk
// without one (full-text search still finds it). Close embeds what is left,
// or, when its context ends first, cancels the call under way and delivers
// the rest with an error; no goroutine outlives it.
package embed
