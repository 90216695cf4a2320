-- The PostgreSQL outbox table as createSchema() made it before parked events (schema version 1): its
-- claim index holds the waiting events of held aggregates too. The upgrade tests create it, fill it and let
-- createSchema() upgrade it.

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

-- The indexes hold live rows only wherever they can: a mark to DISPATCHED adds an entry to the primary key
-- alone, and the indexes stay as small as the queue, however many dispatched rows are retained. Because
-- their predicates name status, no status change is a HOT update: every full index would gain an entry on
-- every claim and every mark, which is why there is no full secondary index. docs/operations.md.

-- Serves the claim and fetch queries: only live rows, in dispatch order.
CREATE INDEX IF NOT EXISTS outbox_claim_idx
    ON outbox (priority DESC, created_at, id)
    WHERE status IN ('PENDING', 'PROCESSING');

-- Serves ordered mode: "is there an older live event of this aggregate?" and the run behind a head.
-- Terminal rows never block a head, so only live rows are indexed.
CREATE INDEX IF NOT EXISTS outbox_head_idx
    ON outbox (aggregate_type, aggregate_id, created_at, id)
    WHERE status IN ('PENDING', 'PROCESSING');

-- Serves dead-letter listing, redrive and purge: only DLQ rows, oldest first (small: DLQ rows are few).
CREATE INDEX IF NOT EXISTS outbox_dlq_idx
    ON outbox (created_at, id)
    WHERE status = 'DLQ';

-- Serves held aggregates (holdAggregateOnDeadLetter): "is there an earlier dead event of this aggregate?",
-- asked of each head a claim considers, and the listing of held aggregates. Dead rows only.
CREATE INDEX IF NOT EXISTS outbox_held_idx
    ON outbox (aggregate_type, aggregate_id, created_at, id)
    WHERE status = 'DLQ';

-- Retention (purge and archive of old DISPATCHED rows) has no index of its own: it walks the primary key,
-- whose time-ordered ids (UUIDv7) put the oldest rows first, and stops after each batch.
