#!/usr/bin/env bash
# Starts a throwaway PostgreSQL on 127.0.0.1:${PGPORT:-55432} (trust auth, loopback only) for the store tests
# and prints the URL to export as LIFELINE_TEST_DATABASE_URL. Idempotent: a running instance is reused.
set -euo pipefail
port=${PGPORT:-55432}
dir=${LIFELINE_PG_DIR:-/tmp/lifeline-pg}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
[ -n "$bin" ] || { echo "start-postgres: PostgreSQL server binaries not found (apt-get install postgresql)" >&2; exit 3; }
url="postgres://postgres@127.0.0.1:${port}/postgres"
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
if [ -f "$dir/data/postmaster.pid" ] && as_pg "'$bin/pg_ctl' -D '$dir/data' status" >/dev/null 2>&1; then
  echo "$url"; exit 0
fi
rm -rf "$dir"; mkdir -p "$dir"
[ "$(id -u)" = 0 ] && chown postgres "$dir"
as_pg "'$bin/initdb' -D '$dir/data' -A trust -U postgres --no-sync" >"$dir/initdb.log" 2>&1 \
  || { cat "$dir/initdb.log" >&2; exit 1; }
as_pg "'$bin/pg_ctl' -D '$dir/data' -w -l '$dir/server.log' -o \"-c listen_addresses=127.0.0.1 -p $port -k '$dir' -c max_connections=300 -c fsync=off\" start" >/dev/null \
  || { cat "$dir/server.log" >&2; exit 1; }
echo "$url"
