-- The PostgreSQL outbox table as createSchema() made it before the lean schema (release 0.1 with the
-- envelope): the upgrade test creates it, fills it and lets createSchema() upgrade it.

CREATE TABLE IF NOT EXISTS outbox (
    id              uuid         PRIMARY KEY,
    aggregate_type  varchar(255) NOT NULL,
    aggregate_id    varchar(255) NOT NULL,
    topic           varchar(255) NOT NULL,
    payload         json         NOT NULL,   -- json keeps the text exactly as appended
    headers         json         NOT NULL DEFAULT '{}',
    priority        integer      NOT NULL DEFAULT 0,
    status          varchar(16)  NOT NULL DEFAULT 'PENDING'
                    CHECK (status IN ('PENDING', 'PROCESSING', 'DISPATCHED', 'DLQ')),
    attempts        integer      NOT NULL DEFAULT 0,
    next_attempt_at timestamptz  NOT NULL DEFAULT clock_timestamp(),
    lease_owner     varchar(128),
    lease_until     timestamptz,
    created_at      timestamptz  NOT NULL DEFAULT clock_timestamp(),
    dispatched_at   timestamptz,
    last_error      text,
    -- the envelope (see docs/jdbc.md): assigned or given at append; 0 / NULL on rows appended before it
    sequence        bigint       NOT NULL DEFAULT 0,   -- 1, 2, 3 … per aggregate, in commit order
    schema_version  integer      NOT NULL DEFAULT 1,
    occurred_at     timestamptz,                       -- business time; the append time unless given
    trace_parent    varchar(128)                       -- W3C traceparent of the appending code
);

-- The envelope's sequence counter: one small row per aggregate that ever had an event, upserted by each
-- append in the appending transaction (its row lock serialises the numbering; a rollback takes the
-- numbers back). It replaces an index over every retained row.
CREATE TABLE IF NOT EXISTS outbox_sequences (
    aggregate_type  varchar(255) NOT NULL,
    aggregate_id    varchar(255) NOT NULL,
    last_sequence   bigint       NOT NULL,
    PRIMARY KEY (aggregate_type, aggregate_id)
);

-- Serves the claim and fetch queries: only live rows, in dispatch order.
CREATE INDEX IF NOT EXISTS outbox_claim_idx
    ON outbox (priority DESC, created_at, id)
    WHERE status IN ('PENDING', 'PROCESSING');

-- Serves ordered mode: "is there an older non-terminal event of this aggregate?"
CREATE INDEX IF NOT EXISTS outbox_aggregate_idx
    ON outbox (aggregate_type, aggregate_id, status, created_at, id);

-- Serves retention: purge of dispatched rows by age.
CREATE INDEX IF NOT EXISTS outbox_dispatched_idx
    ON outbox (dispatched_at)
    WHERE status = 'DISPATCHED';

-- Serves dead-letter listing, redrive and purge: only DLQ rows, oldest first (small: DLQ rows are few).
CREATE INDEX IF NOT EXISTS outbox_dlq_idx
    ON outbox (created_at, id)
    WHERE status = 'DLQ';
