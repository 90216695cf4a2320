# Sourced by the run.sh scripts beside it: PostgreSQL's CPU, read from /proc when the server runs here.

# PostgreSQL's CPU so far in clock ticks: its processes, and the backends that ended (the postmaster's reaped
# children); nothing when PGHOST is another machine or no server runs here
pg_ticks() {
  local main
  case "$PGHOST" in 127.0.0.1 | localhost | ::1 | /*) ;; *) return 0 ;; esac
  main=$(pgrep -xo postgres) || return 0
  { awk '{print $16 + $17}' "/proc/$main/stat"
    for p in $(pgrep -x postgres); do awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || true; done
  } | awk '{s += $1} END {print s}'
}

# waits until pgbench's backend has ended and been reaped (at most 2 s), so that its CPU is counted; $1 is the
# count of PostgreSQL's processes before pgbench started
await_backend_end() {
  local before=$1 i
  for i in $(seq 100); do
    [ "$(pgrep -xc postgres || true)" -le "$before" ] && return 0
    sleep 0.02
  done
}

# PostgreSQL's CPU in ms per unit of work since ticks $1 were read ($2 units), as "  PostgreSQL CPU x ms per
# <$3>"; nothing when pg_ticks has nothing
pg_cpu_per() {
  local since=$1 units=$2 unit=$3
  [ -n "$since" ] || return 0
  awk -v t="$(( $(pg_ticks) - since ))" -v hz="$(getconf CLK_TCK)" -v n="$units" -v u="$unit" \
    'BEGIN {printf "  PostgreSQL CPU %.2f ms per %s", t * 1000 / hz / n, u}'
}
