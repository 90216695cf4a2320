#!/usr/bin/env bash
# Claim (or, without claims, read) and mark of 500 rows, 150 times (75,000 events), one client, on copies of
# the outbox table, alternating, twice each: the mean time of each of the two statements and the WAL
# written. Variants: as shipped; a generated column that lets the claim be a HOT update, with an updating
# and with a deleting mark ("hot", "hot-delete"); the aggregate
# columns in "C"; a mark that deletes (deleteOnDispatch); the read without claims with its mark, with a
# mark that deletes, and with a mark that is a HOT update (primary key only: the floor of an UPDATE mark);
# "take", the read and the deleting mark as one statement (DELETE … RETURNING), its time under "claim/read";
# and "take-mark", the same with a mark that keeps the row (UPDATE … RETURNING); "lock-delete", the claim held by
# a transaction (transactionalClaims(true)): the locking read and the delete in one transaction;
# "lock-pick-delete", the same in two steps, as it was before (the ids locked, then the rows read by primary key);
# "nohead-delete", the lease with a deleting mark on a table without the head index (only ordered mode reads
# it); "read-range-delete", the read without claims with a deleting mark bounded by the batch's range.
# When the server runs on this machine, also PostgreSQL's CPU per batch (all its processes, from /proc).
# Leaves no table behind. The server is PGHOST/PGPORT/PGUSER/PGDATABASE (default 127.0.0.1, postgres, test):
#   bash outbox-benchmarks/pgbench/claim-mark/run.sh
set -euo pipefail
cd "$(dirname "$0")"
export PGHOST="${PGHOST:-127.0.0.1}" PGUSER="${PGUSER:-postgres}" PGDATABASE="${PGDATABASE:-test}"
export PGOPTIONS="-c client_min_messages=warning"
psql -q -v ON_ERROR_STOP=1 -f setup.sql
all="shipped hot hot-delete collate_c delete nohead-delete read-mark read-delete read-range-delete read-mark-hot take take-mark"
all="$all lock-delete lock-pick-delete"
variants="${VARIANTS:-$all}"   # e.g. VARIANTS="read-delete take"
. ../server-cpu.sh
trap 'psql -q -c "DROP TABLE IF EXISTS $(for t in $all; do printf "bench_cm_%s," "${t//-/_}"; done | sed "s/,$//")"' EXIT
for round in 1 2; do
  for t in $variants; do
    psql -q -v ON_ERROR_STOP=1 -v tbl="bench_cm_${t//-/_}" -f load.sql
    lsn=$(psql -At -c "SELECT pg_current_wal_lsn()")
    processes=$(pgrep -xc postgres || true) ticks=$(pg_ticks)
    out=$(pgbench -n -r -M prepared -c 1 -t 150 -f "claim-mark-$t.sql" 2>&1)
    await_backend_end "$processes"
    cpu=$(pg_cpu_per "$ticks" 150 batch)
    latency=$(sed -n 's/^latency average = //p' <<<"$out")
    # the per-statement means: the claim (or read), then the mark
    read -r first second < <(awk '/statement latencies/ {on = 1; next} on && NF > 2 && !/BEGIN|COMMIT/ {printf "%s ", $1} END {print ""}' <<<"$out")
    wal=$(psql -At -c "SELECT pg_size_pretty(pg_wal_lsn_diff(pg_current_wal_lsn(), '$lsn'))")
    printf 'round %d  %-13s claim/read + mark of 500: %s (%s + %s ms)  WAL %s%s\n' "$round" "$t" "$latency" \
      "$first" "${second:-0}" "$wal" "$cpu"
  done
done
