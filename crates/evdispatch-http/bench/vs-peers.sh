#!/usr/bin/env bash
# Server CPU per request: evdispatch serve (several models) against nginx,
# lighttpd and h2o, one worker each pinned to CPU $SERVER_CPU, wrk -t1 pinned
# to CPU $CLIENT_CPU, a 6 KB file; keep-alive and Connection: close.
#
# Until `evdispatch bench server` exists (it will sit on the harness crate),
# this script is how the figures of issue 4 are measured:
#
#   flock /tmp/evd-bench.lock crates/evdispatch-http/bench/vs-peers.sh
#
# Environment: DURATION (s, default 8), CONNS (default 100), RUNS (default 3),
# MODELS (default "epoll uring-completion" plus "uring" when the library has
# it), PEERS (default "nginx lighttpd h2o"), BIN (the evdispatch-serve binary).
# Prints one line per run and a median summary; server CPU comes from
# /proc/PID/stat (utime + stime) over the measured window only.
set -euo pipefail

DURATION=${DURATION:-8}
CONNS=${CONNS:-100}
RUNS=${RUNS:-3}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
BIN=${BIN:-$REPO/target/release/evdispatch-serve}
[ -x "$BIN" ] || (cd "$REPO" && cargo build --release -p evdispatch-http --bin evdispatch-serve >&2)
if [ -z "${MODELS:-}" ]; then
  MODELS="epoll uring-completion"
  # The library's io_uring readiness mechanism, once it is in the table.
  probe=$("$BIN" --mechanism uring --root /nonexistent 2>&1 || true)
  case $probe in *"unknown mechanism"*) ;; *) MODELS="epoll uring uring-completion";; esac
fi
PEERS=${PEERS-nginx lighttpd h2o}
HZ=$(getconf CLK_TCK)

WORK=$(mktemp -d /tmp/evd-vs-peers.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT
chmod 755 "$WORK"; mkdir -p "$WORK/www"
head -c 6144 /dev/zero | tr '\0' 'x' > "$WORK/www/f6k.html"

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }

# start_server NAME PORT -> sets SPID (the process whose CPU is measured)
start_server() {
  local name=$1 port=$2
  case $name in
    nginx)
      mkdir -p "$WORK/nginx"
      cat > "$WORK/nginx/nginx.conf" <<EOF
worker_processes 1;
master_process off;
daemon off;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log crit;
events { worker_connections 20000; use epoll; multi_accept on; }
http {
  access_log off;
  sendfile on; tcp_nopush on; tcp_nodelay on;
  keepalive_requests 100000000; keepalive_timeout 65;
  open_file_cache max=1000 inactive=60s;
  default_type text/html;
  client_body_temp_path $WORK/nginx; proxy_temp_path $WORK/nginx; fastcgi_temp_path $WORK/nginx;
  uwsgi_temp_path $WORK/nginx; scgi_temp_path $WORK/nginx;
  server { listen 127.0.0.1:$port backlog=4096; root $WORK/www; }
}
EOF
      taskset -c "$SERVER_CPU" nginx -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx" 2>/dev/null &
      SPID=$!;;
    lighttpd)
      cat > "$WORK/lighttpd.conf" <<EOF
server.document-root = "$WORK/www"
server.bind = "127.0.0.1"
server.port = $port
server.max-keep-alive-requests = 100000000
server.max-keep-alive-idle = 65
server.max-connections = 16000
server.max-fds = 20000
server.errorlog = "$WORK/lighttpd-error.log"
mimetype.assign = (".html" => "text/html")
EOF
      taskset -c "$SERVER_CPU" lighttpd -D -f "$WORK/lighttpd.conf" 2>/dev/null &
      SPID=$!;;
    h2o)
      cat > "$WORK/h2o.conf" <<EOF
listen:
  host: 127.0.0.1
  port: $port
num-threads: 1
max-connections: 20000
http1-request-timeout: 65
hosts:
  default:
    paths:
      /:
        file.dir: $WORK/www
EOF
      taskset -c "$SERVER_CPU" h2o -c "$WORK/h2o.conf" >/dev/null 2>&1 &
      SPID=$!;;
    *)
      taskset -c "$SERVER_CPU" "$BIN" --root "$WORK/www" --listen "127.0.0.1:$port" \
        --mechanism "$name" --cpu "$SERVER_CPU" > "$WORK/serve.out" 2>/dev/null &
      SPID=$!;;
  esac
  for _ in $(seq 100); do
    if curl -s -o /dev/null "http://127.0.0.1:$port/f6k.html"; then return 0; fi
    sleep 0.05
  done
  echo "$name did not start" >&2; return 1
}

stop_server() { kill "$SPID" 2>/dev/null || true; wait "$SPID" 2>/dev/null || true; }

# measure NAME MODE -> prints "name mode req/s cpu_us_per_req p99"
measure() {
  local name=$1 mode=$2 port hdr=()
  port=$(free_port)
  start_server "$name" "$port" || return 0
  [ "$mode" = close ] && hdr=(-H "Connection: close")
  taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d1s "${hdr[@]}" "http://127.0.0.1:$port/f6k.html" >/dev/null 2>&1 || true
  local t0 t1 out
  t0=$(cpu_ticks "$SPID")
  out=$(taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency "${hdr[@]}" "http://127.0.0.1:$port/f6k.html" 2>&1)
  t1=$(cpu_ticks "$SPID")
  stop_server
  local reqs rps p99 errs
  reqs=$(echo "$out" | awk '/requests in/{print $1}')
  rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
  p99=$(echo "$out" | awk '$1=="99%"{print $2}')
  errs=$(echo "$out" | awk '/Socket errors|Non-2xx/{printf "%s ", $0}')
  [ -n "$errs" ] && echo "$name $mode: $errs" >&2
  awk -v n="$name" -v m="$mode" -v r="$reqs" -v s="$rps" -v c=$((t1 - t0)) -v hz="$HZ" -v p="$p99" \
    'BEGIN{printf "%-18s %-10s %10.0f req/s  %6.2f us/req  p99 %s\n", n, m, s, c/hz*1e6/r, p}'
}

echo "# $(date -u +%FT%TZ) duration=${DURATION}s conns=$CONNS runs=$RUNS server_cpu=$SERVER_CPU client_cpu=$CLIENT_CPU"
RESULTS=$WORK/results.txt
for run in $(seq "$RUNS"); do
  for mode in keepalive close; do
    for s in $MODELS $PEERS; do
      measure "$s" "$mode" | tee -a "$RESULTS"
    done
  done
done
echo "# medians over $RUNS runs"
python3 - "$RESULTS" <<'PY'
import sys, statistics
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    rows.setdefault((f[1], f[0]), []).append((float(f[2]), float(f[4])))
for (mode, name), v in sorted(rows.items()):
    rps = [x[0] for x in v]; us = [x[1] for x in v]
    print(f"{mode:<10} {name:<18} {statistics.median(rps):>9.0f} req/s  {statistics.median(us):6.2f} us/req"
          f"  (us/req {min(us):.2f}-{max(us):.2f}, n={len(v)})")
PY
