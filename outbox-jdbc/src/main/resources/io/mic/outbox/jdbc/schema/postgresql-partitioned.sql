-- MIC Outbox: the outbox table for PostgreSQL 13 or later, partitioned by range of created_at
-- (JdbcOutboxStore.builder().partitionInterval(...)). The partitions themselves are created by
-- createSchema() and OutboxMaintenance.ensurePartitions(), which name and bound them (docs/jdbc.md).
-- Every statement is idempotent.

CREATE TABLE IF NOT EXISTS outbox (
    id              uuid         NOT NULL,
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
    trace_parent    varchar(128),                      -- W3C traceparent of the appending code
    -- a partitioned table's keys must hold its partition key: outbox_id_fn keeps id unique across partitions
    PRIMARY KEY (id, created_at)
) PARTITION BY RANGE (created_at);

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

-- Serves the claim and fetch queries: only live rows, in dispatch order, less the parked ones.
CREATE INDEX IF NOT EXISTS outbox_claim_idx
    ON outbox (priority DESC, created_at, id)
    WHERE status IN ('PENDING', 'PROCESSING') AND next_attempt_at < 'infinity';

-- Parked events: the waiting events of held aggregates (holdAggregateOnDeadLetter), PENDING with
-- next_attempt_at 'infinity' until their aggregate has no dead event left, out of the claim index so that
-- claims do not step over them. Found by aggregate when a redrive or purge lets them go on.
CREATE INDEX IF NOT EXISTS outbox_parked_idx
    ON outbox (aggregate_type, aggregate_id)
    WHERE status = 'PENDING' AND next_attempt_at = 'infinity';

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

-- An id is unique across partitions: the primary key holds created_at, so each insert looks for its id in
-- the other partitions (one probe of each partition's primary key). Two appends of one id to one aggregate
-- are serialised by the sequence counter's row lock, so the later one sees the earlier and is refused.
CREATE OR REPLACE FUNCTION outbox_id_fn() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN IF EXISTS (SELECT 1 FROM outbox WHERE id = NEW.id) THEN RAISE unique_violation USING MESSAGE = 'duplicate key value: id ' || NEW.id || ' exists'; END IF; RETURN NEW; END $$;

DROP TRIGGER IF EXISTS outbox_id_trg ON outbox;

CREATE TRIGGER outbox_id_trg BEFORE INSERT ON outbox FOR EACH ROW EXECUTE FUNCTION outbox_id_fn();

-- Retention drops whole partitions (OutboxMaintenance.dropPartitionsOlderThan); purgeDispatchedOlderThan
-- still deletes row by row where a partition must stay.
