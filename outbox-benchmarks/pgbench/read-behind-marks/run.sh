#!/usr/bin/env bash
# What the read without claims costs beside its mark: the store's read, which walks past the 500 events
# still in flight, against a read that starts after the last row it returned (a keyset), each followed by the
# mark of the batch before, 150 batches of 500 on a 100,000-row outbox made by the shipped DDL, twice each, alternating.
# Times are measured inside the server (no network, no driver). Leaves no table behind. The server is
# PGHOST/PGUSER/PGDATABASE (default 127.0.0.1, postgres, test):
#   bash outbox-benchmarks/pgbench/read-behind-marks/run.sh
set -euo pipefail
cd "$(dirname "$0")"
export PGHOST="${PGHOST:-127.0.0.1}" PGUSER="${PGUSER:-postgres}" PGDATABASE="${PGDATABASE:-test}"
export PGOPTIONS="-c client_min_messages=warning"
trap 'psql -q -c "DROP SCHEMA IF EXISTS bench_rbm CASCADE"' EXIT
for round in 1 2; do
  for keyset in false true; do
    psql -q -v ON_ERROR_STOP=1 -f setup.sql >/dev/null
    result=$(sed "s/:keyset/$keyset/" loop.sql | PGOPTIONS="-c client_min_messages=notice" \
      psql -q -v ON_ERROR_STOP=1 2>&1 | sed -n 's/^NOTICE: *//p')
    printf 'round %d  %-26s per 500: %s\n' "$round" \
      "$([ "$keyset" = true ] && echo "keyset read" || echo "read as shipped")" "$result"
  done
done
