#!/usr/bin/env bash
# One event per transaction, one client, 10 s per script, three interleaved rounds: a plain insert into a
# minimal table, a plain insert into the shipped table, the store's statement without and with its sequence
# counter. SYNC=off (synchronous_commit off) takes the commit's flush out, leaving the server's own work.
# The server is PGHOST/PGPORT/PGUSER/PGDATABASE (default 127.0.0.1, postgres, test). Leaves no table behind:
#   [SYNC=off] bash outbox-benchmarks/pgbench/single-append/run.sh
set -euo pipefail
cd "$(dirname "$0")"
export PGHOST="${PGHOST:-127.0.0.1}" PGUSER="${PGUSER:-postgres}" PGDATABASE="${PGDATABASE:-test}"
export PGOPTIONS="-c client_min_messages=warning${SYNC:+ -c synchronous_commit=$SYNC}"
drop() { psql -q -c "DROP TABLE IF EXISTS bench_sa, bench_sa_sequences, bench_sa_minimal"; }
drop
trap drop EXIT
sed 's/\boutbox\b/bench_sa/g; s/\boutbox_/bench_sa_/g' \
  ../../../outbox-jdbc/src/main/resources/io/mic/outbox/jdbc/schema/postgresql.sql | psql -q -v ON_ERROR_STOP=1
psql -q -v ON_ERROR_STOP=1 -f setup.sql
for round in 1 2 3; do
  for script in plain-minimal plain-shipped store-without-counter store; do
    latency=$(pgbench -n -M prepared -c 1 -T 10 -f "$script.sql" 2>&1 | sed -n 's/^latency average = //p')
    printf 'round %d  %-22s %s per transaction\n' "$round" "$script" "$latency"
  done
done
