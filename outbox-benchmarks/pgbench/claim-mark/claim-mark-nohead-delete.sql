-- The claim and the deleting mark of "delete", on a table without the head index (only ordered mode reads it).
WITH picked AS MATERIALIZED (SELECT o.id FROM bench_cm_nohead_delete o WHERE ((o.status = 'PENDING' AND o.next_attempt_at <= now()) OR (o.status = 'PROCESSING' AND o.lease_until < now())) ORDER BY o.priority DESC, o.created_at, o.id LIMIT 500 FOR UPDATE OF o SKIP LOCKED), c AS (UPDATE bench_cm_nohead_delete t SET status = 'PROCESSING', attempts = t.attempts + 1, lease_owner = 'w', lease_until = now() + interval '60 s' WHERE t.id = ANY(ARRAY(SELECT id FROM picked)) RETURNING t.*) SELECT array_agg(id) AS ids FROM c
\gset
DELETE FROM bench_cm_nohead_delete WHERE id = ANY(:ids::uuid[]) AND status = 'PROCESSING' AND lease_owner = 'w';
