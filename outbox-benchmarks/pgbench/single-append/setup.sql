-- After run.sh has created bench_sa and bench_sa_sequences from the shipped schema: a minimal table (primary
-- key and the partial claim index) and counter rows for the 1,000 aggregates the scripts append to.
DROP TABLE IF EXISTS bench_sa_minimal;
CREATE TABLE bench_sa_minimal (LIKE bench_sa INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
ALTER TABLE bench_sa_minimal ADD PRIMARY KEY (id);
CREATE INDEX ON bench_sa_minimal (priority DESC, created_at, id) WHERE status IN ('PENDING', 'PROCESSING');
INSERT INTO bench_sa_sequences SELECT 'order', 'a' || g, 1 FROM generate_series(1, 1000) g;
VACUUM ANALYZE bench_sa_sequences;
