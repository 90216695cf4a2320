-- A plain insert of the store's 13 columns into the shipped table, without the sequence counter.
\set aid random(1, 1000)
INSERT INTO bench_sa (id, aggregate_type, aggregate_id, topic, payload, headers, priority, created_at, next_attempt_at, sequence, schema_version, occurred_at, trace_parent) VALUES (gen_random_uuid(), 'order', 'a' || :aid, 'order.created', CAST('{"orderId":42,"amount":12.5}' AS json), CAST('{"tenant":"acme"}' AS json), 0, clock_timestamp(), clock_timestamp(), 1, 1, clock_timestamp(), NULL);
