#!/bin/bash
# A/B of two server binaries under the same slowloris attack: the normal
# clients' p99 (32 persistent, 1,000 req/s, 15-s window after a 6-s warm-up,
# on CPU 1) while 5,000 byte-a-second clients (header timeout 5 s, arriving
# over 5 s, SCHED_IDLE on CPU 1) attack the server (CPU 0); the binaries
# alternate, ABBA, N pairs, each on a fresh server. Prints per run the p99,
# p999, the server's turn histogram from 32 µs up (see `turns` in the
# serve stats) and the largest share of a CPU the hypervisor took (steal,
# from /proc/stat at the start and end of the measured window; windows above
# 0.5% read about three times higher in the torture record of 2026-11-23,
# results/2026-11-23-torture-stop15/README.md). Run it under the benchmark lock:
#   flock /tmp/evd-bench.lock scripts/slowloris-ab.sh BIN_A BIN_B [PAIRS] [MECHANISM]
# and summarise the pairs with `python3 scripts/ab-pairs.py OUTPUT`.
# Options, from the environment:
#   M_B=MECHANISM      side B runs this mechanism (default: MECHANISM, as A);
#                      with BIN_A = BIN_B, an A/B of two mechanisms
#   SLOW=N             slow clients (default 5000; 0: no attack)
#   SLOW_INTERVAL=D    a slow client's byte every D (default 1s; 20s: the
#                      connections held, barely any events)
#   HEADER_TIMEOUT=D   the server's --header-timeout (default 5s; 120s: no
#                      reconnections within the window)
#   CPU_SHARES=1       also print each CPU's user, system, idle, irq, softirq
#                      and steal shares of the window
#   PORT=P             the server's port (default 18131)
# Needs python3.
set -u
case "${1:-}" in
  -h|--help|"") sed -n '2,/^# Needs python3/s/^# \{0,1\}//p' "$0"; [ -n "${1:-}" ]; exit $? ;;
esac
A=$1
B=$2
N=${3:-4}
M=${4:-epoll}
M_B=${M_B:-$M}
SLOW=${SLOW:-5000}
SLOW_INTERVAL=${SLOW_INTERVAL:-1s}
HEADER_TIMEOUT=${HEADER_TIMEOUT:-5s}
CPU_SHARES=${CPU_SHARES:-0}
PORT=${PORT:-18131}
DIR=$(mktemp -d /tmp/evd-slowab-XXXXXX)
head -c 6144 /dev/zero | tr '\0' 'x' > "$DIR/six.txt"
trap 'kill ${S:-} ${L:-} 2>/dev/null; rm -rf "$DIR"' EXIT
URL=http://127.0.0.1:$PORT/six.txt
one() { # BINARY LABEL MECHANISM
  "$1" serve --root "$DIR" --listen 127.0.0.1:$PORT --mechanism "$3" --cpu 0 \
    --header-timeout "$HEADER_TIMEOUT" --stats-json "$DIR/stats.json" >/dev/null 2>&1 &
  S=$!
  sleep 0.4
  L=
  if [ "$SLOW" != 0 ]; then
    "$1" load "$URL" --background --slow "$SLOW" --slow-bytes 1 --slow-interval "$SLOW_INTERVAL" \
      --slow-ramp 5s --duration 22 --cpu 1 --json >/dev/null 2>&1 &
    L=$!
  fi
  sleep 0.5
  (sleep 6 && grep '^cpu[0-9]' /proc/stat > "$DIR/stat0") &
  "$1" load "$URL" --persistent 32 --rate 1000 --warmup 6 --duration 15 --cpu 1 \
    --json > "$DIR/normal.json" 2>/dev/null
  grep '^cpu[0-9]' /proc/stat > "$DIR/stat1"
  [ -n "$L" ] && wait $L
  kill $S
  wait $S 2>/dev/null
  S= L=
  python3 - "$2" "$DIR" "$CPU_SHARES" <<'PY'
import json, sys
d = sys.argv[2]
lat = json.load(open(d + "/normal.json"))["latency_us"]
t = json.load(open(d + "/stats.json")).get("turns", {})
steal = 0.0
for a, b in zip(open(d + "/stat0"), open(d + "/stat1")):
    # user nice system idle iowait irq softirq steal: the kinds that add up
    # to a CPU's time (guest time is inside user), as CpuTimes::total and
    # evdispatch_host::steal_pct_max count it for the torture scenarios.
    dx = [int(y) - int(x) for x, y in zip(a.split()[1:9], b.split()[1:9])]
    steal = max(steal, 100.0 * dx[7] / (sum(dx) or 1))
print("%s p99 %5d us  p999 %6d  turns >=256us %s  >=1ms %s  steal %.1f%%  longest %s" % (
    sys.argv[1], lat["p99"], lat["p999"], t.get("at_least_256us"),
    t.get("at_least_1ms"), steal, json.dumps(t.get("longest"))))
print("    turns by length from [32, 64) us:", t.get("log2_us_buckets", [])[6:14])
if sys.argv[3] == "1":
    for a, b in zip(open(d + "/stat0"), open(d + "/stat1")):
        dx = [int(y) - int(x) for x, y in zip(a.split()[1:9], b.split()[1:9])]
        tot = sum(dx) or 1
        print("    %s usr %3d%% sys %3d%% idle %3d%% irq %2d%% softirq %3d%% steal %3d%%" % (
            a.split()[0], 100 * dx[0] / tot, 100 * dx[2] / tot, 100 * (dx[3] + dx[4]) / tot,
            100 * dx[5] / tot, 100 * dx[6] / tot, 100 * dx[7] / tot))
PY
  sleep 2
}
for i in $(seq 1 "$N"); do
  if [ $((i % 2)) = 1 ]; then one "$A" A "$M"; one "$B" B "$M_B"; else one "$B" B "$M_B"; one "$A" A "$M"; fi
done
