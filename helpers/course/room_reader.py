"""The instructor's view of the room, read by reader processes: both ends of their pipe.

:func:`helpers.course.room.room_progress` hands the attendees to :func:`read_attendees`, which
runs :data:`READERS` reader processes (``python -m helpers.course.room_reader``), each reading one
attendee after another. The protocol, one JSON object per line:

- the reader caps its own address space at :data:`READER_MEMORY_BYTES` (``RLIMIT_AS``) and says
  ``{"ready": true}``;
- for each request ``{"url", "schema", "password"}`` (the room's libpq URL, her role, her
  password) on its stdin it logs in *as that attendee*,
  says ``{"pid": <backend pid>}`` (so the room can end that session whatever the reader does
  next), reads her two store tables and says her line: the
  :class:`helpers.course.room.AttendeeProgress` fields as JSON;
- it exits when its stdin closes, or after a line whose reading ran it out of memory.

No code of hers runs during the read: from the catalogs alone, a store table that is not an
ordinary table, has a column of a type not built in, an index on an expression or with a
predicate (the planner evaluates those when it plans a query on the table: PostgreSQL's
``plancat.c``, ``get_relation_info``) or an extended statistics object (``get_relation_statistics``
evaluates its expressions) is not read, and says so on her line; a lock she holds on her tables
makes the read give up after :data:`PROGRESS_LOCK_TIMEOUT_MS` (an honest attendee's migration
holds one for milliseconds). So a hostile attendee costs the view her own line and about a
second, never its deadline.

Why processes all the same: a way for her code to run that the catalogs do not show would run
with her rights only, but what it sent back would be read into the reader's memory (an error or
a notice of hundreds of megabytes). That costs the reader its life and her line ("not read"),
never the instructor's view; a new reader takes the attendees left.
Why several attendees per process: a process costs about 0.3 s of CPU to start, so one per
attendee made the view of thirty take 13 s of CPU; a few processes for all of them take about
one second (``make bench``).

Each attendee's read is bounded by :data:`PROGRESS_DEADLINE_S` of wall clock from her request,
a hang guard the admin enforces by ending her session (``pg_terminate_backend``, which no code
of hers can catch, unlike a statement's cancel) and the reader with it. An honest read takes a
few milliseconds of work, so only a read that waits on her code reaches it.
"""

from __future__ import annotations

import json
import os
import queue
import selectors
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: The reader's address-space cap in bytes (``RLIMIT_AS``): several times what Python with
#: psycopg needs, far less than the largest message an attendee can send (about 1 GiB,
#: PostgreSQL's ``MaxAllocSize``).
READER_MEMORY_BYTES = 512 * 1024 * 1024
#: Characters of a PostgreSQL error kept on the attendee's line.
ERROR_CHARS = 300
#: Reader processes at once: each holds one attendee's connection at a time, so the view holds
#: at most this many attendee connections (and the admin's, briefly): the room's connection
#: budget counts them (:data:`helpers.course.room.PROGRESS_CONNECTIONS`).
READERS = 2
#: The longest the view waits for one attendee, in seconds of wall clock from her request: a
#: hang guard (an honest read takes milliseconds); past it her session and the reader are ended
#: and her line says so.
PROGRESS_DEADLINE_S = 30.0
#: Seconds of wall clock a reader may take to start (Python and psycopg): a hang guard.
READER_START_GUARD_S = 120.0
#: The longest line a reader may send, in bytes (a line holds at most a few thousand ``NN.T``).
MAX_LINE_BYTES = 4 * 2**20
#: Longest statement of the view's read of one attendee, in milliseconds: a hang guard (an
#: honest read takes milliseconds), half the reader's deadline.
PROGRESS_STATEMENT_TIMEOUT_MS = 15_000
#: Longest wait for a lock on an attendee's table, in milliseconds: a lock her own session holds
#: (a migration holds one for milliseconds; a transaction left open in a kernel, or a hostile
#: ``LOCK TABLE``, for ever). Her line says her tables were locked and the view goes on.
PROGRESS_LOCK_TIMEOUT_MS = 2_000
#: The most checkpoint rows and threads read of one attendee (more are reported as capped).
PROGRESS_ROW_CAP = 50_000
#: Characters of a notebook name read back (the store writes two: ``"04"``).
PROGRESS_NOTEBOOK_CHARS = 8

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


# -- the reader's side ----------------------------------------------------------------------------


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


def _say(message: dict[str, Any]) -> None:
    print(json.dumps(message), flush=True)


def main() -> int:
    """Read attendees until stdin closes (see the module's docstring); the exit code is 0: what
    went wrong with an attendee is her line's ``error``."""
    cap_memory()
    # loaded before "ready": a request's time is the read's
    import psycopg  # noqa: F401

    import helpers.store.checkpoint_rows  # noqa: F401

    _say({"ready": True})
    for raw in sys.stdin:
        line, fatal = read_one(json.loads(raw))
        _say(line)
        if fatal:  # out of memory: a process in that state is not trusted with the next one
            return 0
    return 0


def read_one(request: dict[str, str]) -> tuple[dict[str, Any], bool]:
    """One attendee's line (saying her backend's pid first), and whether the reader must end."""
    line: dict[str, Any] = {"passed": [], "runs": 0, "last": None, "threads": 0}
    from psycopg.errors import LockNotAvailable

    line.update(capped=False, error=None)
    try:
        _read(request, line)
    except Exception as exc:
        if isinstance(exc, LockNotAvailable):
            said = (
                f"her tables stayed locked by a session of hers for "
                f"{PROGRESS_LOCK_TIMEOUT_MS / 1000:g} s (a transaction left open in a kernel?): "
                "not read, look again"
            )
            line.update(passed=[], runs=0, last=None, threads=0, error=said)
            return line, False  # psycopg.Error, MemoryError, libpq's own "out of memory"
        said = " ".join(str(exc).split())[:ERROR_CHARS] or type(exc).__name__
        memory = isinstance(exc, MemoryError) or "memory" in said
        if memory:
            said = f"sent more than the view's {READER_MEMORY_BYTES // 2**20} MiB: not read"
        line.update(passed=[], runs=0, last=None, threads=0, error=said)
        return line, memory
    return line, False


def _read(request: dict[str, str], line: dict[str, Any]) -> None:
    import psycopg
    from psycopg import sql

    from helpers.store.checkpoint_rows import checkpoint_summary

    options = (
        "-c search_path=pg_catalog,pg_temp -c row_security=off "
        "-c default_transaction_read_only=on "
        f"-c statement_timeout={int(PROGRESS_STATEMENT_TIMEOUT_MS)} "
        f"-c lock_timeout={int(PROGRESS_LOCK_TIMEOUT_MS)}"
    )
    schema = request["schema"]
    quoted, cap = sql.Identifier(schema), sql.Literal(PROGRESS_ROW_CAP + 1)
    with psycopg.connect(
        request["url"], user=schema, password=request["password"], options=options,
        connect_timeout=int(PROGRESS_DEADLINE_S),
    ) as db:  # fmt: skip
        _say({"pid": db.info.backend_pid})
        refused, present = unreadable(db, schema)
        if refused:
            line["error"] = refused
            return
        rows = []
        if "checkpoint_results" in present:
            rows = db.execute(
                sql.SQL(
                    "SELECT pg_catalog.left(notebook, {}), todo, passed, created_at "
                    "FROM ONLY {}.checkpoint_results LIMIT {}"
                ).format(sql.Literal(PROGRESS_NOTEBOOK_CHARS), quoted, cap)
            ).fetchall()
        threads = 0
        if "threads" in present:
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


def unreadable(db: Any, schema: str) -> tuple[str | None, set[str]]:
    """Why ``schema``'s store tables are not read (``None``: each one present is an ordinary
    table whose read columns have the built-in types of :data:`READ_COLUMNS`, with no index
    the planner would evaluate code of hers for, see the module's docstring), and which of them
    are present, from the catalogs only, on the psycopg connection ``db``. A table not there yet
    is no reason: an attendee who has run no checkpoint has nothing to read."""
    present = set()
    for table, columns in READ_COLUMNS.items():
        found = db.execute(
            "SELECT c.oid, c.relkind FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = %s",
            (schema, table),
        ).fetchone()
        if found is None:
            continue
        oid, relkind = found
        if relkind != "r":
            return f"{table} is not a table (relkind {relkind!r}): not read", present
        planned = db.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_index WHERE indrelid = %s "
            "AND (indexprs IS NOT NULL OR indpred IS NOT NULL)), "
            "EXISTS (SELECT 1 FROM pg_catalog.pg_statistic_ext WHERE stxrelid = %s)",
            (oid, oid),
        ).fetchone()
        if planned[0]:
            return f"{table} has an index on an expression or a predicate: not read", present
        if planned[1]:
            return f"{table} has extended statistics: not read", present
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
                return f"{table}.{column} is not as the store made it: not read", present
        present.add(table)
    return None, present


# -- the view's side ------------------------------------------------------------------------------


@dataclass
class Read:
    """One attendee to read: her ``schema`` and ``password``; after :func:`read_attendees`,
    ``line`` holds what her reader said (the fields of
    :class:`helpers.course.room.AttendeeProgress`)."""

    schema: str
    password: str
    line: dict[str, Any] | None = None


class _Late(Exception):
    """A reader did not say its next line by the deadline."""


class ReaderProcess:
    """One reader process and the bytes it has said but not yet read as lines."""

    def __init__(self) -> None:
        """Start a reader and wait until it is ready.

        Raises:
            OSError: it did not start, or did not say it was ready (it is killed).
        """
        self.process = subprocess.Popen(
            [sys.executable, "-m", "helpers.course.room_reader"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONSAFEPATH": "1"},
        )  # fmt: skip
        self._said = b""
        try:
            ready = self.next_line(time.monotonic() + READER_START_GUARD_S)
        except (_Late, EOFError, ValueError) as exc:
            self.kill()
            raise OSError(f"the room's reader did not start: {exc or type(exc).__name__}") from exc
        if ready != {"ready": True}:
            self.kill()
            raise OSError("the room's reader did not start")

    def next_line(self, deadline: float) -> dict[str, Any]:
        """The reader's next line, as JSON.

        Raises:
            _Late: ``deadline`` (``time.monotonic`` seconds) passed first.
            EOFError: the reader ended first.
            ValueError: the line is not JSON, or longer than :data:`MAX_LINE_BYTES`.
        """
        out = self.process.stdout
        assert out is not None
        with selectors.DefaultSelector() as selector:
            selector.register(out, selectors.EVENT_READ)
            while b"\n" not in self._said:
                if len(self._said) > MAX_LINE_BYTES:
                    raise ValueError(f"a line over {MAX_LINE_BYTES:,} bytes")
                wait_s = deadline - time.monotonic()
                if wait_s <= 0 or not selector.select(wait_s):
                    raise _Late
                chunk = os.read(out.fileno(), 1 << 16)
                if not chunk:
                    raise EOFError("the reader ended")
                self._said += chunk
        text, self._said = self._said.split(b"\n", 1)
        said = json.loads(text)
        if not isinstance(said, dict):
            raise ValueError("a line that is not a JSON object")
        return said

    def ask(self, request: dict[str, str]) -> None:
        """Send one request (raises OSError when the reader has ended)."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(request).encode() + b"\n")
        self.process.stdin.flush()

    def close(self) -> None:
        """Let the reader end (its stdin closed), and reap it (killed if it does not end)."""
        try:
            assert self.process.stdin is not None
            self.process.stdin.close()
            self.process.wait(timeout=READER_START_GUARD_S)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()

    def kill(self) -> None:
        """End the reader now, and reap it."""
        self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()


def read_attendees(url: str, reads: list[Read], *, end_session: Callable[[int], None]) -> None:
    """Fill each read's ``line`` (the attendee's progress, or her ``error``) from the room's
    libpq URL ``url``, with :data:`READERS` reader processes taking the attendees one after
    another. An attendee whose reader passes :data:`PROGRESS_DEADLINE_S`, dies or says
    something that is not a line costs that reader (ended, and her session with it:
    ``end_session(backend_pid)``, the admin's) and her own line only: a new reader takes the
    attendees left."""
    todo: queue.SimpleQueue[Read] = queue.SimpleQueue()
    for read in reads:
        todo.put(read)

    def work() -> None:
        reader: ReaderProcess | None = None
        while True:
            try:
                read = todo.get_nowait()
            except queue.Empty:
                break
            if reader is None:
                try:
                    reader = ReaderProcess()
                except OSError as exc:
                    read.line = _error_line(f"{exc}: not read")
                    continue
            read.line, healthy = _read_with(reader, url, read, end_session)
            if not healthy:
                reader.kill()
                reader = None
        if reader is not None:
            reader.close()

    workers = [threading.Thread(target=work, name="room-reader") for _ in range(READERS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def _error_line(error: str | None) -> dict[str, Any]:
    return {"passed": [], "runs": 0, "last": None, "threads": 0, "capped": False, "error": error}


def _read_with(
    reader: ReaderProcess, url: str, read: Read, end_session: Callable[[int], None]
) -> tuple[dict[str, Any], bool]:
    """``read``'s line from ``reader``, and whether the reader may read the next attendee."""
    deadline = time.monotonic() + PROGRESS_DEADLINE_S
    pid = None
    try:
        reader.ask({"url": url, "schema": read.schema, "password": read.password})
        said = reader.next_line(deadline)
        if "pid" in said:
            pid = said["pid"]
            said = reader.next_line(deadline)
        line = {field: said.get(field, empty) for field, empty in _error_line(None).items()}
        return line, not _fatal(said)
    except _Late:
        error = f"took longer than {PROGRESS_DEADLINE_S:g} s: stopped, not read"
    except (EOFError, OSError):
        error = f"the reader stopped (exit code {reader.process.poll()}): not read"
    except ValueError as exc:
        error = f"the reader said something else ({exc}): not read"
    reader.kill()
    if isinstance(pid, int):
        with _ENDING:  # one admin connection at a time (the room's budget counts one)
            try:
                end_session(pid)
            except Exception as exc:  # the line says so, and the room is read on
                error += f" (her session could not be ended: {type(exc).__name__})"
    return _error_line(error), False


#: Held while an attendee's session is ended, so the view opens one admin connection at a time.
_ENDING = threading.Lock()


def _fatal(said: dict[str, Any]) -> bool:
    """Whether a line says its reader ran out of memory (it then exits)."""
    return isinstance(said.get("error"), str) and said["error"].startswith("sent more than")


if __name__ == "__main__":
    sys.exit(main())
