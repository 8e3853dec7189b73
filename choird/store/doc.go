// Package store is choird's Postgres room: the only package that imports
// pgx. It keeps the runtime state of spec section 23 (sessions, their
// leases, event logs, snapshots, approvals, and per-agent memory) in one
// database, and no other package writes SQL.
//
// # Schema
//
// The DDL is schema.sql, embedded and run by Bootstrap in one transaction at
// every start (every statement is IF NOT EXISTS; migrations are manual in
// v1). Names carry the store's namespace, "choir" unless Config.Namespace
// says otherwise (tests use one namespace each):
//
//	choir_control                          owned by choird's user
//	  agents             agent_id PK, name, image_version, created_at, config jsonb
//	  sessions           session_id PK, agent_id -> agents, lease_id,
//	                     status active|stopped|crashed, started_at, ended_at,
//	                     resource_bindings jsonb, last_heartbeat_at,
//	                     config_version, image_version;
//	                     at most one active session per agent (unique partial index)
//	  leases             (resource_kind, resource_name) PK, session_id -> sessions:
//	                     exclusive resources of active sessions (spec 6.4)
//	  session_events     id, session_id, rev > 0, event_type, lane edge|core|NULL,
//	                     hash, payload jsonb, event_time, created_at;
//	                     unique (session_id, rev); one verified hash chain per session
//	  session_snapshots  (session_id, rev) PK, snapshot jsonb, created_at
//	  pending_approvals  id (uuid text) PK, session_id, agent_id, request_type,
//	                     summary, payload jsonb, status pending|approved|rejected,
//	                     created_at, resolved_at, resolved_by
//
//	choir_<agent>                          one per agent, "-" in the id becomes "_";
//	                                       owned by the NOLOGIN role of the same name
//	  memory_documents      id uuid PK, session_id, tier, chunk_index, text,
//	                        tsv (generated from text, 'simple' config, GIN), created_at, metadata
//	  memory_embeddings     document_id PK -> memory_documents, embedding vector(N) (HNSW, cosine)
//	  knowledge_documents   id uuid PK, key unique, text, tsv (GIN), created_at, updated_at, metadata
//	  knowledge_embeddings  document_id PK -> knowledge_documents, embedding vector(N) (HNSW, cosine)
//
// N is the embedding model's dimensions (at most 2000, pgvector's HNSW
// limit); Bootstrap refuses a database whose tables have another N.
//
// # Roles
//
// Each agent's role owns its schema and its tables and has no other grant,
// so it can reach neither another agent's schema nor choir_control. choird
// connects as its admin user, which is made a member of each agent role, and
// runs an agent's own memory queries after SET LOCAL ROLE in a transaction
// (asAgent); cross-agent reads and the control plane use the admin
// connection. An agent id "control" is refused: its schema would be the
// control schema.
//
// # Server sessions that outlive choird
//
// Queries run in pgx's cache_describe mode: the extended protocol on the
// unnamed statement, with parameter and result types cached per
// connection. The store never names a prepared statement, so a server
// session that outlives a choird killed with -9 (PGlite's socket server
// keeps its one backend session from connection to connection; poolers in
// transaction mode share sessions too) holds nothing the next choird's
// queries can collide with, and a pooler may move a connection between
// transactions. A DSN naming default_query_exec_mode=cache_statement is
// refused. Nothing is reset at connect: DISCARD ALL would also reset
// search_path and the role, and DEALLOCATE ALL would drop the statements
// of other clients that share the session. A transaction the dead choird
// left open is rolled back by the server (Postgres ends the backend;
// PGlite rolls back when the connection closes); the store sets roles with
// SET LOCAL only, so none outlives a transaction.
//
// # Rules the operations keep
//
// Every operation holds at most one pooled connection at a time, so a pool
// of one works (tests run that way). Session starts lease their exclusive
// resources atomically and ending a session releases them. Replication
// (Replicate) is verified and idempotent: a resent revision with the same
// hash is skipped; new events must continue the stored chain (the next
// revision, each hash recomputed with internal/chain from the stored head);
// a gap (ErrRevGap), a different hash for a stored revision (ErrRevFork) or
// a broken chain (ErrChainBroken) refuses the whole batch with a
// *RefusedError naming the stored head, and nothing is stored; an ended
// session takes no events. A heartbeat's snapshot is stored in the same
// transaction under the revision it describes, once the log holds it. Approvals are decided once
// (ErrAlreadyResolved).
package store
