-- MIC Outbox: the control table for MariaDB 10.6+ and MySQL 8.0.16+ (InnoDB), where cluster-wide pauses
-- are stored. Run it as it is (for the outbox table "outbox"), or let OutboxControl.createSchema() run it
-- for another table name. Every statement is idempotent.
-- One row per pause: topic '' pauses every topic. The row '#schema' is no pause (no event topic starts with
-- '#'): createSchema() records there the schema version of the outbox's tables (JdbcOutboxStore.SCHEMA_VERSION). paused_at is UTC (written with UTC_TIMESTAMP(6)).
-- utf8mb4_bin: topics compare case-sensitively, as in the outbox table.

CREATE TABLE IF NOT EXISTS outbox_control (
    topic     VARCHAR(255)  NOT NULL PRIMARY KEY,
    reason    VARCHAR(1000) NOT NULL,
    paused_at DATETIME(6)   NOT NULL,
    tables_version INT      NULL -- on the row '#schema' only: the schema version of the outbox's tables
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
