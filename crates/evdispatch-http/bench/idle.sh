#!/usr/bin/env bash
# Idle connections: what 10,000 of them cost a server.
#  * user-space memory per idle connection: RSS growth of the server process
#    / connections, after opening IDLE connections that send nothing;
#  * throughput with them held vs. without (wrk -t1 -c100 keep-alive, 6 KB),
#    and wrk's (closed-loop) p99 latency in both cases.
# One server at a time, pinned to CPU $SERVER_CPU; wrk and the idle holder on
# CPU $CLIENT_CPU. Run under the bench lock:
#
#   flock /tmp/evd-bench.lock crates/evdispatch-http/bench/idle.sh
#
# Environment: IDLE (default 10000), DURATION (default 6), RUNS (default 3),
# SERVERS (default "epoll uring-completion threads nginx"; any evdispatch
# --mechanism value, or nginx / h2o / lighttpd).
set -euo pipefail

IDLE=${IDLE:-10000}
DURATION=${DURATION:-6}
RUNS=${RUNS:-3}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
SERVERS=${SERVERS:-epoll uring-completion threads nginx}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
BIN=${BIN:-$REPO/target/release/evdispatch-serve}
[ -x "$BIN" ] || (cd "$REPO" && cargo build --release -p evdispatch-http --bin evdispatch-serve >&2)

WORK=$(mktemp -d /tmp/evd-idle.XXXXXX)
chmod 755 "$WORK"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT
mkdir -p "$WORK/www"
head -c 6144 /dev/zero | tr '\0' 'x' > "$WORK/www/f6k.html"
PAGE=$(getconf PAGESIZE)

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
rss_bytes() { awk -v p="$PAGE" '{print $24*p}' "/proc/$1/stat"; }

start_server() {
  local name=$1 port=$2
  case $name in
    nginx)
      mkdir -p "$WORK/nginx"
      cat > "$WORK/nginx/nginx.conf" <<EOF
worker_processes 1;
master_process off;
daemon off;
worker_rlimit_nofile 20000;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log crit;
events { worker_connections 19000; use epoll; multi_accept on; }
http {
  access_log off; sendfile on; tcp_nodelay on;
  keepalive_requests 100000000; keepalive_timeout 300; client_header_timeout 300;
  open_file_cache max=1000 inactive=60s;
  client_body_temp_path $WORK/nginx; proxy_temp_path $WORK/nginx; fastcgi_temp_path $WORK/nginx;
  uwsgi_temp_path $WORK/nginx; scgi_temp_path $WORK/nginx;
  server { listen 127.0.0.1:$port backlog=4096; root $WORK/www; }
}
EOF
      taskset -c "$SERVER_CPU" nginx -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx" 2>/dev/null &
      SPID=$!;;
    h2o)
      printf 'listen:\n  host: 127.0.0.1\n  port: %s\nnum-threads: 1\nmax-connections: 19000\nhttp1-request-timeout: 300\nhosts:\n  default:\n    paths:\n      /:\n        file.dir: %s/www\n' \
        "$port" "$WORK" > "$WORK/h2o.conf"
      taskset -c "$SERVER_CPU" h2o -c "$WORK/h2o.conf" >/dev/null 2>&1 &
      SPID=$!;;
    lighttpd)
      printf 'server.document-root = "%s/www"\nserver.bind = "127.0.0.1"\nserver.port = %s\nserver.max-connections = 16000\nserver.max-fds = 20000\nserver.max-read-idle = 300\nserver.max-keep-alive-idle = 300\n' \
        "$WORK" "$port" > "$WORK/lighttpd.conf"
      taskset -c "$SERVER_CPU" lighttpd -D -f "$WORK/lighttpd.conf" 2>/dev/null &
      SPID=$!;;
    *)
      taskset -c "$SERVER_CPU" "$BIN" --root "$WORK/www" --listen "127.0.0.1:$port" --mechanism "$name" \
        --cpu "$SERVER_CPU" --header-timeout 300s --idle-timeout 300s --threads $((IDLE + 200)) \
        > /dev/null 2>&1 &
      SPID=$!;;
  esac
  for _ in $(seq 200); do
    if curl -s -o /dev/null "http://127.0.0.1:$port/f6k.html"; then return 0; fi
    sleep 0.05
  done
  echo "$name did not start" >&2; return 1
}

# Holds N idle connections until its stdin closes; prints "ready N" first.
HOLDER='
import socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
socks = []
for i in range(n):
    s = socket.socket(); s.setblocking(True)
    s.connect(("127.0.0.1", port)); socks.append(s)
print("ready", len(socks), flush=True)
sys.stdin.read()
'

wrk_run() {
  taskset -c "$CLIENT_CPU" wrk -t1 -c100 -d"${DURATION}s" --latency "http://127.0.0.1:$1/f6k.html" 2>&1 |
    awk '/Requests\/sec/{r=$2} $1=="99%"{p=$2} END{print r, p}'
}

echo "# $(date -u +%FT%TZ) idle=$IDLE duration=${DURATION}s runs=$RUNS"
for name in $SERVERS; do
  for run in $(seq "$RUNS"); do
    port=$(free_port)
    start_server "$name" "$port" || continue
    taskset -c "$CLIENT_CPU" wrk -t1 -c100 -d1s "http://127.0.0.1:$port/f6k.html" >/dev/null 2>&1 || true
    read -r base_rps base_p99 <<<"$(wrk_run "$port")"
    sleep 0.5
    rss0=$(rss_bytes "$SPID")
    coproc HOLD { taskset -c "$CLIENT_CPU" python3 -c "$HOLDER" "$port" "$IDLE"; }
    read -r _ held <&"${HOLD[0]}"
    sleep 1
    rss1=$(rss_bytes "$SPID")
    read -r idle_rps idle_p99 <<<"$(wrk_run "$port")"
    exec {HOLD[1]}>&-
    wait "$HOLD_PID" 2>/dev/null || true
    kill "$SPID" 2>/dev/null || true; wait "$SPID" 2>/dev/null || true
    awk -v n="$name" -v h="$held" -v a="$rss0" -v b="$rss1" -v r0="$base_rps" -v r1="$idle_rps" -v p0="$base_p99" -v p1="$idle_p99" \
      'BEGIN{printf "%-18s idle=%-6d %7.0f B/idle-conn  req/s %8.0f -> %8.0f (x%.3f)  p99 %s -> %s\n", n, h, (b-a)/h, r0, r1, r1/r0, p0, p1}'
  done
done
