-- A copy of the outbox table as shipped on PostgreSQL, with 100,000 pending events (time-ordered ids), fresh
-- statistics and a checkpoint. Run by run.sh before each variant.
DROP TABLE IF EXISTS bench_rbm;
CREATE TABLE bench_rbm (
    id uuid PRIMARY KEY, aggregate_type varchar(255) NOT NULL, aggregate_id varchar(255) NOT NULL,
    topic varchar(255) NOT NULL, payload json NOT NULL, headers json NOT NULL DEFAULT '{}',
    priority integer NOT NULL DEFAULT 0, status varchar(16) NOT NULL DEFAULT 'PENDING'
      CHECK (status IN ('PENDING', 'PROCESSING', 'DISPATCHED', 'DLQ')),
    attempts integer NOT NULL DEFAULT 0, next_attempt_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    lease_owner varchar(128), lease_until timestamptz, created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    dispatched_at timestamptz, last_error text, sequence bigint NOT NULL DEFAULT 0,
    schema_version integer NOT NULL DEFAULT 1, occurred_at timestamptz, trace_parent varchar(128));
CREATE INDEX ON bench_rbm (priority DESC, created_at, id) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX ON bench_rbm (aggregate_type, aggregate_id, created_at, id) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX ON bench_rbm (created_at, id) WHERE status = 'DLQ';
INSERT INTO bench_rbm (id, aggregate_type, aggregate_id, topic, payload, created_at, occurred_at)
SELECT lpad(to_hex(g), 32, '0')::uuid, 'order', 'a' || g, 'order.created',
       '{"orderId":1,"amount":12.5,"currency":"EUR"}', clock_timestamp(), clock_timestamp()
FROM generate_series(1, 100000) g;
ANALYZE bench_rbm;
CHECKPOINT;
