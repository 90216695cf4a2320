-- MIC Outbox: the control table for H2 2.x, where cluster-wide pauses are stored.
-- One row per pause: topic '' pauses every topic.

CREATE TABLE IF NOT EXISTS outbox_control (
    topic     VARCHAR(255)  NOT NULL PRIMARY KEY,
    reason    VARCHAR(1000) NOT NULL,
    paused_at TIMESTAMP(6) WITH TIME ZONE NOT NULL
);
