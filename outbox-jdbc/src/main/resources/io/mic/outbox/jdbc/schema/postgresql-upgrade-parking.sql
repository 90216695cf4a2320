-- MIC Outbox: upgrades the claim index of an outbox table created before parked events (PostgreSQL 12 or
-- later, schema version 2). outbox_claim_idx leaves out the parked events (PENDING with next_attempt_at
-- 'infinity': the waiting events of held aggregates), which outbox_parked_idx holds instead. Safe to run
-- again; JdbcOutboxStore.createSchema() runs it when outbox_claim_idx lacks the condition on
-- next_attempt_at. The old index serves the claims, under another name, until the new one is built.
-- CREATE INDEX blocks writes to the table while it reads it (seconds per million rows): on a large, busy
-- table run the CONCURRENTLY variant from docs/operations.md instead, outside a transaction.

CREATE INDEX IF NOT EXISTS outbox_parked_idx
    ON outbox (aggregate_type, aggregate_id)
    WHERE status = 'PENDING' AND next_attempt_at = 'infinity';

DROP INDEX IF EXISTS outbox_claim_old_idx;

ALTER INDEX IF EXISTS outbox_claim_idx RENAME TO outbox_claim_old_idx;

CREATE INDEX IF NOT EXISTS outbox_claim_idx
    ON outbox (priority DESC, created_at, id)
    WHERE status IN ('PENDING', 'PROCESSING') AND next_attempt_at < 'infinity';

DROP INDEX IF EXISTS outbox_claim_old_idx;
