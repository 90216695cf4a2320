-- The outbox table exactly as shipped (its DDL file, in a schema of its own), with 100,000 pending events
-- (time-ordered ids), fresh statistics and a checkpoint. Run by run.sh before each variant.
DROP SCHEMA IF EXISTS bench_rbm CASCADE;
CREATE SCHEMA bench_rbm;
SET search_path = bench_rbm;
\ir ../../../outbox-jdbc/src/main/resources/io/mic/outbox/jdbc/schema/postgresql.sql
INSERT INTO outbox (id, aggregate_type, aggregate_id, topic, payload, created_at, occurred_at)
SELECT lpad(to_hex(g), 32, '0')::uuid, 'order', 'a' || g, 'order.created',
       '{"orderId":1,"amount":12.5,"currency":"EUR"}', clock_timestamp(), clock_timestamp()
FROM generate_series(1, 100000) g;
ANALYZE outbox;
CHECKPOINT;
