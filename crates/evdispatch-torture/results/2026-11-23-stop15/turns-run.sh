#!/bin/bash
# attack window; server stats taken while the slow clients still hold their connections
set -u
B=/tmp/evd-bin/evdispatch; N=${2:-3}; MS=$1
PORT=18131
DIR=$(mktemp -d /tmp/evd-turns-XXXXXX)
head -c 6144 /dev/zero | tr '\0' 'x' > "$DIR/six.txt"
URL=http://127.0.0.1:$PORT/six.txt
for i in $(seq 1 $N); do for M in $MS; do
  "$B" serve --root "$DIR" --listen 127.0.0.1:$PORT --mechanism "$M" --cpu 0 \
    --header-timeout 5s --stats-json "$DIR/stats.json" >/dev/null 2>&1 &
  S=$!
  sleep 0.4
  "$B" load "$URL" --background --slow 5000 --slow-bytes 1 --slow-interval 1s \
    --slow-ramp 5s --duration 40 --cpu 1 --json >/dev/null 2>&1 &
  L=$!
  sleep 0.5
  "$B" load "$URL" --persistent 32 --rate 1000 --warmup 6 --duration 15 --cpu 1 \
    --json > "$DIR/normal.json" 2>/dev/null
  kill $S; wait $S 2>/dev/null
  kill $L; wait $L 2>/dev/null
  cp $DIR/stats.json /tmp/turns-$M-$i.json
  python3 - $DIR $M <<'PY'
import json,sys
d=sys.argv[1]
lat=json.load(open(d+"/normal.json"))["latency_us"]
s=json.load(open(d+"/stats.json")); t=s["turns"]; p=s["poller"]
print("%-12s p99 %5d p999 %6d turns %6d >=256 %4d >=1ms %3d buckets16us+ %s wait_sys %d events %d long %s" % (sys.argv[2], lat["p99"], lat["p999"], t["count"], t["at_least_256us"], t["at_least_1ms"], t["log2_us_buckets"][4:14], p["wait_syscalls"], p["events"], json.dumps(t["long_256us"]["sum"])))
PY
  sleep 2
done; done
rm -rf $DIR
