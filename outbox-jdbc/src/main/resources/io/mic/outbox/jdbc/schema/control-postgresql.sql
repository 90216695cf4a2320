-- MIC Outbox: the control table for PostgreSQL 12 or later, where cluster-wide pauses are stored.
-- Run it as it is (for the outbox table "outbox"), or let OutboxControl.createSchema() run it for another
-- table name. Every statement is idempotent, so it can go into a Flyway or Liquibase migration unchanged.
-- One row per pause: topic '' pauses every topic. The row '#schema' is no pause (no event topic starts with
-- '#'): createSchema() records there the schema version of the outbox's tables (JdbcOutboxStore.SCHEMA_VERSION).
-- Dispatchers read the table at every poll.

CREATE TABLE IF NOT EXISTS outbox_control (
    topic     varchar(255)  NOT NULL PRIMARY KEY,
    reason    varchar(1000) NOT NULL,
    paused_at timestamptz   NOT NULL DEFAULT now(),
    tables_version integer  -- on the row '#schema' only: the schema version of the outbox's tables
);
