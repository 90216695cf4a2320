-- "read-delete" with the deleting mark bounded by the batch's first and last place in dispatch order, so that
-- it walks a range of the claim index instead of looking up each id in the primary key.
SELECT array_agg(id) AS ids, min(created_at) AS lo, max(created_at) AS hi FROM (SELECT o.id, o.created_at FROM bench_cm_read_range_delete o WHERE o.status = 'PENDING' AND o.next_attempt_at <= now() ORDER BY o.priority DESC, o.created_at, o.id LIMIT 500) r
\gset
DELETE FROM bench_cm_read_range_delete WHERE priority = 0 AND created_at BETWEEN :lo::timestamptz AND :hi::timestamptz AND status IN ('PENDING', 'PROCESSING') AND id = ANY(:ids::uuid[]) AND status = 'PENDING';
