#!/bin/bash
# A hand check of issue 4's idle p99 figure: one server, open-loop p99 at
# 3000/s over 50 connections for 10 s, with no idle connection, with 10,000
# held (holder paused, then running), and with none again, plus `perf stat`
# of the server in each phase. Run under the benchmark lock:
#   flock /tmp/evd-bench.lock scripts/idle-p99-check.sh [MECHANISM]
# Needs: a release build (cargo build --release), perf, python3.
set -u
B=${EVDISPATCH:-$(dirname "$0")/../target/release/evdispatch}
M=${1:-epoll}
PORT=${PORT:-18097}
DIR=$(mktemp -d /tmp/evd-idlep99-XXXXXX)
head -c 6144 /dev/zero | tr '\0' 'x' > "$DIR/index.html"
taskset -c 0 "$B" serve --root "$DIR" --listen 127.0.0.1:$PORT --mechanism "$M" --cpu 0 \
  --idle-timeout 600s --header-timeout 600s >/dev/null 2>&1 &
S=$!
trap 'kill $S ${H:-} 2>/dev/null; rm -rf "$DIR"' EXIT
sleep 0.5
URL=http://127.0.0.1:$PORT/index.html
measure() {
  perf stat -e task-clock,context-switches,page-faults -p $S -o "$DIR/perf-$1.txt" -- sleep 10 &
  local P=$!
  "$B" load "$URL" --persistent 50 --rate 3000 --duration 10 --warmup 0 --cpu 1 --json > "$DIR/load-$1.json" 2>/dev/null
  wait $P
  python3 -c "import json,sys;d=json.load(open(sys.argv[1]));l=d['latency_us'];print(sys.argv[2],'p50',l['p50'],'p99',l['p99'],'max',l['max'],'replies',d['replies'])" "$DIR/load-$1.json" "$1"
  grep -E "task-clock|context-switches|page-faults" "$DIR/perf-$1.txt" | awk '{print "   ",$1,$2}'
}
measure none-before
"$B" load "$URL" --idle 10000 --duration 3600 --timeout 60 --cpu 1 --background >/dev/null 2>&1 &
H=$!
for _ in $(seq 1 300); do [ "$(ls /proc/$S/fd | wc -l)" -ge 10000 ] && break; sleep 0.2; done
echo "server descriptors: $(ls /proc/$S/fd | wc -l)"
kill -STOP $H; measure held-holder-paused; kill -CONT $H
measure held
kill $H; wait $H 2>/dev/null; H=; sleep 2
measure none-after
