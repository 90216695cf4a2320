-- Without claims, in one statement: the read and the deleting mark together (DELETE … RETURNING of the due
-- events, which locks them, so that other readers skip them). A dispatcher built on it would hold this
-- transaction open until the broker acknowledged the batch; the database's work is this statement's.
WITH taken AS (DELETE FROM bench_cm_take WHERE id IN (SELECT o.id FROM bench_cm_take o WHERE o.status = 'PENDING' AND o.next_attempt_at <= now() ORDER BY o.priority DESC, o.created_at, o.id LIMIT 500 FOR UPDATE SKIP LOCKED) RETURNING *) SELECT array_agg(id) AS ids FROM taken;
