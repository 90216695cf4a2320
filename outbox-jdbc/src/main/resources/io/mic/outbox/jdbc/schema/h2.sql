-- MIC Outbox: the outbox table for H2 2.x, the embedded database for tests and demos.
-- Run it as it is (table "outbox"), or let JdbcOutboxStore.createSchema() run it for another table name.

CREATE TABLE IF NOT EXISTS outbox (
    id              UUID         PRIMARY KEY,
    aggregate_type  VARCHAR(255) NOT NULL,
    aggregate_id    VARCHAR(255) NOT NULL,
    topic           VARCHAR(255) NOT NULL,
    payload         CHARACTER LARGE OBJECT NOT NULL,
    headers         CHARACTER LARGE OBJECT NOT NULL,
    priority        INTEGER      NOT NULL DEFAULT 0,
    -- PENDING, PROCESSING, DISPATCHED or DLQ. No CHECK constraint: H2 2.4 evaluates a CHECK in the
    -- session that created it, and fails every insert once that connection has closed.
    status          VARCHAR(16)  NOT NULL DEFAULT 'PENDING',
    attempts        INTEGER      NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMP(6) WITH TIME ZONE NOT NULL,
    lease_owner     VARCHAR(128),
    lease_until     TIMESTAMP(6) WITH TIME ZONE,
    created_at      TIMESTAMP(6) WITH TIME ZONE NOT NULL,
    dispatched_at   TIMESTAMP(6) WITH TIME ZONE,
    last_error      CHARACTER LARGE OBJECT,
    -- the envelope (see docs/jdbc.md): assigned or given at append; 0 / NULL on rows appended before it
    sequence        BIGINT       NOT NULL DEFAULT 0,
    schema_version  INTEGER      NOT NULL DEFAULT 1,
    occurred_at     TIMESTAMP(6) WITH TIME ZONE,
    trace_parent    VARCHAR(128)
);

-- The envelope's sequence counter: one row per aggregate, upserted by each append in its transaction.
CREATE TABLE IF NOT EXISTS outbox_sequences (
    aggregate_type  VARCHAR(255) NOT NULL,
    aggregate_id    VARCHAR(255) NOT NULL,
    last_sequence   BIGINT       NOT NULL DEFAULT 0,
    PRIMARY KEY (aggregate_type, aggregate_id)
);

CREATE INDEX IF NOT EXISTS outbox_claim_idx ON outbox (status, priority DESC, created_at, id);

CREATE INDEX IF NOT EXISTS outbox_aggregate_idx ON outbox (aggregate_type, aggregate_id, status, created_at, id);

CREATE INDEX IF NOT EXISTS outbox_dispatched_idx ON outbox (status, dispatched_at);

-- Appends lock their aggregate's row until their transaction ends (see docs/ordering.md).
CREATE TABLE IF NOT EXISTS outbox_locks (
    lock_key VARCHAR(520) PRIMARY KEY
);
