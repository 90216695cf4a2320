-- MIC Outbox: upgrades the indexes of an outbox table created before the lean schema (PostgreSQL 12 or
-- later). The full index outbox_aggregate_idx (every row, forever) gives way to outbox_head_idx (live rows
-- only), and outbox_dispatched_idx (an entry per mark) is dropped: retention walks the primary key.
-- Idempotent; JdbcOutboxStore.createSchema() runs it when one of the old indexes exists. The new index is
-- built before the old ones go, so ordered mode is never without one. CREATE INDEX blocks writes to the
-- table while it reads it (seconds per million rows): on a large, busy table run the CONCURRENTLY variant
-- from docs/operations.md first, outside a transaction, then let createSchema() drop the old indexes.

CREATE INDEX IF NOT EXISTS outbox_head_idx
    ON outbox (aggregate_type, aggregate_id, created_at, id)
    WHERE status IN ('PENDING', 'PROCESSING');

DROP INDEX IF EXISTS outbox_aggregate_idx;

DROP INDEX IF EXISTS outbox_dispatched_idx;
