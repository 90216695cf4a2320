-- The claim of claim-mark-hot.sql (a HOT update when the page has room), then a mark that deletes (deleteOnDispatch).
WITH picked AS MATERIALIZED (SELECT o.id FROM bench_cm_hot_delete o WHERE o.stage = 1 AND ((o.status = 'PENDING' AND o.next_attempt_at <= now()) OR (o.status = 'PROCESSING' AND o.lease_until < now())) ORDER BY o.priority DESC, o.created_at, o.id LIMIT 500 FOR UPDATE OF o SKIP LOCKED), c AS (UPDATE bench_cm_hot_delete t SET status = 'PROCESSING', attempts = t.attempts + 1, lease_owner = 'w', lease_until = now() + interval '60 s' WHERE t.id = ANY(ARRAY(SELECT id FROM picked)) RETURNING t.*) SELECT array_agg(id) AS ids FROM c
\gset
DELETE FROM bench_cm_hot_delete WHERE id = ANY(:ids::uuid[]) AND status = 'PROCESSING' AND lease_owner = 'w';
