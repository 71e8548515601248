#!/usr/bin/env bash
# Server CPU per request: evdispatch serve (several models) against nginx,
# lighttpd and h2o, one worker each pinned to CPU $SERVER_CPU, wrk -t1 pinned
# to CPU $CLIENT_CPU, a 6 KB file; keep-alive and Connection: close.
#
# Until `evdispatch bench server` exists (it will sit on the harness crate),
# this script is how the figures of issue 4 are measured:
#
#   flock /tmp/evd-bench.lock crates/evdispatch-http/bench/vs-peers.sh
#
# Environment: DURATION (s, default 8), CONNS (default 100), RUNS (default 3),
# MODELS (default "epoll uring-completion" plus "uring" when the library has
# it), PEERS (default "nginx lighttpd h2o"), BIN (the evdispatch-serve binary).
# Prints one line per run and a median summary; server CPU comes from
# /proc/PID/stat (utime + stime) over the measured window only.
set -euo pipefail

DURATION=${DURATION:-8}
CONNS=${CONNS:-100}
RUNS=${RUNS:-3}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
BIN=${BIN:-$REPO/target/release/evdispatch-serve}
[ -x "$BIN" ] || (cd "$REPO" && cargo build --release -p evdispatch-http --bin evdispatch-serve >&2)
if [ -z "${MODELS:-}" ]; then
  MODELS="epoll uring-completion"
  # The library's io_uring readiness mechanism, once it is in the table.
  probe=$("$BIN" --mechanism uring --root /nonexistent 2>&1 || true)
  case $probe in *"unknown mechanism"*) ;; *) MODELS="epoll uring uring-completion";; esac
fi
PEERS=${PEERS-nginx lighttpd h2o}
HZ=$(getconf CLK_TCK)

TIMEOUT_S=65
# shellcheck source=common.sh
. "$HERE/common.sh"
make_work evd-vs-peers
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }

# measure NAME MODE -> prints "name mode req/s cpu_us_per_req p99"
measure() {
  local name=$1 mode=$2 port hdr=()
  port=$(free_port)
  start_server "$name" "$port" || return 0
  [ "$mode" = close ] && hdr=(-H "Connection: close")
  taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d1s "${hdr[@]}" "http://127.0.0.1:$port/f6k.html" >/dev/null 2>&1 || true
  local t0 t1 out
  t0=$(cpu_ticks "$SPID")
  out=$(taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency "${hdr[@]}" "http://127.0.0.1:$port/f6k.html" 2>&1)
  t1=$(cpu_ticks "$SPID")
  stop_server
  local reqs rps p99 errs
  reqs=$(echo "$out" | awk '/requests in/{print $1}')
  rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
  p99=$(echo "$out" | awk '$1=="99%"{print $2}')
  errs=$(echo "$out" | awk '/Socket errors|Non-2xx/{printf "%s ", $0}')
  [ -n "$errs" ] && echo "$name $mode: $errs" >&2
  awk -v n="$name" -v m="$mode" -v r="$reqs" -v s="$rps" -v c=$((t1 - t0)) -v hz="$HZ" -v p="$p99" \
    'BEGIN{printf "%-18s %-10s %10.0f req/s  %6.2f us/req  p99 %s\n", n, m, s, c/hz*1e6/r, p}'
}

echo "# $(date -u +%FT%TZ) duration=${DURATION}s conns=$CONNS runs=$RUNS server_cpu=$SERVER_CPU client_cpu=$CLIENT_CPU"
RESULTS=$WORK/results.txt
for run in $(seq "$RUNS"); do
  for mode in keepalive close; do
    for s in $MODELS $PEERS; do
      measure "$s" "$mode" | tee -a "$RESULTS"
    done
  done
done
echo "# medians over $RUNS runs"
python3 - "$RESULTS" <<'PY'
import sys, statistics
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    rows.setdefault((f[1], f[0]), []).append((float(f[2]), float(f[4])))
for (mode, name), v in sorted(rows.items()):
    rps = [x[0] for x in v]; us = [x[1] for x in v]
    print(f"{mode:<10} {name:<18} {statistics.median(rps):>9.0f} req/s  {statistics.median(us):6.2f} us/req"
          f"  (us/req {min(us):.2f}-{max(us):.2f}, n={len(v)})")
PY
