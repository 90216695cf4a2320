-- MIC Outbox: the consumer inbox for H2 2.x, the embedded database for tests and demos.
-- Run it as it is (table "outbox_inbox"), or let JdbcInbox.createSchema() run it for another table name.

CREATE TABLE IF NOT EXISTS outbox_inbox (
    consumer     VARCHAR(255) NOT NULL,
    event_id     VARCHAR(255) NOT NULL,
    processed_at TIMESTAMP(6) WITH TIME ZONE NOT NULL,
    PRIMARY KEY (consumer, event_id)
);

CREATE INDEX IF NOT EXISTS outbox_inbox_processed_idx ON outbox_inbox (processed_at);

-- The ordering guard (JdbcInbox.checkSequence): the last sequence each consumer processed per aggregate.
CREATE TABLE IF NOT EXISTS outbox_inbox_sequences (
    consumer        VARCHAR(255) NOT NULL,
    aggregate_type  VARCHAR(255) NOT NULL,
    aggregate_id    VARCHAR(255) NOT NULL,
    last_sequence   BIGINT       NOT NULL DEFAULT 0,
    updated_at      TIMESTAMP(6) WITH TIME ZONE NOT NULL DEFAULT CURRENT_TIMESTAMP,
    PRIMARY KEY (consumer, aggregate_type, aggregate_id)
);
