-- Without claims, in one statement: the read and the mark that keeps the row (UPDATE … RETURNING of the due
-- events, locked with SKIP LOCKED so that other readers skip them). The keeping counterpart of "take": a
-- dispatcher built on it would hold this transaction open until the broker acknowledged the batch.
WITH taken AS (UPDATE bench_cm_take_mark SET status = 'DISPATCHED', dispatched_at = now(), attempts = attempts + 1 WHERE id IN (SELECT o.id FROM bench_cm_take_mark o WHERE o.status = 'PENDING' AND o.next_attempt_at <= now() ORDER BY o.priority DESC, o.created_at, o.id LIMIT 500 FOR UPDATE SKIP LOCKED) RETURNING *) SELECT array_agg(id) AS ids FROM taken;
