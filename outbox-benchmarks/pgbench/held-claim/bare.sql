-- The two statements a claim held by a transaction cannot do without, as the store writes them: the locking
-- read of 500 due events and their delete by the ids as one bytea, in one transaction, open for HOLD_MS
-- between the two (run.sh).
BEGIN;
SELECT string_agg(uuid_send(id), ''::bytea) AS idb FROM (SELECT o.* FROM bench_hc_bare o WHERE o.status = 'PENDING' AND o.next_attempt_at <= now() ORDER BY o.priority DESC, o.created_at, o.id LIMIT 500 FOR UPDATE OF o SKIP LOCKED) r
\gset
\sleep :hold ms
DELETE FROM bench_hc_bare WHERE id = ANY(ARRAY(SELECT CAST(encode(substring(b FROM g * 16 + 1 FOR 16), 'hex') AS uuid) FROM (SELECT CAST(:idb AS bytea) AS b) p, generate_series(0, length(b) / 16 - 1) g)) AND status = 'PENDING';
COMMIT;
