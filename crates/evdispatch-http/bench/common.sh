# Sourced by the bench scripts: start one server (ours or a peer) pinned to
# $SERVER_CPU, serving $WORK/www on 127.0.0.1:PORT, one worker, with
# keep-alive and header timeouts of $TIMEOUT_S seconds.
# Needs: WORK, SERVER_CPU, BIN, TIMEOUT_S; optional EVD_ARGS (extra
# arguments for evdispatch-serve). Sets SPID: the process whose CPU and
# memory are measured.

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

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
  access_log off;
  sendfile on; tcp_nopush on; tcp_nodelay on;
  keepalive_requests 100000000; keepalive_timeout $TIMEOUT_S; client_header_timeout $TIMEOUT_S;
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
server.max-keep-alive-idle = $TIMEOUT_S
server.max-read-idle = $TIMEOUT_S
server.max-connections = 16000
server.max-fds = 20000
server.errorlog = "$WORK/lighttpd-error.log"
mimetype.assign = (".html" => "text/html")
EOF
      taskset -c "$SERVER_CPU" lighttpd -D -f "$WORK/lighttpd.conf" 2>/dev/null &
      SPID=$!;;
    h2o)
      # h2o run as root drops to "nobody": $WORK must be world-readable.
      cat > "$WORK/h2o.conf" <<EOF
listen:
  host: 127.0.0.1
  port: $port
num-threads: 1
max-connections: 19000
http1-request-timeout: $TIMEOUT_S
hosts:
  default:
    paths:
      /:
        file.dir: $WORK/www
EOF
      taskset -c "$SERVER_CPU" h2o -c "$WORK/h2o.conf" >/dev/null 2>&1 &
      SPID=$!;;
    *)
      # shellcheck disable=SC2086
      taskset -c "$SERVER_CPU" "$BIN" --root "$WORK/www" --listen "127.0.0.1:$port" \
        --mechanism "$name" --cpu "$SERVER_CPU" --header-timeout "${TIMEOUT_S}s" \
        --idle-timeout "${TIMEOUT_S}s" ${EVD_ARGS:-} > /dev/null 2>&1 &
      SPID=$!;;
  esac
  for _ in $(seq 200); do
    if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/f6k.html")" = 200 ]; then
      return 0
    fi
    sleep 0.05
  done
  echo "$name did not start (or does not serve f6k.html)" >&2
  stop_server
  return 1
}

# SIGTERM, then SIGKILL after 5 s (h2o's graceful stop can take much longer).
stop_server() {
  kill "$SPID" 2>/dev/null || true
  for _ in $(seq 50); do
    kill -0 "$SPID" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 "$SPID" 2>/dev/null || true
  wait "$SPID" 2>/dev/null || true
}

# A fresh world-readable work directory with the 6 KB document.
make_work() {
  WORK=$(mktemp -d "/tmp/$1.XXXXXX")
  chmod 755 "$WORK"
  mkdir -p "$WORK/www"
  head -c 6144 /dev/zero | tr '\0' 'x' > "$WORK/www/f6k.html"
}
