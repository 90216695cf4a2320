#!/usr/bin/env bash
# Claim and mark of 500 rows, 150 times (75,000 events), one client, on three copies of the outbox table,
# alternating, twice each: mean time per claim + mark and the WAL written. Leaves no table behind.
# The server is PGHOST/PGPORT/PGUSER/PGDATABASE (default 127.0.0.1, postgres, test):
#   bash outbox-benchmarks/pgbench/claim-mark/run.sh
set -euo pipefail
cd "$(dirname "$0")"
export PGHOST="${PGHOST:-127.0.0.1}" PGUSER="${PGUSER:-postgres}" PGDATABASE="${PGDATABASE:-test}"
export PGOPTIONS="-c client_min_messages=warning"
psql -q -v ON_ERROR_STOP=1 -f setup.sql
trap 'psql -q -c "DROP TABLE IF EXISTS bench_cm_shipped, bench_cm_hot, bench_cm_collate_c"' EXIT
for round in 1 2; do
  for t in shipped hot collate_c; do
    psql -q -v ON_ERROR_STOP=1 -v tbl="bench_cm_$t" -f load.sql
    lsn=$(psql -At -c "SELECT pg_current_wal_lsn()")
    latency=$(pgbench -n -M prepared -c 1 -t 150 -f "claim-mark-$t.sql" 2>&1 | sed -n 's/^latency average = //p')
    wal=$(psql -At -c "SELECT pg_size_pretty(pg_wal_lsn_diff(pg_current_wal_lsn(), '$lsn'))")
    printf 'round %d  %-10s claim + mark of 500: %s  WAL %s\n' "$round" "$t" "$latency" "$wal"
  done
done
