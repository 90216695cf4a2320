-- The claim journal as shipped (bench_cj_claims, from claims-postgresql.sql), an unlogged copy, and 150
-- batches of 500 time-ordered ids, 16 bytes each, as the store writes them (Ids.bytes).
CREATE UNLOGGED TABLE bench_cj_unlogged_claims (LIKE bench_cj_claims INCLUDING ALL);
CREATE TABLE bench_cj_ids (n integer PRIMARY KEY, ids bytea NOT NULL);
INSERT INTO bench_cj_ids
SELECT b, (SELECT string_agg(uuid_send((lpad(to_hex(b * 1000 + g), 12, '0') || '70008000'
                                       || lpad(to_hex((random() * 1e12)::bigint), 12, '0'))::uuid), ''::bytea ORDER BY g)
           FROM generate_series(1, 500) g)
FROM generate_series(1, 150) b;
