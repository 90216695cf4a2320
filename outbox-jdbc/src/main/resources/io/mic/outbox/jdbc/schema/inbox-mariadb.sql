-- MIC Outbox: the consumer inbox for MariaDB 10.6+ and MySQL 8.0.16+ (InnoDB).
-- Run it as it is (table "outbox_inbox"), or let JdbcInbox.createSchema() run it for another table name.
-- Every statement is idempotent, so Flyway or Liquibase users can copy it into a migration unchanged.
-- processed_at is UTC (DATETIME(6) written with UTC_TIMESTAMP(6)), whatever the session time zone.
-- utf8mb4_bin: ids compare case-sensitively, as on PostgreSQL and H2.

CREATE TABLE IF NOT EXISTS outbox_inbox (
    consumer     VARCHAR(255) NOT NULL,
    event_id     VARCHAR(255) NOT NULL,
    processed_at DATETIME(6)  NOT NULL,
    PRIMARY KEY (consumer, event_id),  -- the idempotency guarantee: one row per consumer and event
    INDEX outbox_inbox_processed_idx (processed_at)  -- serves purgeOlderThan
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The ordering guard (JdbcInbox.checkSequence): the last sequence each consumer processed per aggregate,
-- written in the consumer's transaction. One small row per (consumer, aggregate); never purged, since
-- forgetting it would turn the next message into a gap. updated_at is UTC.
CREATE TABLE IF NOT EXISTS outbox_inbox_sequences (
    consumer        VARCHAR(255) NOT NULL,
    aggregate_type  VARCHAR(255) NOT NULL,
    aggregate_id    VARCHAR(255) NOT NULL,
    last_sequence   BIGINT       NOT NULL DEFAULT 0,
    updated_at      DATETIME(6)  NOT NULL,
    PRIMARY KEY (consumer, aggregate_type, aggregate_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
