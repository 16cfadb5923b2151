"""One attendee's line of the instructor's view, read in a process of its own.

:func:`helpers.course.room.room_progress` runs ``python -m helpers.course.room_reader`` once per
attendee and gives it, on standard input, one JSON object: ``{"url", "schema", "password"}``.
The process first caps its own address space at :data:`READER_MEMORY_BYTES` (``RLIMIT_AS``),
then logs in as the attendee, prints ``{"pid": <backend pid>}`` on one line (so the room can end
that session whatever the process does next), reads the attendee's two store tables and prints
one more line: the :class:`helpers.course.room.AttendeeProgress` fields as JSON.

Why a process: code of the attendee's can run during the read (a partial index predicate runs
when a query is planned), with her rights only, but what it sends back is read into the reader's
memory: an error or a notice of hundreds of megabytes. In a process of its own that costs the
reader its line ("not read"), never the instructor's view or the hub it may run on.
"""

from __future__ import annotations

import json
import sys
from typing import Any

#: The reader's address-space cap in bytes (``RLIMIT_AS``): several times what Python with
#: psycopg needs, far less than the largest message an attendee can send (about 1 GiB,
#: PostgreSQL's ``MaxAllocSize``).
READER_MEMORY_BYTES = 512 * 1024 * 1024
#: Characters of a PostgreSQL error kept on the attendee's line.
ERROR_CHARS = 300

#: The types the view reads each column as; a column of another type (an attendee's own type,
#: whose casts and operators would be theirs) makes the table unread.
READ_COLUMNS = {
    "checkpoint_results": {
        "notebook": ("text", "character varying"),
        "todo": ("integer", "bigint", "smallint"),
        "passed": ("boolean",),
        "created_at": ("timestamp with time zone", "timestamp without time zone"),
    },
    "threads": {},
}


def cap_memory(limit_bytes: int = READER_MEMORY_BYTES) -> bool:
    """Cap this process's address space at ``limit_bytes`` (``RLIMIT_AS``); ``False`` where the
    platform has no ``resource`` module (Windows), which the room never runs on."""
    try:
        import resource
    except ImportError:
        return False
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = limit_bytes if hard == resource.RLIM_INFINITY else min(limit_bytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    return True


def main() -> int:
    """Read one attendee (see the module's docstring); the exit code is always 0 once the
    request is read: what went wrong is the line's ``error``."""
    cap_memory()
    request = json.loads(sys.stdin.read(64 * 1024))
    line: dict[str, Any] = {"passed": [], "runs": 0, "last": None, "threads": 0}
    line.update(capped=False, error=None)
    try:
        _read(request, line)
    except Exception as exc:  # psycopg.Error, MemoryError, libpq's own "out of memory"
        said = " ".join(str(exc).split())[:ERROR_CHARS] or type(exc).__name__
        if isinstance(exc, MemoryError) or "memory" in said:
            said = f"sent more than the view's {READER_MEMORY_BYTES // 2**20} MiB: not read"
        line.update(passed=[], runs=0, last=None, threads=0, error=said)
    print(json.dumps(line), flush=True)
    return 0


def _read(request: dict[str, str], line: dict[str, Any]) -> None:
    import psycopg
    from psycopg import sql

    from helpers.course.room import (
        PROGRESS_DEADLINE_S,
        PROGRESS_NOTEBOOK_CHARS,
        PROGRESS_ROW_CAP,
        PROGRESS_STATEMENT_TIMEOUT_MS,
        libpq_url,
    )
    from helpers.tooling.store import checkpoint_summary

    options = (
        "-c search_path=pg_catalog,pg_temp -c row_security=off "
        "-c default_transaction_read_only=on "
        f"-c statement_timeout={int(PROGRESS_STATEMENT_TIMEOUT_MS)}"
    )
    schema = request["schema"]
    quoted, cap = sql.Identifier(schema), sql.Literal(PROGRESS_ROW_CAP + 1)
    with psycopg.connect(
        libpq_url(request["url"]), user=schema, password=request["password"], options=options,
        connect_timeout=int(PROGRESS_DEADLINE_S),
    ) as db:  # fmt: skip
        print(json.dumps({"pid": db.info.backend_pid}), flush=True)
        refused = unreadable(db, schema)
        if refused:
            line["error"] = refused
            return
        rows = db.execute(
            sql.SQL(
                "SELECT pg_catalog.left(notebook, {}), todo, passed, created_at "
                "FROM ONLY {}.checkpoint_results LIMIT {}"
            ).format(sql.Literal(PROGRESS_NOTEBOOK_CHARS), quoted, cap)
        ).fetchall()
        threads = db.execute(
            sql.SQL(
                "SELECT pg_catalog.count(*) FROM (SELECT 1 FROM ONLY {}.threads LIMIT {}) AS t"
            ).format(quoted, cap)
        ).fetchone()[0]
    line["capped"] = len(rows) > PROGRESS_ROW_CAP or threads > PROGRESS_ROW_CAP
    summary = checkpoint_summary(("-", *row) for row in rows[:PROGRESS_ROW_CAP]).get("-")
    if summary:
        last = summary["last"]
        line.update(passed=summary["passed"], runs=summary["runs"])
        line["last"] = last.isoformat() if last is not None else None
    line["threads"] = min(int(threads), PROGRESS_ROW_CAP)


def unreadable(db: Any, schema: str) -> str | None:
    """Why ``schema``'s store tables are not read (``None``: both are ordinary tables whose read
    columns have the built-in types of :data:`READ_COLUMNS`), from the catalogs only, on the
    psycopg connection ``db``."""
    for table, columns in READ_COLUMNS.items():
        found = db.execute(
            "SELECT c.relkind FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = %s",
            (schema, table),
        ).fetchone()
        if found is None:
            return f"no {table} table yet"
        if found[0] != "r":
            return f"{table} is not a table (relkind {found[0]!r}): not read"
        types = dict(
            db.execute(
                "SELECT a.attname, pg_catalog.format_type(a.atttypid, NULL) "
                "FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c "
                "ON c.oid = a.attrelid JOIN pg_catalog.pg_namespace n "
                "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = %s "
                "AND a.attnum > 0 AND NOT a.attisdropped",
                (schema, table),
            ).fetchall()
        )
        for column, allowed in columns.items():
            if types.get(column) not in allowed:
                return f"{table}.{column} is not as the store made it: not read"
    return None


if __name__ == "__main__":
    sys.exit(main())
