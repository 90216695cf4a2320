-- MIC Outbox: the consumer inbox for PostgreSQL 12 or later.
-- Run it as it is (table "outbox_inbox"), or let JdbcInbox.createSchema() run it for another table name.
-- Every statement is idempotent, so Flyway or Liquibase users can copy it into a migration unchanged.

CREATE TABLE IF NOT EXISTS outbox_inbox (
    consumer     varchar(255) NOT NULL,
    event_id     varchar(255) NOT NULL,
    processed_at timestamptz  NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, event_id)   -- the idempotency guarantee: one row per consumer and event
);

-- Serves purgeOlderThan: the oldest records first.
CREATE INDEX IF NOT EXISTS outbox_inbox_processed_idx
    ON outbox_inbox (processed_at);

-- The ordering guard (JdbcInbox.checkSequence): the last sequence each consumer processed per aggregate,
-- written in the consumer's transaction. One small row per (consumer, aggregate); never purged, since
-- forgetting it would turn the next message into a gap.
CREATE TABLE IF NOT EXISTS outbox_inbox_sequences (
    consumer        varchar(255) NOT NULL,
    aggregate_type  varchar(255) NOT NULL,
    aggregate_id    varchar(255) NOT NULL,
    last_sequence   bigint       NOT NULL DEFAULT 0,
    updated_at      timestamptz  NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, aggregate_type, aggregate_id)
);
