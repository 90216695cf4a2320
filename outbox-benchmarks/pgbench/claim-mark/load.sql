-- 100,000 pending events with time-ordered ids, then fresh statistics and a checkpoint (psql -v tbl=TABLE).
TRUNCATE :tbl;
INSERT INTO :tbl (id, aggregate_type, aggregate_id, topic, payload, created_at)
SELECT lpad(to_hex(g), 32, '0')::uuid, 'order', 'a' || g, 'order.created',
       '{"orderId":1,"amount":12.5,"currency":"EUR"}', clock_timestamp()
FROM generate_series(1, 100000) g;
ANALYZE :tbl;
CHECKPOINT;
