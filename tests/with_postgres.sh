#!/usr/bin/env bash
# tests/with_postgres.sh [COMMAND...]: COMMAND with a throwaway PostgreSQL cluster on loopback,
# its URL in WORKBOOK_TEST_PG_URL and WORKBOOK_BENCH_PG_URL. Without a command (make test-pg): the
# store and room tests. Uses PostgreSQL's server programs when the machine has them (initdb,
# pg_ctl); otherwise it says so and runs the command without PostgreSQL (the tests: skipped). The
# cluster lives in a temporary folder and is removed on exit. psycopg comes from
# requirements-dev.lock (make test-pg installs it first).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
  set -- .venv/bin/pytest -q tests/test_store.py tests/test_room.py -k postgresql
  testing=1
fi
initdb=$(command -v initdb || ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null | tail -n 1 || true)
if [ -z "$initdb" ]; then
  echo "with_postgres: no PostgreSQL server programs (initdb) on this machine"
  if [ -n "${testing:-}" ]; then exit 0; fi
  exec "$@"
fi
bin=$(dirname "$initdb")
data=$(mktemp -d /tmp/workbook-pg.XXXXXX)
port=$(.venv/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_owner=()
if [ "$(id -u)" = 0 ]; then  # PostgreSQL refuses to run as root
  id workbookpg >/dev/null 2>&1 || useradd --system --no-create-home workbookpg
  chown workbookpg "$data"
  as_owner=(runuser -u workbookpg --)
fi
"${as_owner[@]}" "$bin/initdb" -D "$data/db" -A trust -U workbook >/dev/null
"${as_owner[@]}" "$bin/pg_ctl" -D "$data/db" -l "$data/log" -w \
  -o "-p $port -k $data -c listen_addresses=127.0.0.1" start >/dev/null
trap '"${as_owner[@]}" "$bin/pg_ctl" -D "$data/db" -m fast stop >/dev/null 2>&1 || true; rm -rf "$data"' EXIT
echo "test-pg: PostgreSQL $("$bin/postgres" --version | awk '{print $NF}') on 127.0.0.1:$port"
export WORKBOOK_TEST_PG_URL="postgresql+psycopg://workbook@127.0.0.1:$port/postgres"
export WORKBOOK_BENCH_PG_URL="$WORKBOOK_TEST_PG_URL"
"$@"
