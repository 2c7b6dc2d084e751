#!/bin/sh
# Start / stop a throwaway PostgreSQL cluster on loopback (for `make scale`; never used by `make test`).
# usage: pg_loopback.sh start DIR PORT   -> prints the connection URL
#        pg_loopback.sh stop DIR
set -eu
PG_BIN=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$PG_BIN/initdb" ] || { echo "PostgreSQL not found: apt-get install -y postgresql (or set PG_BIN)" >&2; exit 1; }
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cmd=$1; dir=$2
case "$cmd" in
  start)
    port=${3:-55432}
    mkdir -p "$dir"; [ "$(id -u)" = 0 ] && chown postgres "$dir"
    [ -f "$dir/PG_VERSION" ] || as_pg "$PG_BIN/initdb" -D "$dir" -U postgres -A trust >/dev/null
    as_pg "$PG_BIN/pg_ctl" -D "$dir" -l "$dir/server.log" -w \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir" start >/dev/null
    echo "postgresql://postgres@127.0.0.1:$port/postgres"
    ;;
  stop)
    as_pg "$PG_BIN/pg_ctl" -D "$dir" -m fast -w stop >/dev/null
    ;;
  *) echo "usage: $0 start DIR [PORT] | stop DIR" >&2; exit 2 ;;
esac
