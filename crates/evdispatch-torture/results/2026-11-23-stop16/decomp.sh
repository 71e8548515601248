#!/bin/bash
# Which part of the slowloris attack costs the normal clients: one window per config, epoll unless M set.
set -u
B=/tmp/evd-bin/evdispatch; M=${M:-epoll}; N=${1:-3}
PORT=18131
DIR=$(mktemp -d /tmp/evd-decomp-XXXXXX)
head -c 6144 /dev/zero | tr '\0' 'x' > "$DIR/six.txt"
URL=http://127.0.0.1:$PORT/six.txt
one() { # LABEL SLOW INTERVAL HEADER_TIMEOUT
  "$B" serve --root "$DIR" --listen 127.0.0.1:$PORT --mechanism "$M" --cpu 0 \
    --header-timeout $4 --stats-json "$DIR/stats.json" >/dev/null 2>&1 &
  S=$!
  sleep 0.4
  L=
  if [ "$2" != 0 ]; then
  "$B" load "$URL" --background --slow $2 --slow-bytes 1 --slow-interval $3 \
    --slow-ramp 5s --duration 22 --cpu 1 --json >/dev/null 2>&1 &
  L=$!
  fi
  sleep 0.5
  (sleep 6 && grep '^cpu[0-9]' /proc/stat > "$DIR/stat0") &
  "$B" load "$URL" --persistent 32 --rate 1000 --warmup 6 --duration 15 --cpu 1 \
    --json > "$DIR/normal.json" 2>/dev/null
  grep '^cpu[0-9]' /proc/stat > "$DIR/stat1"
  [ -n "$L" ] && wait $L
  kill $S; wait $S 2>/dev/null
  python3 - "$1" "$DIR" <<'PY'
import json, sys
d = sys.argv[2]
lat = json.load(open(d + "/normal.json"))["latency_us"]
s = json.load(open(d + "/stats.json"))
t = s.get("turns", {})
steal = 0.0
for a, b in zip(open(d + "/stat0"), open(d + "/stat1")):
    dx = [int(y) - int(x) for x, y in zip(a.split()[1:], b.split()[1:])]
    steal = max(steal, 100.0 * dx[7] / (sum(dx) or 1))
print("%-10s p50 %4d p90 %4d p99 %5d p999 %6d turns %7s >=256 %4s steal %.1f%%" % (
    sys.argv[1], lat["p50"], lat["p90"], lat["p99"], lat["p999"], t.get("count"), t.get("at_least_256us"), steal), flush=True)
PY
  sleep 2
}
for i in $(seq 1 "$N"); do
  one none 0 1s 5s
  one attack 5000 1s 5s
  one nochurn 5000 1s 120s
  one held 5000 20s 120s
done
rm -rf "$DIR"
