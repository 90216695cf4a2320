-- Without claims, on the primary key alone (the read scans the table): the mark is a HOT update.
SELECT array_agg(id) AS ids FROM (SELECT o.* FROM bench_cm_read_mark_hot o WHERE o.status = 'PENDING' AND o.next_attempt_at <= now() ORDER BY o.priority DESC, o.created_at, o.id LIMIT 500) r
\gset
UPDATE bench_cm_read_mark_hot SET status = 'DISPATCHED', dispatched_at = now(), lease_until = NULL, attempts = attempts + 1 WHERE id = ANY(:ids::uuid[]) AND status = 'PENDING';
