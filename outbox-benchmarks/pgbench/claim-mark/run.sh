#!/usr/bin/env bash
# Claim (or, without claims, read) and mark of 500 rows, 150 times (75,000 events), one client, on copies of
# the outbox table, alternating, twice each: the mean time of each of the two statements and the WAL
# written. Variants: as shipped; a generated column that lets the claim be a HOT update; the aggregate
# columns in "C"; a mark that deletes (deleteOnDispatch); the read without claims with its mark, with a
# mark that deletes, and with a mark that is a HOT update (primary key only: the floor of an UPDATE mark).
# Leaves no table behind. The server is PGHOST/PGPORT/PGUSER/PGDATABASE (default 127.0.0.1, postgres, test):
#   bash outbox-benchmarks/pgbench/claim-mark/run.sh
set -euo pipefail
cd "$(dirname "$0")"
export PGHOST="${PGHOST:-127.0.0.1}" PGUSER="${PGUSER:-postgres}" PGDATABASE="${PGDATABASE:-test}"
export PGOPTIONS="-c client_min_messages=warning"
psql -q -v ON_ERROR_STOP=1 -f setup.sql
variants="shipped hot collate_c delete read-mark read-delete read-mark-hot"
trap 'psql -q -c "DROP TABLE IF EXISTS $(for t in $variants; do printf "bench_cm_%s," "${t//-/_}"; done | sed "s/,$//")"' EXIT
for round in 1 2; do
  for t in $variants; do
    psql -q -v ON_ERROR_STOP=1 -v tbl="bench_cm_${t//-/_}" -f load.sql
    lsn=$(psql -At -c "SELECT pg_current_wal_lsn()")
    out=$(pgbench -n -r -M prepared -c 1 -t 150 -f "claim-mark-$t.sql" 2>&1)
    latency=$(sed -n 's/^latency average = //p' <<<"$out")
    # the per-statement means: the claim (or read), then the mark
    read -r first second < <(awk '/statement latencies/ {on = 1; next} on && NF > 2 {printf "%s ", $1} END {print ""}' <<<"$out")
    wal=$(psql -At -c "SELECT pg_size_pretty(pg_wal_lsn_diff(pg_current_wal_lsn(), '$lsn'))")
    printf 'round %d  %-11s claim/read + mark of 500: %s (%s + %s ms)  WAL %s\n' "$round" "$t" "$latency" \
      "$first" "$second" "$wal"
  done
done
