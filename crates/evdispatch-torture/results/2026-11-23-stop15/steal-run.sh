#!/bin/bash
# one slowloris window (as slowloris-ab.sh) plus /proc/stat sampling: steal, softirq, irq per cpu
set -u
B=${1:-/tmp/evd-bin/evdispatch}; M=${2:-epoll}; SLOW=${3:-5000}; N=${4:-4}
PORT=18131
DIR=$(mktemp -d /tmp/evd-steal-XXXXXX)
head -c 6144 /dev/zero | tr '\0' 'x' > "$DIR/six.txt"
URL=http://127.0.0.1:$PORT/six.txt
for i in $(seq 1 $N); do
  "$B" serve --root "$DIR" --listen 127.0.0.1:$PORT --mechanism "$M" --cpu 0 \
    --header-timeout 5s --stats-json "$DIR/stats.json" >/dev/null 2>&1 &
  S=$!
  sleep 0.4
  if [ "$SLOW" != 0 ]; then
  "$B" load "$URL" --background --slow $SLOW --slow-bytes 1 --slow-interval 1s \
    --slow-ramp 5s --duration 22 --cpu 1 --json >/dev/null 2>&1 &
  L=$!
  fi
  sleep 0.5
  sleep 6 && grep '^cpu[01] ' /proc/stat > $DIR/s0 &
  "$B" load "$URL" --persistent 32 --rate 1000 --warmup 6 --duration 15 --cpu 1 \
    --json > "$DIR/normal.json" 2>/dev/null
  grep '^cpu[01] ' /proc/stat > $DIR/s1
  [ "$SLOW" != 0 ] && wait $L
  kill $S; wait $S 2>/dev/null
  cp $DIR/stats.json /tmp/last-stats.json; python3 - $DIR <<'PY'
import json,sys
d=sys.argv[1]
lat=json.load(open(d+"/normal.json"))["latency_us"]
t=json.load(open(d+"/stats.json")).get("turns",{})
a=[l.split() for l in open(d+"/s0")]; b=[l.split() for l in open(d+"/s1")]
out=[]
for x,y in zip(a,b):
    dx=[int(j)-int(i) for i,j in zip(x[1:],y[1:])]
    tot=sum(dx) or 1
    # user nice system idle iowait irq softirq steal
    out.append("%s usr%3d sys%3d idle%3d irq%2d sirq%3d steal%3d" % (x[0], 100*dx[0]/tot, 100*dx[2]/tot, 100*(dx[3]+dx[4])/tot, 100*dx[5]/tot, 100*dx[6]/tot, 100*dx[7]/tot))
print("p99 %5d p999 %6d turns>=256 %5s >=1ms %4s | %s" % (lat["p99"], lat["p999"], t.get("at_least_256us"), t.get("at_least_1ms"), " | ".join(out)))
PY
  sleep 2
done
rm -rf $DIR
