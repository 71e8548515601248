#!/bin/bash
# A/B of two server binaries under the same slowloris attack: the normal
# clients' p99 (32 persistent, 1,000 req/s, 15-s window after a 6-s warm-up,
# on CPU 1) while 5,000 byte-a-second clients (header timeout 5 s, arriving
# over 5 s, SCHED_IDLE on CPU 1) attack the server (CPU 0); the binaries
# alternate, ABBA, N pairs, each on a fresh server. Prints per run the p99,
# p999, the server's turn histogram from 32 µs up (see `turns` in the
# serve stats) and the largest share of a CPU the hypervisor took (steal,
# from /proc/stat at the start and end of the measured window; windows above
# 0.5% read about three times higher, see the torture results README, stop
# 15). Run it under the benchmark lock:
#   flock /tmp/evd-bench.lock scripts/slowloris-ab.sh BIN_A BIN_B [PAIRS] [MECHANISM]
# and summarise the pairs with `python3 scripts/ab-pairs.py OUTPUT`.
# Needs python3.
set -u
A=$1
B=$2
N=${3:-4}
M=${4:-epoll}
PORT=${PORT:-18131}
DIR=$(mktemp -d /tmp/evd-slowab-XXXXXX)
head -c 6144 /dev/zero | tr '\0' 'x' > "$DIR/six.txt"
trap 'kill ${S:-} ${L:-} 2>/dev/null; rm -rf "$DIR"' EXIT
URL=http://127.0.0.1:$PORT/six.txt
one() { # BINARY LABEL
  "$1" serve --root "$DIR" --listen 127.0.0.1:$PORT --mechanism "$M" --cpu 0 \
    --header-timeout 5s --stats-json "$DIR/stats.json" >/dev/null 2>&1 &
  S=$!
  sleep 0.4
  "$1" load "$URL" --background --slow 5000 --slow-bytes 1 --slow-interval 1s \
    --slow-ramp 5s --duration 22 --cpu 1 --json >/dev/null 2>&1 &
  L=$!
  sleep 0.5
  (sleep 6 && grep '^cpu[0-9]' /proc/stat > "$DIR/stat0") &
  "$1" load "$URL" --persistent 32 --rate 1000 --warmup 6 --duration 15 --cpu 1 \
    --json > "$DIR/normal.json" 2>/dev/null
  grep '^cpu[0-9]' /proc/stat > "$DIR/stat1"
  wait $L
  kill $S
  wait $S 2>/dev/null
  S= L=
  python3 - "$2" "$DIR" <<'PY'
import json, sys
d = sys.argv[2]
lat = json.load(open(d + "/normal.json"))["latency_us"]
t = json.load(open(d + "/stats.json")).get("turns", {})
steal = 0.0
for a, b in zip(open(d + "/stat0"), open(d + "/stat1")):
    # user nice system idle iowait irq softirq steal: the kinds that add up
    # to a CPU's time (guest time is inside user), as CpuTimes::total and
    # evdispatch_proc::steal_pct_max count it for the torture scenarios.
    dx = [int(y) - int(x) for x, y in zip(a.split()[1:9], b.split()[1:9])]
    steal = max(steal, 100.0 * dx[7] / (sum(dx) or 1))
print("%s p99 %5d us  p999 %6d  turns >=256us %s  >=1ms %s  steal %.1f%%  longest %s" % (
    sys.argv[1], lat["p99"], lat["p999"], t.get("at_least_256us"),
    t.get("at_least_1ms"), steal, json.dumps(t.get("longest"))))
print("    turns by length from [32, 64) us:", t.get("log2_us_buckets", [])[6:14])
PY
  sleep 2
}
for i in $(seq 1 "$N"); do
  if [ $((i % 2)) = 1 ]; then one "$A" A; one "$B" B; else one "$B" B; one "$A" A; fi
done
