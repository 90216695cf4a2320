#!/usr/bin/env bash
# What the claim journal of transactionalClaims(true) costs PostgreSQL per batch of 500: its row written and
# deleted (journal), the same on an unlogged table (unlogged), and two statements that touch nothing (none),
# 1,500 batches each, one client, three interleaved rounds; PostgreSQL's CPU per batch (all its processes,
# from /proc, when the server runs on this machine) and the WAL. Leaves no table behind. The server is
# PGHOST/PGPORT/PGUSER/PGDATABASE (default 127.0.0.1, postgres, test):
#   bash outbox-benchmarks/pgbench/claim-journal/run.sh
set -euo pipefail
cd "$(dirname "$0")"
export PGHOST="${PGHOST:-127.0.0.1}" PGUSER="${PGUSER:-postgres}" PGDATABASE="${PGDATABASE:-test}"
export PGOPTIONS="-c client_min_messages=warning"
drop() { psql -q -c "DROP TABLE IF EXISTS bench_cj_claims, bench_cj_unlogged_claims, bench_cj_ids"; }
drop
trap drop EXIT
sed 's/\boutbox_claims\b/bench_cj_claims/g' \
  ../../../outbox-jdbc/src/main/resources/io/mic/outbox/jdbc/schema/claims-postgresql.sql | psql -q -v ON_ERROR_STOP=1
psql -q -v ON_ERROR_STOP=1 -f setup.sql
. ../server-cpu.sh
batches=1500
for round in 1 2 3; do
  for script in none journal unlogged; do
    lsn=$(psql -At -c "SELECT pg_current_wal_lsn()")
    processes=$(pgrep -xc postgres || true) ticks=$(pg_ticks)
    out=$(pgbench -n -M prepared -c 1 -t "$batches" -f "$script.sql" 2>&1)
    await_backend_end "$processes"
    cpu=$(pg_cpu_per "$ticks" "$batches" batch)
    wal=$(psql -At -c "SELECT round(pg_wal_lsn_diff(pg_current_wal_lsn(), '$lsn') / $batches)")
    printf 'round %d  %-9s %s per batch  WAL %s bytes per batch%s\n' "$round" "$script" \
      "$(sed -n 's/^latency average = //p' <<<"$out")" "$wal" "$cpu"
  done
done
