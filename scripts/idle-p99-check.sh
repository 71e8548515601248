#!/bin/bash
# A hand check of the idle p99 figure (p99 with 10,000 idle connections held
# ÷ without): one server on CPU 0, open-loop
# p99 at 3000/s over 50 connections for 10 s (the load on CPU 1), in four
# phases on the same server process:
#   none       no idle connection anywhere
#   elsewhere  10,000 idle connections held by a second server (our epoll,
#              on CPU 1), none by the measured one: what the machine adds
#   held       the 10,000 held by the measured server
#   none-after none again
# with `perf stat` of the measured server in each phase. The server is one
# of our mechanisms or `nginx` (one worker, same CPU). Run it under the
# benchmark lock:
#   flock /tmp/evd-bench.lock scripts/idle-p99-check.sh [MECHANISM|nginx]
# Needs: a release build (cargo build --release), perf, python3 (and nginx
# for `nginx`).
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
set -u
B=${EVDISPATCH:-$(dirname "$0")/../target/release/evdispatch}
M=${1:-epoll}
PORT=${PORT:-18097}
SINK_PORT=$((PORT + 1))
DIR=$(mktemp -d /tmp/evd-idlep99-XXXXXX)
head -c 6144 /dev/zero | tr '\0' 'x' > "$DIR/index.html"
if [ "$M" = nginx ]; then
  cat > "$DIR/nginx.conf" <<EOF
worker_processes 1;
worker_cpu_affinity 01;
worker_rlimit_nofile 20000;
daemon off;
master_process off;
error_log $DIR/nginx-error.log;
pid $DIR/nginx.pid;
events { worker_connections 20000; }
http {
  access_log off;
  keepalive_requests 1000000;
  keepalive_timeout 600s;
  client_header_timeout 600s;
  server { listen 127.0.0.1:$PORT; root $DIR; }
}
EOF
  taskset -c 0 nginx -c "$DIR/nginx.conf" >/dev/null 2>&1 &
else
  taskset -c 0 "$B" serve --root "$DIR" --listen 127.0.0.1:$PORT --mechanism "$M" --cpu 0 \
    --idle-timeout 600s --header-timeout 600s >/dev/null 2>&1 &
fi
S=$!
taskset -c 1 "$B" serve --root "$DIR" --listen 127.0.0.1:$SINK_PORT --mechanism epoll --cpu 1 \
  --idle-timeout 600s --header-timeout 600s >/dev/null 2>&1 &
SINK=$!
trap 'kill $S $SINK ${H:-} 2>/dev/null; rm -rf "$DIR"' EXIT
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
# Hold 10,000 idle connections at PID $1's port $2 (background, SCHED_IDLE).
hold() {
  "$B" load "http://127.0.0.1:$2/index.html" --idle 10000 --duration 3600 --timeout 60 --cpu 1 --background >/dev/null 2>&1 &
  H=$!
  for _ in $(seq 1 300); do [ "$(ls /proc/$1/fd | wc -l)" -ge 10000 ] && break; sleep 0.2; done
  echo "descriptors of $1: $(ls /proc/$1/fd | wc -l)"
  sleep 1
}
release() {
  kill $H; wait $H 2>/dev/null; H=; sleep 2
}
measure none
hold $SINK $SINK_PORT; measure elsewhere; release
hold $S $PORT; measure held; release
measure none-after
