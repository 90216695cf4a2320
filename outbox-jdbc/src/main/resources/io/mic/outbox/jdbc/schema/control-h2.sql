-- MIC Outbox: the control table for H2 2.x, where cluster-wide pauses are stored.
-- One row per pause: topic '' pauses every topic. The row '#schema' is no pause (no event topic starts with
-- '#'): createSchema() records there the schema version of the outbox's tables (JdbcOutboxStore.SCHEMA_VERSION).

CREATE TABLE IF NOT EXISTS outbox_control (
    topic     VARCHAR(255)  NOT NULL PRIMARY KEY,
    reason    VARCHAR(1000) NOT NULL,
    paused_at TIMESTAMP(6) WITH TIME ZONE NOT NULL,
    tables_version INTEGER -- on the row '#schema' only: the schema version of the outbox's tables
);
