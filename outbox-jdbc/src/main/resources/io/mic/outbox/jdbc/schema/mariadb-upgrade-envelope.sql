-- MIC Outbox: upgrades an outbox table created before the event envelope (MariaDB 10.6+).
-- Adds the columns sequence, schema_version, occurred_at and trace_parent, and the sequence counter.
-- Idempotent; JdbcOutboxStore.createSchema() runs it when a column is missing. MySQL has no
-- ADD COLUMN IF NOT EXISTS: there, drop "IF NOT EXISTS" and run it once. Rows appended before keep
-- sequence 0 (no x-sequence header).

ALTER TABLE outbox
    ADD COLUMN IF NOT EXISTS sequence       BIGINT       NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS schema_version INT          NOT NULL DEFAULT 1,
    ADD COLUMN IF NOT EXISTS occurred_at    DATETIME(6)  NULL,
    ADD COLUMN IF NOT EXISTS trace_parent   VARCHAR(128) NULL;

CREATE TABLE IF NOT EXISTS outbox_sequences (
    aggregate_type  VARCHAR(255) NOT NULL,
    aggregate_id    VARCHAR(255) NOT NULL,
    last_sequence   BIGINT       NOT NULL,
    PRIMARY KEY (aggregate_type, aggregate_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
