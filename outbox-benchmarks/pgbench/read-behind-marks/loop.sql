-- The pipelined reader without claims, 150 times: read the next 500 due events while the previous 500 are
-- still in flight (left out as the store leaves them out: one bytea of their ids, hashed once), then mark
-- the previous 500 DISPATCHED, each in its own transaction. With :keyset the read instead starts after the
-- last row it returned, so it never walks the rows in flight. Reports the mean time of each statement.
DO $$
DECLARE
  in_flight bytea := ''::bytea; ids uuid[] := '{}'; next_ids uuid[]; t0 timestamptz;
  t_read interval := '0'; t_mark interval := '0'; last_at timestamptz := '-infinity';
  last_id uuid := '00000000-0000-0000-0000-000000000000';
BEGIN
  FOR i IN 1..150 LOOP
    t0 := clock_timestamp();
    IF :keyset THEN
      SELECT array_agg(id ORDER BY created_at, id), max(created_at) INTO next_ids, last_at
      FROM (SELECT * FROM bench_rbm.outbox o WHERE o.status = 'PENDING' AND o.next_attempt_at <= now()
              AND o.priority = 0 AND (o.created_at, o.id) > (last_at, last_id)
            ORDER BY o.priority DESC, o.created_at, o.id LIMIT 500) r;
      last_id := next_ids[array_length(next_ids, 1)];
    ELSE
      SELECT array_agg(id) INTO next_ids
      FROM (SELECT * FROM bench_rbm.outbox o WHERE o.status = 'PENDING' AND o.next_attempt_at <= now()
              AND uuid_send(o.id) NOT IN (SELECT substring(b FROM g * 16 + 1 FOR 16)
                  FROM (SELECT in_flight AS b) p, generate_series(0, length(b) / 16 - 1) g)
            ORDER BY o.priority DESC, o.created_at, o.id LIMIT 500) r;
    END IF;
    t_read := t_read + (clock_timestamp() - t0);
    COMMIT;
    t0 := clock_timestamp();
    UPDATE bench_rbm.outbox SET status = 'DISPATCHED', dispatched_at = now(), lease_until = NULL, attempts = attempts + 1
    WHERE id = ANY(ids) AND status = 'PENDING';
    t_mark := t_mark + (clock_timestamp() - t0);
    COMMIT;
    ids := next_ids;
    SELECT string_agg(uuid_send(u), ''::bytea) INTO in_flight FROM unnest(ids) u;
  END LOOP;
  RAISE NOTICE 'read % ms, mark % ms', round(extract(epoch FROM t_read) * 1000 / 150, 2),
    round(extract(epoch FROM t_mark) * 1000 / 150, 2);
END $$;
