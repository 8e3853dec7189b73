-- choird's schema in Postgres (spec section 23). Bootstrap runs these
-- templates in one transaction at every start; every statement is idempotent.
-- Migrations are manual in v1: a statement here that changes is not applied
-- to an existing database.
--
-- Template values are quoted identifiers made by the store:
--   .Control  the control-plane schema, "choir_control"
--   .Schema   an agent's schema, "choir_<agent id with - as _>"
--   .Role     that agent's role, the same name
--   .RoleName the role name as a string literal, for catalog lookups
--   .Dims     the embedding dimensions (pgvector's HNSW takes at most 2000)

{{define "extension"}}
CREATE EXTENSION IF NOT EXISTS vector;
{{end}}

{{define "control"}}
CREATE SCHEMA IF NOT EXISTS {{.Control}};

-- agents: one row per agent id in config.json (Bootstrap adds missing ones).
CREATE TABLE IF NOT EXISTS {{.Control}}.agents (
    agent_id      text PRIMARY KEY,
    name          text NOT NULL DEFAULT '',
    image_version text NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL DEFAULT now(),
    config        jsonb NOT NULL DEFAULT '{}'
);

-- sessions: one row per agent run. ended_at is set exactly when the session
-- is no longer active.
CREATE TABLE IF NOT EXISTS {{.Control}}.sessions (
    session_id        text PRIMARY KEY,
    agent_id          text NOT NULL REFERENCES {{.Control}}.agents (agent_id),
    lease_id          text NOT NULL,
    status            text NOT NULL CHECK (status IN ('active', 'stopped', 'crashed')),
    started_at        timestamptz NOT NULL,
    ended_at          timestamptz,
    resource_bindings jsonb NOT NULL DEFAULT '{}', -- { workspace, llm, voice_profile, git_identity, notion, email, dm }
    last_heartbeat_at timestamptz,
    config_version    bigint NOT NULL DEFAULT 0,
    image_version     text NOT NULL DEFAULT '',
    CHECK ((status = 'active') = (ended_at IS NULL))
);
-- Design invariant 11: at most one active session per agent.
-- Databases made before sessions could be resumed (spec 13.2): why the
-- session last ended, and how many times it was resumed.
ALTER TABLE {{.Control}}.sessions ADD COLUMN IF NOT EXISTS end_reason text NOT NULL DEFAULT '';
ALTER TABLE {{.Control}}.sessions ADD COLUMN IF NOT EXISTS resumes int NOT NULL DEFAULT 0;
-- The session summary (spec 11.8) the final heartbeat of a graceful stop
-- carried, a JSON object of at most 64 KiB; NULL when there was none.
ALTER TABLE {{.Control}}.sessions ADD COLUMN IF NOT EXISTS summary jsonb;
-- Sessions of kind run (owned by the lifecycle's run sessions, issue 16):
-- a headless session performing the director's run run_id in a container
-- of its own, beside the agent's interactive session. Invariant 11 holds
-- for interactive sessions only: the index made before kinds is dropped.
ALTER TABLE {{.Control}}.sessions ADD COLUMN IF NOT EXISTS kind text NOT NULL DEFAULT 'interactive'
    CHECK (kind IN ('interactive', 'run'));
ALTER TABLE {{.Control}}.sessions ADD COLUMN IF NOT EXISTS run_id text NOT NULL DEFAULT '';
DROP INDEX IF EXISTS {{.Control}}.sessions_one_active_per_agent;
CREATE UNIQUE INDEX IF NOT EXISTS sessions_one_active_interactive_per_agent
    ON {{.Control}}.sessions (agent_id) WHERE status = 'active' AND kind = 'interactive';
CREATE INDEX IF NOT EXISTS sessions_by_agent
    ON {{.Control}}.sessions (agent_id, started_at DESC);
-- The choird instance that runs the session (its containers' choir.instance
-- label, issue 26): a replica that starts marks only its own active
-- sessions crashed, and forwards a DM's messages to the replica running
-- its agent. '' for sessions recorded before: any replica's start sweeps them.
ALTER TABLE {{.Control}}.sessions ADD COLUMN IF NOT EXISTS instance text NOT NULL DEFAULT '';

-- leases: exclusive resources (workspace, git identity, notion, exclusive
-- email, DM, ...) held by active sessions; released when the session ends.
CREATE TABLE IF NOT EXISTS {{.Control}}.leases (
    resource_kind text NOT NULL,
    resource_name text NOT NULL,
    session_id    text NOT NULL REFERENCES {{.Control}}.sessions (session_id),
    acquired_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (resource_kind, resource_name)
);
CREATE INDEX IF NOT EXISTS leases_by_session ON {{.Control}}.leases (session_id);

-- session_events: the append-only execution log, replicated by heartbeats.
-- Revisions start at 1 and have no gaps; hash is the event's chain hash
-- (internal/chain), verified from the previous row's before it is stored,
-- so the rows of a session are one chain; payload is the canonical JSON
-- the hash covers (it reads back from jsonb to the same canonical form)
-- and event_time the agent's commit time, which the hash covers too.
CREATE TABLE IF NOT EXISTS {{.Control}}.session_events (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id text NOT NULL REFERENCES {{.Control}}.sessions (session_id),
    rev        bigint NOT NULL CHECK (rev > 0),
    event_type text NOT NULL,
    lane       text CHECK (lane IN ('edge', 'core')),
    hash       text NOT NULL,
    payload    jsonb NOT NULL,
    event_time timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (session_id, rev)
);
-- Databases made before event_time existed.
ALTER TABLE {{.Control}}.session_events ADD COLUMN IF NOT EXISTS event_time timestamptz;

-- session_snapshots: the working memory (spec 13.4) at a revision the log
-- holds, to bound replay: recovery reads the newest and the events after
-- the oldest revision its lanes' windows hold.
CREATE TABLE IF NOT EXISTS {{.Control}}.session_snapshots (
    session_id text NOT NULL REFERENCES {{.Control}}.sessions (session_id),
    rev        bigint NOT NULL CHECK (rev >= 0),
    snapshot   jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, rev)
);

-- pending_approvals: requests a human decides once.
CREATE TABLE IF NOT EXISTS {{.Control}}.pending_approvals (
    id           text PRIMARY KEY DEFAULT gen_random_uuid()::text,
    session_id   text REFERENCES {{.Control}}.sessions (session_id),
    agent_id     text NOT NULL REFERENCES {{.Control}}.agents (agent_id),
    request_type text NOT NULL,
    summary      text NOT NULL DEFAULT '',
    payload      jsonb NOT NULL DEFAULT '{}',
    status       text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected')),
    created_at   timestamptz NOT NULL DEFAULT now(),
    resolved_at  timestamptz,
    resolved_by  text,
    CHECK ((status = 'pending') = (resolved_at IS NULL))
);
CREATE INDEX IF NOT EXISTS pending_approvals_open
    ON {{.Control}}.pending_approvals (created_at) WHERE status = 'pending';
-- told_at: when a choird took a decided request to hand its decision on
-- (tell the agent, edit the DM's request, apply it), once: the replica
-- that runs the request's session, or the one that decided it when no
-- other replica runs that session (issue 26; SQL in approvals.go). Rows
-- decided before the column are taken as told, once, when it is added.
DO $$
BEGIN
    ALTER TABLE {{.Control}}.pending_approvals ADD COLUMN told_at timestamptz;
    UPDATE {{.Control}}.pending_approvals SET told_at = resolved_at WHERE status <> 'pending';
EXCEPTION WHEN duplicate_column THEN NULL;
END
$$;
CREATE INDEX IF NOT EXISTS pending_approvals_untold
    ON {{.Control}}.pending_approvals (resolved_at) WHERE status <> 'pending' AND told_at IS NULL;

-- agent_images: the version.json of every agent image choird built (or
-- reused), keyed by the engine's image id and the tag; INIT_HELLO compares
-- the agent's report with the row of the tag the container started from.
CREATE TABLE IF NOT EXISTS {{.Control}}.agent_images (
    image_id    text NOT NULL,
    tag         text NOT NULL,
    agent_id    text NOT NULL,
    version     jsonb NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (image_id, tag)
);
CREATE INDEX IF NOT EXISTS agent_images_tag ON {{.Control}}.agent_images (tag, recorded_at DESC);

-- llm_usage: the usage ledger (issue 23), one row per model call attempt,
-- written from the ModelCall events of a heartbeat's batch in its
-- transaction (rev set), or from a SPEND settle when the record could not
-- be committed to the log (rev NULL). (session_id, call_id) makes a resend
-- count once. choird's own calls (embeddings) have session_id ''.
CREATE TABLE IF NOT EXISTS {{.Control}}.llm_usage (
    session_id        text NOT NULL,
    call_id           text NOT NULL,
    agent_id          text NOT NULL,
    rev               bigint,
    at                timestamptz NOT NULL,
    lane              text NOT NULL DEFAULT '',
    job               text NOT NULL DEFAULT '',
    purpose           text NOT NULL DEFAULT '',
    model             text NOT NULL DEFAULT '',
    provider_model    text NOT NULL DEFAULT '',
    attempt           int NOT NULL DEFAULT 0,
    prompt_tokens     bigint NOT NULL DEFAULT 0,
    completion_tokens bigint NOT NULL DEFAULT 0,
    cached_tokens     bigint NOT NULL DEFAULT 0,
    cost              double precision NOT NULL DEFAULT 0,
    cost_source       text NOT NULL DEFAULT 'none',
    currency          text NOT NULL DEFAULT '',
    latency_ms        bigint NOT NULL DEFAULT 0,
    outcome           text NOT NULL DEFAULT '',
    estimated         boolean NOT NULL DEFAULT false,
    PRIMARY KEY (session_id, call_id)
);
CREATE INDEX IF NOT EXISTS llm_usage_at ON {{.Control}}.llm_usage (at);
CREATE INDEX IF NOT EXISTS llm_usage_call ON {{.Control}}.llm_usage (call_id);

-- usage_allowances: one-off raises of an agent's caps (choirctl usage
-- allow), in the installation's currency or in tokens, until a time.
CREATE TABLE IF NOT EXISTS {{.Control}}.usage_allowances (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    agent_id   text NOT NULL,
    amount     double precision NOT NULL,
    unit       text NOT NULL, -- 'currency' or 'tokens'
    until      timestamptz NOT NULL,
    granted_by text NOT NULL,
    granted_at timestamptz NOT NULL DEFAULT now()
);

-- spend_notices: the warn_at notices sent (owned by choird/ledger), one
-- per cap, scope and period, so a restarted choird does not send the same
-- notice again.
CREATE TABLE IF NOT EXISTS {{.Control}}.spend_notices (
    key     text PRIMARY KEY,
    sent_at timestamptz NOT NULL DEFAULT now()
);

-- dm_outbox (owned by choird/gateway's outbox; SQL in outbox.go): what
-- agents send to Telegram DMs (choir.dm.send), queued until the DM's
-- sender has each part from Telegram. (agent_id, msg_key) makes a resend a
-- no-op; id is the order of one DM's messages. body is the gateway's plan
-- of parts. parts_done and telegram_ids record the parts Telegram accepted;
-- attempt is the part whose send started, so a restart knows the one part
-- that may have reached Telegram unrecorded. status: queued, sent, failed.
CREATE TABLE IF NOT EXISTS {{.Control}}.dm_outbox (
    id           bigserial PRIMARY KEY,
    agent_id     text NOT NULL,
    dm           text NOT NULL,
    msg_key      text NOT NULL,
    body         json NOT NULL, -- json, not jsonb: text with NUL (\u0000) is kept
    status       text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'sent', 'failed')),
    parts_done   integer NOT NULL DEFAULT 0,
    attempt      integer NOT NULL DEFAULT -1,
    telegram_ids bigint[] NOT NULL DEFAULT '{}',
    notes        text[] NOT NULL DEFAULT '{}',
    error        text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    done_at      timestamptz,
    UNIQUE (agent_id, msg_key)
);
CREATE INDEX IF NOT EXISTS dm_outbox_queued ON {{.Control}}.dm_outbox (dm, id) WHERE status = 'queued';
CREATE INDEX IF NOT EXISTS dm_outbox_agent_queued ON {{.Control}}.dm_outbox (agent_id) WHERE status = 'queued';

-- dm_inbox (owned by choird/gateway's inbox; SQL in inbox.go): Telegram
-- updates the leading replica polled for a DM whose agent another replica
-- runs (issue 26), waiting for the replica that runs the DM's agent to
-- handle them as if it had polled them. (bot, update_id) makes an update
-- Telegram hands on again a no-op; id is the order of one DM's updates.
-- body is the update as Telegram sent it; instance the replica that ran
-- the agent when it was queued. status: queued, delivered.
CREATE TABLE IF NOT EXISTS {{.Control}}.dm_inbox (
    id         bigserial PRIMARY KEY,
    bot        text NOT NULL,
    update_id  bigint NOT NULL,
    dm         text NOT NULL,
    instance   text NOT NULL,
    body       json NOT NULL,
    status     text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'delivered')),
    created_at timestamptz NOT NULL DEFAULT now(),
    done_at    timestamptz,
    UNIQUE (bot, update_id)
);
CREATE INDEX IF NOT EXISTS dm_inbox_queued ON {{.Control}}.dm_inbox (dm, id) WHERE status = 'queued';

-- Headless runs (issue 16, seed 002), owned by choird/headless through
-- choird/store/headless.go. work_items: the director's work queue; status
-- is open, running, done, split, cancelled or blocked (ready is derived
-- when read); a split item's children name it as parent.
CREATE TABLE IF NOT EXISTS {{.Control}}.work_items (
    id          text PRIMARY KEY, -- w-<12 hex>
    agent_id    text NOT NULL REFERENCES {{.Control}}.agents (agent_id),
    description text NOT NULL,
    acceptance  jsonb NOT NULL,   -- array of strings
    verifiers   jsonb NOT NULL,   -- array of verifier names
    risk        text NOT NULL,    -- low, medium, high
    depends_on  jsonb NOT NULL,   -- array of work item ids
    parent      text REFERENCES {{.Control}}.work_items (id),
    status      text NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS work_items_created ON {{.Control}}.work_items (created_at, id);

-- runs: one bounded episode bound to exactly one work item; at most one
-- run of a work item has not ended (ended_at NULL).
CREATE TABLE IF NOT EXISTS {{.Control}}.runs (
    id         text PRIMARY KEY, -- r-<12 hex>
    work_item  text NOT NULL REFERENCES {{.Control}}.work_items (id),
    agent_id   text NOT NULL REFERENCES {{.Control}}.agents (agent_id),
    mood       text NOT NULL,
    trigger    text NOT NULL,
    budgets    jsonb NOT NULL,
    status     text NOT NULL,
    base       text NOT NULL DEFAULT '',
    worktree   text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL,
    ended_at   timestamptz
);
CREATE UNIQUE INDEX IF NOT EXISTS runs_one_active ON {{.Control}}.runs (work_item) WHERE ended_at IS NULL;
CREATE INDEX IF NOT EXISTS runs_by_agent ON {{.Control}}.runs (agent_id, created_at DESC);
-- the director loop's queue (RunsIn): the runs in a status, oldest first
CREATE INDEX IF NOT EXISTS runs_by_status ON {{.Control}}.runs (status, created_at, id);

-- run_receipts: each run's append-only log, seq from 1 without gaps; id
-- is the order of appends across runs (the AHDB projection reads in it).
-- body is json (not jsonb) so it reads back byte for byte as written.
-- (run_id, idem_key) makes a resend after a crash append nothing.
CREATE TABLE IF NOT EXISTS {{.Control}}.run_receipts (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id   text NOT NULL REFERENCES {{.Control}}.runs (id),
    seq      bigint NOT NULL,
    kind     text NOT NULL,
    body     json NOT NULL,
    objects  jsonb NOT NULL,      -- array of SHA-256 hex of objects in the object store
    idem_key text,
    key_hash text NOT NULL,       -- hash of kind and body: tells a resend from a reuse
    at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (run_id, seq)
);
CREATE UNIQUE INDEX IF NOT EXISTS run_receipts_key ON {{.Control}}.run_receipts (run_id, idem_key) WHERE idem_key IS NOT NULL;
-- Append-only, enforced by the database too.
CREATE OR REPLACE FUNCTION {{.Control}}.run_receipts_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'run_receipts is append-only: receipts are never changed or deleted';
END
$$;
CREATE OR REPLACE TRIGGER run_receipts_append_only BEFORE UPDATE OR DELETE ON {{.Control}}.run_receipts
    FOR EACH ROW EXECUTE FUNCTION {{.Control}}.run_receipts_append_only();

-- sched_fires: the headless scheduler's claimed fires (owned by
-- choird/headless/sched through store/sched.go): one row per (agent,
-- schedule, fire key), a cron slot "cron@<RFC 3339 UTC>" or an event
-- "event:<id>", inserted before the run is enqueued, so a trigger starts
-- at most one run, also across a restart. at is the slot (the newest cron
-- row is where a restarted scheduler resumes) or the event's time.
CREATE TABLE IF NOT EXISTS {{.Control}}.sched_fires (
    agent_id    text NOT NULL,
    schedule_id text NOT NULL,
    fire_key    text NOT NULL,
    cron        boolean NOT NULL,
    at          timestamptz NOT NULL,
    claimed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent_id, schedule_id, fire_key)
);
CREATE INDEX IF NOT EXISTS sched_fires_last ON {{.Control}}.sched_fires (agent_id, schedule_id, at DESC) WHERE cron;

-- The local knowledge base (issue 25, seed 002 §2.4; owned by
-- choird/headless/kb through store/kb.go). kb_objects: one row per object
-- of the object store that a run's receipts name with typed content (a
-- note, a verifier's report, a patch, a fetched source); text is the short
-- structured text that is embedded and shown as the snippet, never the
-- object's content. receipt_id is the receipt that named it first.
CREATE TABLE IF NOT EXISTS {{.Control}}.kb_objects (
    object     text PRIMARY KEY, -- SHA-256 hex of the object
    agent_id   text NOT NULL,
    run_id     text NOT NULL,
    receipt_id bigint NOT NULL,
    kind       text NOT NULL,
    text       text NOT NULL,
    tsv        tsvector GENERATED ALWAYS AS (to_tsvector('simple', kind || ' ' || text)) STORED,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS kb_objects_tsv ON {{.Control}}.kb_objects USING gin (tsv);
CREATE INDEX IF NOT EXISTS kb_objects_by_agent ON {{.Control}}.kb_objects (agent_id, kind);
-- kb_embeddings: an object's vector and the model that made it (vectors of
-- another model are dropped at start and made again).
CREATE TABLE IF NOT EXISTS {{.Control}}.kb_embeddings (
    object    text PRIMARY KEY REFERENCES {{.Control}}.kb_objects (object) ON DELETE CASCADE,
    model     text NOT NULL,
    embedding vector({{.Dims}}) NOT NULL
);
CREATE INDEX IF NOT EXISTS kb_embeddings_hnsw ON {{.Control}}.kb_embeddings USING hnsw (embedding vector_cosine_ops);
-- kb_cursor: the last run_receipts.id the indexer has read, moved in the
-- transaction that stores what it found, so a receipt is indexed once.
CREATE TABLE IF NOT EXISTS {{.Control}}.kb_cursor (
    name       text PRIMARY KEY,
    receipt_id bigint NOT NULL
);
{{end}}

{{define "agent"}}
-- The agent's role: no login; choird's user must be able to SET ROLE to it
-- (a superuser always can; Postgres 16 split SET from membership).
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = {{.RoleName}}) THEN
        CREATE ROLE {{.Role}} NOLOGIN;
    END IF;
    IF current_setting('server_version_num')::int >= 160000 THEN
        IF NOT pg_catalog.pg_has_role(current_user, {{.RoleName}}, 'SET') THEN
            EXECUTE 'GRANT {{.Role}} TO CURRENT_USER WITH SET TRUE';
        END IF;
    ELSIF NOT pg_catalog.pg_has_role(current_user, {{.RoleName}}, 'MEMBER') THEN
        GRANT {{.Role}} TO CURRENT_USER;
    END IF;
END
$$;

-- The role owns its schema and everything in it, and holds no other grant:
-- other agents' schemas and choir_control are closed to it.
CREATE SCHEMA IF NOT EXISTS {{.Schema}} AUTHORIZATION {{.Role}};
SET LOCAL ROLE {{.Role}};

-- Tiers 2-3: session-derived memory.
CREATE TABLE IF NOT EXISTS {{.Schema}}.memory_documents (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    session_id  text NOT NULL,
    tier        text NOT NULL CHECK (tier IN ('mid_term', 'long_term_summary', 'long_term_detail')),
    chunk_index int NOT NULL,
    text        text NOT NULL,
    tsv         tsvector GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED,
    created_at  timestamptz NOT NULL DEFAULT now(),
    metadata    jsonb NOT NULL DEFAULT '{}' -- skill, phase, topic tags
);
CREATE INDEX IF NOT EXISTS memory_documents_tsv
    ON {{.Schema}}.memory_documents USING gin (tsv);
CREATE INDEX IF NOT EXISTS memory_documents_by_session
    ON {{.Schema}}.memory_documents (session_id, tier, chunk_index);

-- Only mid_term and long_term_summary documents get embeddings.
CREATE TABLE IF NOT EXISTS {{.Schema}}.memory_embeddings (
    document_id uuid PRIMARY KEY REFERENCES {{.Schema}}.memory_documents (id) ON DELETE CASCADE,
    embedding   vector({{.Dims}}) NOT NULL
);
CREATE INDEX IF NOT EXISTS memory_embeddings_hnsw
    ON {{.Schema}}.memory_embeddings USING hnsw (embedding vector_cosine_ops);

-- Tier 4: agent-managed knowledge.
CREATE TABLE IF NOT EXISTS {{.Schema}}.knowledge_documents (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    key        text UNIQUE, -- optional dedup key, e.g. 'user.preference.theme'
    text       text NOT NULL,
    tsv        tsvector GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    metadata   jsonb NOT NULL DEFAULT '{}' -- tags, source, category
);
CREATE INDEX IF NOT EXISTS knowledge_documents_tsv
    ON {{.Schema}}.knowledge_documents USING gin (tsv);

CREATE TABLE IF NOT EXISTS {{.Schema}}.knowledge_embeddings (
    document_id uuid PRIMARY KEY REFERENCES {{.Schema}}.knowledge_documents (id) ON DELETE CASCADE,
    embedding   vector({{.Dims}}) NOT NULL
);
CREATE INDEX IF NOT EXISTS knowledge_embeddings_hnsw
    ON {{.Schema}}.knowledge_embeddings USING hnsw (embedding vector_cosine_ops);

RESET ROLE;
{{end}}
