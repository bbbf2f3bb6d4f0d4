#!/usr/bin/env bash
# A throwaway PostgreSQL 15 cluster for the tests, owned by the postgres user,
# listening on loopback and on a socket dir of its own (never the system one).
#
#   scripts/postgres-test-cluster.sh start DIR [PORT]   prints the URL to export as AIRLOCK_TEST_POSTGRES_URL
#   scripts/postgres-test-cluster.sh stop DIR           stops it and removes DIR
set -euo pipefail
bin=/usr/lib/postgresql/15/bin
command=${1:-}
dir=${2:-}
[ -n "$command" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR [PORT]" >&2; exit 2; }
as_postgres() { runuser -u postgres -- "$@"; }

case "$command" in
  start)
    port=${3:-55432}
    [ -x "$bin/initdb" ] || { echo "postgresql-15 is not installed: apt-get install postgresql-15" >&2; exit 1; }
    mkdir -p "$dir"
    chown postgres:postgres "$dir"
    chmod 700 "$dir"
    as_postgres "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --no-sync -E UTF8 >"$dir/initdb.log"
    mkdir -p "$dir/socket" && chown postgres:postgres "$dir/socket"
    # fsync off by default: a test cluster is thrown away. Benchmarks want the real cost: AIRLOCK_TEST_POSTGRES_FSYNC=on.
    fsync=${AIRLOCK_TEST_POSTGRES_FSYNC:-off}
    as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir/socket -c fsync=$fsync -c max_connections=300" start >/dev/null
    echo "postgres://postgres@127.0.0.1:$port/postgres"
    ;;
  stop)
    if [ -d "$dir/data" ]; then as_postgres "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true; fi
    rm -rf "$dir"
    ;;
  *)
    echo "usage: $0 start|stop DIR [PORT]" >&2; exit 2;;
esac
