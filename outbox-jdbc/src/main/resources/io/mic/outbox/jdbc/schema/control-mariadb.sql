-- MIC Outbox: the control table for MariaDB 10.6+ and MySQL 8.0.16+ (InnoDB), where cluster-wide pauses
-- are stored. Run it as it is (for the outbox table "outbox"), or let OutboxControl.createSchema() run it
-- for another table name. Every statement is idempotent.
-- One row per pause: topic '' pauses every topic. paused_at is UTC (written with UTC_TIMESTAMP(6)).
-- utf8mb4_bin: topics compare case-sensitively, as in the outbox table.

CREATE TABLE IF NOT EXISTS outbox_control (
    topic     VARCHAR(255)  NOT NULL PRIMARY KEY,
    reason    VARCHAR(1000) NOT NULL,
    paused_at DATETIME(6)   NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
