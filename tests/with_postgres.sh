#!/usr/bin/env bash
# tests/with_postgres.sh [COMMAND...]: COMMAND with a throwaway PostgreSQL cluster on loopback,
# as a room has it: every role logs in over TCP with a scram-sha-256 password (pg_hba.conf: no
# trust), the Unix socket is closed to other users (unix_socket_permissions 0770), and
# max_connections is what `workbook room check` asks for thirty attendees. Exports
# WORKBOOK_TEST_PG_URL and WORKBOOK_BENCH_PG_URL (the superuser's URL) and
# WORKBOOK_TEST_ROOM_URL (a room's admin, as deploy/README.md makes it: CREATEROLE, owning a
# database of its own). Without a command (make test-pg): the store and room tests. Uses PostgreSQL's server programs when the machine has them (initdb,
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
secret=$(.venv/bin/python -c 'import secrets; print(secrets.token_hex(16))')
printf '%s\n' "$secret" > "$data/pw"
chmod 644 "$data/pw"
# what `workbook room check` asks of a room of thirty (the room's budget and the reserved slots)
max_connections=$(.venv/bin/python -c 'from helpers.course.room import connection_budget; print(connection_budget(30) + 3)')
"${as_owner[@]}" "$bin/initdb" -D "$data/db" -U workbook --pwfile="$data/pw" \
  --auth-host=scram-sha-256 --auth-local=scram-sha-256 >/dev/null
rm -f "$data/pw"
"${as_owner[@]}" "$bin/pg_ctl" -D "$data/db" -l "$data/log" -w \
  -o "-p $port -k $data -c listen_addresses=127.0.0.1 -c unix_socket_permissions=0770 -c max_connections=$max_connections" \
  start >/dev/null
trap '"${as_owner[@]}" "$bin/pg_ctl" -D "$data/db" -m fast stop >/dev/null 2>&1 || true; rm -rf "$data"' EXIT
echo "test-pg: PostgreSQL $("$bin/postgres" --version | awk '{print $NF}') on 127.0.0.1:$port, scram-sha-256 passwords"
export WORKBOOK_TEST_PG_URL="postgresql+psycopg://workbook:$secret@127.0.0.1:$port/postgres"
export WORKBOOK_BENCH_PG_URL="$WORKBOOK_TEST_PG_URL"
room_secret=$(.venv/bin/python -c 'import secrets; print(secrets.token_hex(16))')
.venv/bin/python - "$WORKBOOK_TEST_PG_URL" "$room_secret" <<'PY_ROOM'
import sys
from sqlalchemy import create_engine, text
engine = create_engine(sys.argv[1], isolation_level="AUTOCOMMIT")
with engine.connect() as db:
    db.execute(text(f"CREATE ROLE room LOGIN CREATEROLE PASSWORD '{sys.argv[2]}'"))
    db.execute(text("GRANT pg_read_all_settings TO room"))  # room check reads the socket's
    db.execute(text("CREATE DATABASE room OWNER room"))
engine.dispose()
PY_ROOM
export WORKBOOK_TEST_ROOM_URL="postgresql+psycopg://room:$room_secret@127.0.0.1:$port/room"
export WORKBOOK_BENCH_ROOM_URL="$WORKBOOK_TEST_ROOM_URL"
"$@"
