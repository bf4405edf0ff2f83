#!/usr/bin/env bash
# Real PostgreSQL 15 with PL/Python for tests, benches and examples — from Debian's packages.
#
#   scripts/pg-env.sh start   install if needed, start a throwaway cluster, print the environment
#   scripts/pg-env.sh stop    stop it and remove its data
#   scripts/pg-env.sh status | env
#
# The server refuses to run as root, so as root the cluster belongs to an unprivileged user
# ($VEIL_PG_OS_USER, default postgres, created by Debian's package). It lives in a temporary
# directory ($VEIL_PG_DIR, default /tmp/veil-pg-env), listens on 127.0.0.1:$VEIL_PG_PORT (default
# 15432) only, and trusts loopback connections: it is a test cluster, never a deployment.
set -euo pipefail

PG_VERSION=15
PG_BIN=/usr/lib/postgresql/$PG_VERSION/bin
RUN=${VEIL_PG_DIR:-/tmp/veil-pg-env}
PORT=${VEIL_PG_PORT:-15432}
OS_USER=${VEIL_PG_OS_USER:-postgres}

log() { echo "pg-env: $*" >&2; }

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u "$OS_USER" -- "$@"; else "$@"; fi
}

install_pg() {
  # python3-cryptography: what PL/Python's interpreter seals leased keys with (docs/database.md)
  if [ -x "$PG_BIN/initdb" ] && [ -f "/usr/lib/postgresql/$PG_VERSION/lib/plpython3.so" ] && dpkg -s python3-cryptography >/dev/null 2>&1; then return; fi
  log "installing postgresql-$PG_VERSION, postgresql-plpython3-$PG_VERSION and python3-cryptography from Debian"
  local sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq "postgresql-$PG_VERSION" "postgresql-plpython3-$PG_VERSION" python3-cryptography >/dev/null
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

print_env() {
  echo "PGHOST=127.0.0.1"
  echo "PGPORT=$PORT"
  echo "PGUSER=postgres"
  echo "PGDATABASE=postgres"
  echo "VEIL_PG_URL=postgres://postgres@127.0.0.1:$PORT/postgres"
}

start() {
  install_pg
  if port_open "$PORT"; then log "PostgreSQL already up on 127.0.0.1:$PORT"; print_env; return; fi
  if [ "$(id -u)" = 0 ] && ! id "$OS_USER" >/dev/null 2>&1; then useradd --system --no-create-home "$OS_USER"; fi
  rm -rf "$RUN"
  mkdir -p "$RUN"
  [ "$(id -u)" = 0 ] && chown "$OS_USER" "$RUN"
  as_owner "$PG_BIN/initdb" -D "$RUN/data" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$RUN/initdb.log" 2>&1 \
    || { cat "$RUN/initdb.log" >&2; exit 1; }
  as_owner "$PG_BIN/pg_ctl" -D "$RUN/data" -l "$RUN/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -c port=$PORT -c unix_socket_directories=$RUN -c fsync=off" start >/dev/null \
    || { cat "$RUN/server.log" >&2; exit 1; }
  log "PostgreSQL $PG_VERSION up on 127.0.0.1:$PORT (data in $RUN/data)"
  print_env
}

stop() {
  if [ -d "$RUN/data" ]; then as_owner "$PG_BIN/pg_ctl" -D "$RUN/data" -m fast -w stop >/dev/null 2>&1 || true; fi
  rm -rf "$RUN"
}

case "${1:-}" in
  install) install_pg ;;
  start) start ;;
  stop) stop ;;
  status) port_open "$PORT" && log "PostgreSQL up on 127.0.0.1:$PORT" || log "PostgreSQL down" ;;
  env) print_env ;;
  *) echo "usage: $0 install|start|stop|status|env" >&2; exit 2 ;;
esac
