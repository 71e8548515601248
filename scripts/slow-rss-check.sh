#!/bin/bash
# Resident memory per slow client: one server (CPU 0, header timeout 60 s)
# holding N clients that send their request a byte a second (load on CPU 1);
# VmRSS before and after 5 s of them, divided by N.
#   flock /tmp/evd-bench.lock scripts/slow-rss-check.sh [MECHANISM] [N]
# Needs a release build (cargo build --release).
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
set -u
B=${EVDISPATCH:-$(dirname "$0")/../target/release/evdispatch}
M=${1:-epoll}
N=${2:-5000}
PORT=${PORT:-18111}
DIR=$(mktemp -d /tmp/evd-slowrss-XXXXXX)
echo hello > "$DIR/index.html"
"$B" serve --root "$DIR" --listen 127.0.0.1:$PORT --mechanism "$M" --cpu 0 \
  --header-timeout 60s >/dev/null 2>&1 &
S=$!
trap 'kill $S ${L:-} 2>/dev/null; rm -rf "$DIR"' EXIT
sleep 0.5
rss() { awk '/VmRSS/{print $2}' /proc/$S/status; }
r0=$(rss)
"$B" load "http://127.0.0.1:$PORT/index.html" --slow "$N" --slow-bytes 1 \
  --slow-interval 1s --duration 6 --cpu 1 >/dev/null 2>&1 &
L=$!
sleep 5
r1=$(rss)
fds=$(ls /proc/$S/fd | wc -l)
wait $L
L=
echo "$M: VmRSS $r0 KiB before, $r1 KiB with $fds descriptors open: $(( (r1 - r0) * 1024 / N )) B per slow client"
