-- MIC Outbox: upgrades an outbox table created before the event envelope (H2 2.x).
-- Idempotent; JdbcOutboxStore.createSchema() runs it when a column is missing.

ALTER TABLE outbox ADD COLUMN IF NOT EXISTS sequence BIGINT NOT NULL DEFAULT 0;

ALTER TABLE outbox ADD COLUMN IF NOT EXISTS schema_version INTEGER NOT NULL DEFAULT 1;

ALTER TABLE outbox ADD COLUMN IF NOT EXISTS occurred_at TIMESTAMP(6) WITH TIME ZONE;

ALTER TABLE outbox ADD COLUMN IF NOT EXISTS trace_parent VARCHAR(128);

CREATE TABLE IF NOT EXISTS outbox_sequences (
    aggregate_type  VARCHAR(255) NOT NULL,
    aggregate_id    VARCHAR(255) NOT NULL,
    last_sequence   BIGINT       NOT NULL DEFAULT 0,
    PRIMARY KEY (aggregate_type, aggregate_id)
);
