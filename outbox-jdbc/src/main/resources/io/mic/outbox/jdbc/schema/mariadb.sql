-- MIC Outbox: the outbox table for MariaDB 10.6+ and MySQL 8.0.16+ (InnoDB).
-- Run it as it is (table "outbox"), or let JdbcOutboxStore.createSchema() run it for another table name.
-- Every statement is idempotent, so Flyway or Liquibase users can copy it into a migration unchanged.
-- Times are UTC (DATETIME(6) written with UTC_TIMESTAMP(6)), whatever the session time zone.

CREATE TABLE IF NOT EXISTS outbox (
    id              CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
    aggregate_type  VARCHAR(255) NOT NULL,
    aggregate_id    VARCHAR(255) NOT NULL,
    topic           VARCHAR(255) NOT NULL,
    payload         LONGTEXT     NOT NULL CHECK (JSON_VALID(payload)),  -- the text exactly as appended
    headers         LONGTEXT     NOT NULL CHECK (JSON_VALID(headers)),
    priority        INT          NOT NULL DEFAULT 0,
    status          VARCHAR(16)  NOT NULL DEFAULT 'PENDING'
                    CHECK (status IN ('PENDING', 'PROCESSING', 'DISPATCHED', 'DLQ')),
    attempts        INT          NOT NULL DEFAULT 0,
    next_attempt_at DATETIME(6)  NOT NULL,
    lease_owner     VARCHAR(128) NULL,
    lease_until     DATETIME(6)  NULL,
    created_at      DATETIME(6)  NOT NULL,
    dispatched_at   DATETIME(6)  NULL,
    last_error      TEXT         NULL,
    -- the envelope (see docs/jdbc.md): assigned or given at append; 0 / NULL on rows appended before it
    sequence        BIGINT       NOT NULL DEFAULT 0,   -- 1, 2, 3 … per aggregate, in commit order
    schema_version  INT          NOT NULL DEFAULT 1,
    occurred_at     DATETIME(6)  NULL,                 -- business time (UTC); the append time unless given
    trace_parent    VARCHAR(128) NULL,                 -- W3C traceparent of the appending code
    -- the priority of live rows only: without partial indexes, this keeps terminal rows out of the claim
    -- index, so a claim scans live rows in dispatch order and stops at its LIMIT, locking only those
    live_priority   INT AS (CASE WHEN status IN ('PENDING', 'PROCESSING') THEN priority END) STORED,
    INDEX outbox_claim_idx (live_priority DESC, created_at, id),
    INDEX outbox_aggregate_idx (aggregate_type, aggregate_id, status, created_at, id),
    INDEX outbox_dispatched_idx (status, dispatched_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The envelope's sequence counter: one small row per aggregate that ever had an event, upserted by each
-- append in the appending transaction (its row lock serialises the numbering; a rollback takes the
-- numbers back). It replaces an index over every retained row.
CREATE TABLE IF NOT EXISTS outbox_sequences (
    aggregate_type  VARCHAR(255) NOT NULL,
    aggregate_id    VARCHAR(255) NOT NULL,
    last_sequence   BIGINT       NOT NULL,
    PRIMARY KEY (aggregate_type, aggregate_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- One row per aggregate that ever had an event: appends lock it until their transaction ends, so that
-- created_at follows commit order within an aggregate (see docs/ordering.md).
CREATE TABLE IF NOT EXISTS outbox_locks (
    lock_key VARCHAR(520) NOT NULL PRIMARY KEY
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
