-- Without claims: the read of 500 due events, then a mark that deletes (deleteOnDispatch).
SELECT array_agg(id) AS ids FROM (SELECT o.* FROM bench_cm_read_delete o WHERE o.status = 'PENDING' AND o.next_attempt_at <= now() ORDER BY o.priority DESC, o.created_at, o.id LIMIT 500) r
\gset
DELETE FROM bench_cm_read_delete WHERE id = ANY(:ids::uuid[]) AND status = 'PENDING';
