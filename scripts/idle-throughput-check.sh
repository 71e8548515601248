#!/bin/bash
# A hand check of the idle throughput figure (throughput with 10,000 idle
# connections held ÷ without): keep-alive saturation
# (wrk -t1 -c100, 8 s, on CPU 1) of one server on CPU 0 in three phases per
# round:
#   none       no idle connection anywhere
#   elsewhere  10,000 idle connections held by a second server (our epoll on
#              CPU 1): what the machine pays for them
#   held       the 10,000 held by the measured server
# Prints req/s and the server's CPU per request (utime+stime from
# /proc/PID/task/*/stat ÷ requests). Run it under the benchmark lock:
#   flock /tmp/evd-bench.lock scripts/idle-throughput-check.sh [MECHANISM] [ROUNDS]
# Needs a release build (cargo build --release), wrk and python3.
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
set -u
B=${EVDISPATCH:-$(dirname "$0")/../target/release/evdispatch}
M=${1:-epoll}
R=${2:-3}
PORT=${PORT:-18090}
SINK_PORT=$((PORT + 1))
DIR=$(mktemp -d /tmp/evd-idletput-XXXXXX)
head -c 6144 /dev/zero | tr '\0' 'x' > "$DIR/index.html"
"$B" serve --root "$DIR" --listen 127.0.0.1:$PORT --mechanism "$M" --cpu 0 \
  --idle-timeout 600s --header-timeout 600s >/dev/null 2>&1 &
S=$!
"$B" serve --root "$DIR" --listen 127.0.0.1:$SINK_PORT --mechanism epoll --cpu 1 \
  --idle-timeout 600s --header-timeout 600s >/dev/null 2>&1 &
SINK=$!
trap 'kill $S $SINK ${H:-} 2>/dev/null; rm -rf "$DIR"' EXIT
sleep 0.5
ticks() { cat /proc/$S/task/*/stat | awk '{t += $14 + $15} END {print t}'; }
hold() { # PORT: 10,000 idle connections, then give them time to connect
  "$B" load "http://127.0.0.1:$1/index.html" --idle 10000 --duration 3600 --timeout 60 \
    --cpu 1 --background >/dev/null 2>&1 &
  H=$!
  sleep 6
}
release() { kill $H; wait $H 2>/dev/null; H=; sleep 2; }
measure() { # PHASE ROUND
  local c0 c1
  c0=$(ticks)
  taskset -c 1 wrk -t1 -c100 -d8 "http://127.0.0.1:$PORT/index.html" > "$DIR/wrk.txt"
  c1=$(ticks)
  python3 - "$DIR/wrk.txt" "$1" "$2" "$c0" "$c1" "$(getconf CLK_TCK)" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
req = int(re.search(r"(\d+) requests in", text).group(1))
ticks = int(sys.argv[5]) - int(sys.argv[4])
print("%-9s round %s  req/s %9.0f  CPU/req %6.2f us" % (sys.argv[2], sys.argv[3], rps, ticks * 1e6 / int(sys.argv[6]) / req))
PY
}
for r in $(seq 1 "$R"); do
  measure none "$r"
  hold $SINK_PORT; measure elsewhere "$r"; release
  hold $PORT; measure held "$r"; release
done
