-- What a user would write: the event's columns, the database clock for the times.
\set aid random(1, 1000)
INSERT INTO bench_sa_minimal (id, aggregate_type, aggregate_id, topic, payload, headers, priority) VALUES (gen_random_uuid(), 'order', 'a' || :aid, 'order.created', CAST('{"orderId":42,"amount":12.5}' AS json), CAST('{"tenant":"acme"}' AS json), 0);
