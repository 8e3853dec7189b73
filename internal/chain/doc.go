// Package chain is the hash chain of a session's commit log, shared by the
// agent that builds it (agent/arbiter) and choird that verifies and stores
// it (choird/store): one definition of canonical JSON and of an event's
// hash, so the two can never disagree.
//
// Events are numbered 1, 2, 3, … without gaps, and each carries
//
//	hash_n = hex(SHA-256(hash_{n-1} ‖ canonical(event_n)))    hash_0 = ""
//
// where canonical(event) is the event without its hash as the JSON object
// {"lane","payload","rev","time","type"}: the payload in Canonical form and
// the time in TimeLayout (UTC, microseconds). Canonical JSON survives a
// round trip through Postgres jsonb, so a log read back from the store
// verifies with Verify from the genesis hash or from any stored hash.
//
// The package imports only the standard library.
package chain
