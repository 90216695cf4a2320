-- MIC Outbox: upgrades an outbox table created before the event envelope (PostgreSQL 12 or later).
-- Adds the columns sequence, schema_version, occurred_at and trace_parent, and the sequence counter.
-- Idempotent; JdbcOutboxStore.createSchema() runs it when a column is missing. Adding columns with a
-- constant default changes only the catalog, but ALTER TABLE waits for the table's lock: run it with a
-- lock_timeout (see docs/operations.md). Rows appended before keep sequence 0 (no x-sequence header).

ALTER TABLE outbox
    ADD COLUMN IF NOT EXISTS sequence       bigint       NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS schema_version integer      NOT NULL DEFAULT 1,
    ADD COLUMN IF NOT EXISTS occurred_at    timestamptz,
    ADD COLUMN IF NOT EXISTS trace_parent   varchar(128);

CREATE TABLE IF NOT EXISTS outbox_sequences (
    aggregate_type  varchar(255) NOT NULL,
    aggregate_id    varchar(255) NOT NULL,
    last_sequence   bigint       NOT NULL,
    PRIMARY KEY (aggregate_type, aggregate_id)
);
