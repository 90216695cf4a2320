-- A claim held by a transaction (transactionalClaims(true)): the due events locked (FOR UPDATE SKIP LOCKED)
-- and read, then deleted in the same transaction, which a dispatcher keeps open until the broker acknowledged
-- the batch; the database's work is these statements'.
BEGIN;
SELECT array_agg(id) AS ids FROM (SELECT o.* FROM bench_cm_lock_delete o WHERE o.id = ANY(ARRAY(SELECT i.id FROM bench_cm_lock_delete i WHERE i.status = 'PENDING' AND i.next_attempt_at <= now() ORDER BY i.priority DESC, i.created_at, i.id LIMIT 500 FOR UPDATE SKIP LOCKED))) r
\gset
DELETE FROM bench_cm_lock_delete WHERE id = ANY(:ids::uuid[]) AND status = 'PENDING';
COMMIT;
