#!/bin/bash
# A hand check of the torture suite's slowloris figure with a control: the normal
# clients (32 persistent, 1,000 req/s, on CPU 1) always talk to the measured
# server (CPU 0); 5,000 byte-a-second clients (header timeout 5 s, arriving
# over 5 s, at SCHED_IDLE on CPU 1) attack either
#   elsewhere  a second server (our epoll on CPU 1): what the attack traffic
#              costs the machine and the load CPU, the measured server idle
#   attack     the measured server itself
# each followed by a 10-s baseline without slow clients. Prints the normal
# clients' p99/p999/max per phase. Run it under the benchmark lock:
#   flock /tmp/evd-bench.lock scripts/slowloris-control.sh [MECHANISM] [ROUNDS]
# Needs a release build (cargo build --release) and python3.
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
set -u
B=${EVDISPATCH:-$(dirname "$0")/../target/release/evdispatch}
M=${1:-epoll}
R=${2:-2}
PORT=${PORT:-18092}
SINK_PORT=$((PORT + 1))
DIR=$(mktemp -d /tmp/evd-slowctl-XXXXXX)
head -c 6144 /dev/zero | tr '\0' 'x' > "$DIR/six.txt"
"$B" serve --root "$DIR" --listen 127.0.0.1:$PORT --mechanism "$M" --cpu 0 --header-timeout 5s >/dev/null 2>&1 &
S=$!
"$B" serve --root "$DIR" --listen 127.0.0.1:$SINK_PORT --mechanism epoll --cpu 1 --header-timeout 5s >/dev/null 2>&1 &
SINK=$!
trap 'kill $S $SINK 2>/dev/null; rm -rf "$DIR"' EXIT
sleep 0.5
URL=http://127.0.0.1:$PORT/six.txt
show() {
  python3 -c "import json,sys;d=json.load(open(sys.argv[1]));l=d['latency_us'];print('%-11s p99 %6d us  p999 %6d  max %6d' % (sys.argv[2], l['p99'], l['p999'], l['max']))" "$DIR/$1.json" "$1"
}
base() {
  "$B" load "$URL" --persistent 32 --rate 1000 --duration 10 --cpu 1 --json > "$DIR/$1.json" && show "$1"
}
attack() { # NAME PORT
  "$B" load "http://127.0.0.1:$2/six.txt" --background --slow 5000 --slow-bytes 1 \
    --slow-interval 1s --slow-ramp 5s --duration 27 --cpu 1 --json >/dev/null 2>&1 &
  local L=$!
  "$B" load "$URL" --persistent 32 --rate 1000 --warmup 6 --duration 20 --cpu 1 --json > "$DIR/$1.json" && show "$1"
  wait $L
  sleep 3
}
base base0
for r in $(seq 1 "$R"); do
  attack "elsewhere$r" $SINK_PORT
  base "base-e$r"
  attack "attack$r" $PORT
  base "base-a$r"
done
