-- A claim held by a transaction in its earlier form: the ids locked in a subquery, then the rows read
-- again by primary key (what a lease's UPDATE must do), then deleted in the same transaction.
BEGIN;
SELECT array_agg(id) AS ids FROM (SELECT o.* FROM bench_cm_lock_pick_delete o WHERE o.id = ANY(ARRAY(SELECT i.id FROM bench_cm_lock_pick_delete i WHERE i.status = 'PENDING' AND i.next_attempt_at <= now() ORDER BY i.priority DESC, i.created_at, i.id LIMIT 500 FOR UPDATE SKIP LOCKED))) r
\gset
DELETE FROM bench_cm_lock_pick_delete WHERE id = ANY(:ids::uuid[]) AND status = 'PENDING';
COMMIT;
