-- A batch of 500 as transactionalClaims(true) sends it with deleting marks: the dispatcher's read of the
-- pauses, the transaction's idle timeout and advisory lock, the pauses again, the locking read of the
-- event's columns, the claim journal's row, the delete with the ids as one bytea, the journal row's delete,
-- the commit; between the journal's row and the delete, the broker's acknowledgements (HOLD_MS in run.sh).
-- The store commits the journal's row at once on another connection; here it is written in the
-- batch's transaction, one commit fewer.
\set k random(1, 2000000000)
SELECT topic FROM bench_hc_control;
BEGIN;
SELECT set_config('idle_in_transaction_session_timeout', '60000', true), pg_try_advisory_xact_lock(1, :k);
SELECT topic FROM bench_hc_control;
SELECT string_agg(uuid_send(id), ''::bytea) AS idb FROM (SELECT o.id, o.aggregate_type, o.aggregate_id, o.topic, o.payload, o.headers, o.priority, 'PROCESSING', o.attempts + 1, o.next_attempt_at, 'w', now() + 60000000 * interval '1 microsecond', o.created_at, o.dispatched_at, o.last_error, o.sequence, o.schema_version, o.occurred_at, o.trace_parent FROM bench_hc o WHERE o.status = 'PENDING' AND o.next_attempt_at <= now() ORDER BY o.priority DESC, o.created_at, o.id LIMIT 500 FOR UPDATE OF o SKIP LOCKED) r
\gset
INSERT INTO bench_hc_claims (claim_key, claim_owner, event_ids) VALUES (:k, 'mic-outbox-1-0123456789abcdef', CAST(:idb AS bytea)) ON CONFLICT (claim_key) DO NOTHING;
\sleep :hold ms
DELETE FROM bench_hc WHERE id = ANY(ARRAY(SELECT CAST(encode(substring(b FROM g * 16 + 1 FOR 16), 'hex') AS uuid) FROM (SELECT CAST(:idb AS bytea) AS b) p, generate_series(0, length(b) / 16 - 1) g)) AND status = 'PENDING' RETURNING id;
DELETE FROM bench_hc_claims WHERE claim_key = :k;
COMMIT;
