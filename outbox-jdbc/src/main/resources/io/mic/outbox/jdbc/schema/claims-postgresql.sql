-- MIC Outbox: the claim journal of transactionalClaims(true), for PostgreSQL 12 or later. Run it as it is (for
-- the outbox table "outbox"), or let JdbcOutboxStore.createSchema() run it for another table name, which it
-- does for a store built with transactionalClaims(true). Every statement is idempotent, so it can go into a
-- Flyway or Liquibase migration unchanged.
--
-- One row per batch in flight, written when the batch is claimed and committed apart from the batch's own
-- transaction, which deletes it with the batch's outcomes. The batch's transaction holds an advisory lock on
-- the row's key. A row whose key is free has outlived its batch (its process stopped, its session ended, or
-- it idled past the lease): the next claims count an attempt for its events, as a lease's claim would have,
-- and delete it. Empty while nothing is in flight.

CREATE TABLE IF NOT EXISTS outbox_claims (
    claim_key   integer      NOT NULL PRIMARY KEY,   -- the advisory lock's second key
    claim_owner varchar(128) NOT NULL,               -- the batch's lease owner, for the log and last_error
    event_ids   bytea        NOT NULL,               -- the batch's event ids, 16 bytes each
    claimed_at  timestamptz  NOT NULL DEFAULT now()
);
