#!/usr/bin/env bash
# Idle connections: what 10,000 of them cost a server.
#  * user-space memory per idle connection: RSS growth of the server process
#    / connections, after opening IDLE connections that send nothing;
#  * throughput with them held vs. without (wrk -t1 -c100 keep-alive, 6 KB),
#    and wrk's (closed-loop) p99 latency in both cases.
# One server at a time, pinned to CPU $SERVER_CPU; wrk and the idle holder on
# CPU $CLIENT_CPU. Run under the bench lock:
#
#   flock /tmp/evd-bench.lock crates/evdispatch-http/bench/idle.sh
#
# Environment: IDLE (default 10000), DURATION (default 6), RUNS (default 3),
# SERVERS (default "epoll uring-completion threads nginx"; any evdispatch
# --mechanism value, or nginx / h2o / lighttpd).
set -euo pipefail

IDLE=${IDLE:-10000}
DURATION=${DURATION:-6}
RUNS=${RUNS:-3}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
SERVERS=${SERVERS:-epoll uring-completion threads nginx}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
BIN=${BIN:-$REPO/target/release/evdispatch-serve}
[ -x "$BIN" ] || (cd "$REPO" && cargo build --release -p evdispatch-http --bin evdispatch-serve >&2)

TIMEOUT_S=300
EVD_ARGS="--threads $((IDLE + 200))"
# shellcheck source=common.sh
. "$HERE/common.sh"
make_work evd-idle
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT
PAGE=$(getconf PAGESIZE)
rss_bytes() { awk -v p="$PAGE" '{print $24*p}' "/proc/$1/stat"; }

# Holds N idle connections until its stdin closes; prints "ready N" first.
HOLDER='
import socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
socks = []
for i in range(n):
    s = socket.socket(); s.setblocking(True)
    s.connect(("127.0.0.1", port)); socks.append(s)
print("ready", len(socks), flush=True)
sys.stdin.read()
'

wrk_run() {
  taskset -c "$CLIENT_CPU" wrk -t1 -c100 -d"${DURATION}s" --latency "http://127.0.0.1:$1/f6k.html" 2>&1 |
    awk '/Requests\/sec/{r=$2} $1=="99%"{p=$2} END{print r, p}'
}

echo "# $(date -u +%FT%TZ) idle=$IDLE duration=${DURATION}s runs=$RUNS"
for name in $SERVERS; do
  for run in $(seq "$RUNS"); do
    port=$(free_port)
    start_server "$name" "$port" || continue
    taskset -c "$CLIENT_CPU" wrk -t1 -c100 -d1s "http://127.0.0.1:$port/f6k.html" >/dev/null 2>&1 || true
    read -r base_rps base_p99 <<<"$(wrk_run "$port")"
    sleep 0.5
    rss0=$(rss_bytes "$SPID")
    coproc HOLD { taskset -c "$CLIENT_CPU" python3 -c "$HOLDER" "$port" "$IDLE"; }
    if ! read -r _ held <&"${HOLD[0]}"; then
      echo "$name: could not hold $IDLE idle connections (refused or reset)" >&2
      stop_server; continue
    fi
    sleep 1
    rss1=$(rss_bytes "$SPID")
    read -r idle_rps idle_p99 <<<"$(wrk_run "$port")"
    exec {HOLD[1]}>&-
    wait "$HOLD_PID" 2>/dev/null || true
    stop_server
    awk -v n="$name" -v h="$held" -v a="$rss0" -v b="$rss1" -v r0="$base_rps" -v r1="$idle_rps" -v p0="$base_p99" -v p1="$idle_p99" \
      'BEGIN{printf "%-18s idle=%-6d %7.0f B/idle-conn  req/s %8.0f -> %8.0f (x%.3f)  p99 %s -> %s\n", n, h, (b-a)/h, r0, r1, r1/r0, p0, p1}'
  done
done
