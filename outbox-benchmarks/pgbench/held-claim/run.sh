#!/usr/bin/env bash
# Where a claim held by a transaction (transactionalClaims(true)) spends PostgreSQL's CPU per batch of 500 with
# deleting marks: every statement the store sends for a batch (shipped), against the locking read and the
# delete alone (bare), on tables made from the shipped DDL with 100,000 due events each, 150 batches per run,
# one client, three interleaved rounds; PostgreSQL's CPU per batch (all its processes, from /proc, when the
# server runs on this machine). Both reads fold the ids they locked into one value for the statements after
# them, where the store receives the rows themselves: sending the rows is not counted. MODE=extended parses and
# plans every statement at each execution, as pgjdbc does until a statement has run five times on a connection
# (prepareThreshold). CLIENTS="1 2 4" runs each script with that many clients at once (150 batches in all, 148
# with 4), and HOLD_MS=8 keeps each batch's transaction open that long between its read and its delete, as while
# the broker acknowledges: a read then steps over the rows that the other clients' batches hold. Leaves no table
# behind.
# The server is PGHOST/PGPORT/PGUSER/PGDATABASE (default 127.0.0.1, postgres, test):
#   bash outbox-benchmarks/pgbench/held-claim/run.sh
#   CLIENTS="1 2 4" HOLD_MS=8 bash outbox-benchmarks/pgbench/held-claim/run.sh
set -euo pipefail
cd "$(dirname "$0")"
export PGHOST="${PGHOST:-127.0.0.1}" PGUSER="${PGUSER:-postgres}" PGDATABASE="${PGDATABASE:-test}"
export PGOPTIONS="-c client_min_messages=warning"
schema=../../../outbox-jdbc/src/main/resources/io/mic/outbox/jdbc/schema
drop() {
  psql -q -c "DROP TABLE IF EXISTS bench_hc, bench_hc_sequences, bench_hc_control, bench_hc_claims, bench_hc_bare,
    bench_hc_bare_sequences"
}
drop
trap drop EXIT
for f in postgresql control-postgresql claims-postgresql; do
  sed 's/\boutbox/bench_hc/g' "$schema/$f.sql" | psql -q -v ON_ERROR_STOP=1
done
sed 's/\boutbox/bench_hc_bare/g' "$schema/postgresql.sql" | psql -q -v ON_ERROR_STOP=1
. ../server-cpu.sh
batches=150
for round in 1 2 3; do
  for clients in ${CLIENTS:-1}; do
    each=$((batches / clients))
    for script in bare shipped; do
      table=bench_hc; [ "$script" = bare ] && table=bench_hc_bare
      psql -q -v ON_ERROR_STOP=1 -v tbl="$table" -f ../claim-mark/load.sql
      processes=$(pgrep -xc postgres || true) ticks=$(pg_ticks)
      out=$(pgbench -n -M "${MODE:-prepared}" -c "$clients" -j "$clients" -t "$each" \
        -D hold="${HOLD_MS:-0}" -f "$script.sql" 2>&1)
      await_backend_end "$processes"
      printf 'round %d  %d client(s)  %-8s %s per batch%s\n' "$round" "$clients" "$script" \
        "$(sed -n 's/^latency average = //p' <<<"$out")" "$(pg_cpu_per "$ticks" $((each * clients)) batch)"
    done
  done
done
