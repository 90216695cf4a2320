-- Copies of the outbox table for run.sh: as shipped (also for the variants that differ only in their
-- statements: deleting marks, reads without claims, the read and the mark or delete in one statement); with a
-- generated column that keeps the claim off the indexes (a HOT update when the page has room, hence
-- fillfactor 70); with the aggregate columns in "C";
-- with the primary key alone and room on every page, so that the mark without claims is a HOT update: the
-- floor of an UPDATE mark, which the shipped indexes rule out (they must drop terminal rows, so they name
-- status); without the head index, which only ordered mode reads ("nohead-delete").
DROP TABLE IF EXISTS bench_cm_shipped, bench_cm_hot, bench_cm_hot_delete, bench_cm_collate_c, bench_cm_delete, bench_cm_read_mark,
    bench_cm_read_delete, bench_cm_read_mark_hot, bench_cm_take, bench_cm_take_mark, bench_cm_lock_delete,
    bench_cm_lock_pick_delete, bench_cm_nohead_delete, bench_cm_read_range_delete;
CREATE TABLE bench_cm_shipped (
    id uuid PRIMARY KEY, aggregate_type varchar(255) NOT NULL, aggregate_id varchar(255) NOT NULL,
    topic varchar(255) NOT NULL, payload json NOT NULL, headers json NOT NULL DEFAULT '{}',
    priority integer NOT NULL DEFAULT 0, status varchar(16) NOT NULL DEFAULT 'PENDING'
      CHECK (status IN ('PENDING', 'PROCESSING', 'DISPATCHED', 'DLQ')),
    attempts integer NOT NULL DEFAULT 0, next_attempt_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    lease_owner varchar(128), lease_until timestamptz, created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    dispatched_at timestamptz, last_error text, sequence bigint NOT NULL DEFAULT 0,
    schema_version integer NOT NULL DEFAULT 1, occurred_at timestamptz, trace_parent varchar(128));
CREATE INDEX ON bench_cm_shipped (priority DESC, created_at, id) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX ON bench_cm_shipped (aggregate_type, aggregate_id, created_at, id) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX ON bench_cm_shipped (created_at, id) WHERE status = 'DLQ';

CREATE TABLE bench_cm_hot (LIKE bench_cm_shipped INCLUDING DEFAULTS INCLUDING CONSTRAINTS) WITH (fillfactor = 70);
ALTER TABLE bench_cm_hot ADD PRIMARY KEY (id);
ALTER TABLE bench_cm_hot ADD COLUMN stage smallint GENERATED ALWAYS AS
    (CASE WHEN status IN ('PENDING', 'PROCESSING') THEN 1 WHEN status = 'DLQ' THEN 2 END) STORED;
CREATE INDEX ON bench_cm_hot (priority DESC, created_at, id) WHERE stage = 1;
CREATE INDEX ON bench_cm_hot (aggregate_type, aggregate_id, created_at, id) WHERE stage = 1;
CREATE INDEX ON bench_cm_hot (created_at, id) WHERE stage = 2;
CREATE TABLE bench_cm_hot_delete (LIKE bench_cm_hot INCLUDING ALL) WITH (fillfactor = 70);

CREATE TABLE bench_cm_collate_c (LIKE bench_cm_shipped INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
ALTER TABLE bench_cm_collate_c ADD PRIMARY KEY (id);
ALTER TABLE bench_cm_collate_c ALTER COLUMN aggregate_type TYPE varchar(255) COLLATE "C",
    ALTER COLUMN aggregate_id TYPE varchar(255) COLLATE "C";
CREATE INDEX ON bench_cm_collate_c (priority DESC, created_at, id) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX ON bench_cm_collate_c (aggregate_type, aggregate_id, created_at, id) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX ON bench_cm_collate_c (created_at, id) WHERE status = 'DLQ';

CREATE TABLE bench_cm_delete (LIKE bench_cm_shipped INCLUDING ALL);
CREATE TABLE bench_cm_read_mark (LIKE bench_cm_shipped INCLUDING ALL);
CREATE TABLE bench_cm_read_delete (LIKE bench_cm_shipped INCLUDING ALL);
CREATE TABLE bench_cm_take (LIKE bench_cm_shipped INCLUDING ALL);
CREATE TABLE bench_cm_take_mark (LIKE bench_cm_shipped INCLUDING ALL);
CREATE TABLE bench_cm_lock_delete (LIKE bench_cm_shipped INCLUDING ALL);
CREATE TABLE bench_cm_lock_pick_delete (LIKE bench_cm_shipped INCLUDING ALL);
CREATE TABLE bench_cm_read_range_delete (LIKE bench_cm_shipped INCLUDING ALL);
CREATE TABLE bench_cm_nohead_delete (LIKE bench_cm_shipped INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
ALTER TABLE bench_cm_nohead_delete ADD PRIMARY KEY (id);
CREATE INDEX ON bench_cm_nohead_delete (priority DESC, created_at, id) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX ON bench_cm_nohead_delete (created_at, id) WHERE status = 'DLQ';
CREATE TABLE bench_cm_read_mark_hot (LIKE bench_cm_shipped INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
    WITH (fillfactor = 40);
ALTER TABLE bench_cm_read_mark_hot ADD PRIMARY KEY (id);
