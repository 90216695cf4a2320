-- A claim held by a transaction (transactionalClaims(true)), as shipped: one SELECT … FOR UPDATE SKIP LOCKED
-- locks the due events and returns them, then the same transaction deletes them; a dispatcher keeps it open
-- until the broker acknowledged the batch. The database's work is these statements'.
BEGIN;
SELECT array_agg(id) AS ids FROM (SELECT o.* FROM bench_cm_lock_delete o WHERE o.status = 'PENDING' AND o.next_attempt_at <= now() ORDER BY o.priority DESC, o.created_at, o.id LIMIT 500 FOR UPDATE SKIP LOCKED) r
\gset
DELETE FROM bench_cm_lock_delete WHERE id = ANY(:ids::uuid[]) AND status = 'PENDING';
COMMIT;
