"""run_sql's sandbox: one read-only query on the ISO reference database, bounded by construction.

A query runs in a worker process, never in the caller's: a small pool of them, started on first
use and reused. The caller kills a worker that is still busy at the time limit, which stops even
one slow SQLite function call (no progress handler runs inside one), and each worker has an
address-space limit, so no query holds the caller's time or gigabytes of memory. Inside the
worker: the authorizer (reading only, allow-listed functions), SQLite's own limits (value length,
columns, ...), a hard heap limit for SQLite, and a budget in characters while the rows are
fetched one at a time.

:func:`run_query` is what the ``run_sql`` tool (:mod:`helpers.tooling.tools`) calls; every limit is
a named constant below. A hand-written pool, not ``concurrent.futures``: a process pool cannot
kill one busy worker at a deadline without breaking the pool.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import selectors
import signal
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from helpers.tooling.dataset import ensure_reference_db
from helpers.tooling.worker_pipes import (
    WORKER_READY,
    WorkerProcess,
    WorkWatch,
    next_job,
    read_frame,
    rss_bytes,
    set_limit,
    worker_replies,
    write_frame,
)

#: The most rows run_sql returns (its ``max_rows`` argument may be 1 to this).
MAX_SQL_ROWS = 10_000

_ALLOWED_SQL_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION}
if hasattr(sqlite3, "SQLITE_RECURSIVE"):
    _ALLOWED_SQL_ACTIONS.add(sqlite3.SQLITE_RECURSIVE)

#: The SQL functions a query may call, by the name SQLite gives them (lower case): the ordinary
#: text, null, number (with SQLite's math functions), date and time, JSON-reading, aggregate and
#: window functions, the planner's hints (likely, unlikely, likelihood) and the JSON operators
#: ``->`` and ``->>``. Every other function is refused, among them ``fts3_tokenizer`` (returns a
#: pointer into libsqlite3), ``load_extension``, ``zeroblob`` and ``randomblob`` (a large BLOB
#: from a few characters of SQL), the full-text and R-tree helpers, the ``sqlite_*`` functions
#: (build details, the error log), the change counters and the JSON writers (``json_set`` ...).
SQL_ALLOWED_FUNCTIONS: frozenset[str] = frozenset(
    {
        # text
        "lower",
        "upper",
        "length",
        "substr",
        "substring",
        "instr",
        "replace",
        "trim",
        "ltrim",
        "rtrim",
        "printf",
        "format",
        "char",
        "unicode",
        "hex",
        "quote",
        "soundex",
        "like",
        "glob",
        # null and type
        "coalesce",
        "ifnull",
        "nullif",
        "iif",
        "typeof",
        # numbers
        "abs",
        "round",
        "sign",
        "random",
        "ceil",
        "ceiling",
        "floor",
        "trunc",
        "mod",
        "pow",
        "power",
        "sqrt",
        "exp",
        "ln",
        "log",
        "log10",
        "log2",
        "pi",
        "degrees",
        "radians",
        "sin",
        "cos",
        "tan",
        "asin",
        "acos",
        "atan",
        "atan2",
        "sinh",
        "cosh",
        "tanh",
        "asinh",
        "acosh",
        "atanh",
        # aggregates (min and max are also the scalar functions of two or more arguments)
        "count",
        "sum",
        "total",
        "avg",
        "min",
        "max",
        "group_concat",
        "json_group_array",
        "json_group_object",
        # window functions
        "row_number",
        "rank",
        "dense_rank",
        "percent_rank",
        "cume_dist",
        "ntile",
        "lag",
        "lead",
        "first_value",
        "last_value",
        "nth_value",
        # date and time
        "date",
        "time",
        "datetime",
        "julianday",
        "strftime",
        "unixepoch",
        "current_date",
        "current_time",
        "current_timestamp",
        # JSON, reading
        "json",
        "json_array",
        "json_array_length",
        "json_extract",
        "json_object",
        "json_quote",
        "json_type",
        "json_valid",
        "->",
        "->>",
        # planner hints
        "likely",
        "unlikely",
        "likelihood",
    }
)

#: run_sql stops a query once its worker has spent this many seconds of CPU time on it (the
#: worker's own work: the time it waits for a core on a busy machine is not counted). SQLite's
#: progress handler interrupts the query; a worker still busy inside one slow function call is
#: stopped by the kernel SQL_WORKER_CPU_GRACE_S seconds of CPU later (``RLIMIT_CPU``).
SQL_CPU_TIME_LIMIT_S = 5.0
#: Seconds of wall clock a worker may be idle (no CPU used, every thread asleep:
#: :class:`helpers.tooling.worker_pipes.WorkWatch`) while it runs a query: a query always works,
#: so a worker that does not is stuck (one waiting for a core or the disk is not idle). Past it
#: the worker is killed.
SQL_IDLE_LIMIT_S = 10.0
#: How often the caller looks at its worker's CPU time while it waits, in seconds.
SQL_WATCH_EVERY_S = 0.05
#: The caller's hang guard where ``/proc`` is missing (no CPU time to watch), in seconds of wall
#: clock from sending a query to its reply: 20 times the CPU limit; and, everywhere, the longest
#: a reply that has started may take to arrive whole.
SQL_HANG_GUARD_S = 20 * SQL_CPU_TIME_LIMIT_S
#: How many SQLite virtual-machine instructions run between two checks of the time limit.
SQL_PROGRESS_EVERY_OPS = 10_000
#: The longest string or BLOB SQLite may build while running a query, in bytes
#: (``SQLITE_LIMIT_LENGTH``).
SQL_MAX_VALUE_BYTES = 1_000_000
#: The most columns a result (or a table, index, GROUP BY or ORDER BY) may have
#: (``SQLITE_LIMIT_COLUMN``): with SQL_MAX_VALUE_BYTES, one row holds at most 64 MB.
SQL_MAX_COLUMNS = 64
#: The longest query, in bytes of UTF-8 (``SQLITE_LIMIT_SQL_LENGTH``; also checked before the
#: query is sent to a worker).
SQL_MAX_QUERY_BYTES = 100_000
#: The deepest nesting of an expression (``SQLITE_LIMIT_EXPR_DEPTH``).
SQL_MAX_EXPR_DEPTH = 500
#: The most SELECTs joined by UNION, INTERSECT or EXCEPT (``SQLITE_LIMIT_COMPOUND_SELECT``).
SQL_MAX_COMPOUND_SELECTS = 50
#: The most arguments of one function call (``SQLITE_LIMIT_FUNCTION_ARG``).
SQL_MAX_FUNCTION_ARGS = 32
#: The longest LIKE or GLOB pattern, in bytes (``SQLITE_LIMIT_LIKE_PATTERN_LENGTH``).
SQL_MAX_LIKE_PATTERN_BYTES = 1_000
#: The most instructions of one compiled query (``SQLITE_LIMIT_VDBE_OP``).
SQL_MAX_PROGRAM_OPS = 100_000
#: The most databases a query may attach (``SQLITE_LIMIT_ATTACHED``; ATTACH is refused anyway).
SQL_MAX_ATTACHED_DATABASES = 0
#: The most helper threads SQLite's sorter may start (``SQLITE_LIMIT_WORKER_THREADS``).
SQL_MAX_SORTER_THREADS = 0
#: The longest result run_sql returns, in characters; rows past it are left out (truncated).
#: While rows are fetched, text past it is dropped before it is decoded and kept.
SQL_MAX_RESULT_CHARS = 2_000_000
#: How many bytes of a BLOB are shown (in hex) in a result.
SQL_BLOB_PREVIEW_BYTES = 32
#: The most memory SQLite may allocate in a worker, in bytes (``PRAGMA hard_heap_limit``; temporary
#: tables and sorts are kept in memory, so they count too): a query past it fails "out of memory".
#: Read when a worker starts, like the two limits below.
SQL_WORKER_HEAP_BYTES = 64_000_000
#: A worker's address-space limit, in bytes (``RLIMIT_AS``): all its memory, Python and SQLite.
SQL_WORKER_ADDRESS_SPACE_BYTES = 256_000_000
#: CPU seconds a worker may use on one query past SQL_CPU_TIME_LIMIT_S before the kernel stops it
#: (``RLIMIT_CPU``): a backstop for a worker whose caller is gone.
SQL_WORKER_CPU_GRACE_S = 2
#: Seconds of wall clock a new worker has to start (import this module and say it is ready): a
#: hang guard (it takes a tenth of a second on an idle machine, and tens of seconds beside busy
#: processes of a higher priority).
SQL_WORKER_START_TIMEOUT_S = 600.0
#: The most queries run at once (one worker each); more callers wait for a free worker.
SQL_MAX_WORKERS = 4
#: The most idle workers kept for the next queries; the others are stopped.
SQL_MAX_IDLE_WORKERS = 2
#: A worker whose resident memory is past this many bytes after a query is stopped, not kept.
SQL_WORKER_RECYCLE_RSS_BYTES = 96_000_000

_DROPPED = object()  # stands for a text value left out because the result was already full


def _json_value(value: object) -> object:
    """A SQLite value as JSON can hold it: BLOBs as their size and first bytes in hex; infinite
    and NaN floats as the strings ``"Infinity"``, ``"-Infinity"``, ``"NaN"``."""
    if isinstance(value, bytes):
        return {"blob_bytes": len(value), "hex": value[:SQL_BLOB_PREVIEW_BYTES].hex()}
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def _sql_error(reason: str) -> str:
    return json.dumps({"error": f"query refused or failed: {reason}"})


def _time_limit_reason(cpu_time_limit_s: float) -> str:
    return f"the query used more than {cpu_time_limit_s:g} s of CPU time"


def run_query(query: str, max_rows: int = 50) -> str:
    """Run ``query`` on the reference database in a worker process, within every limit here.

    Args:
        query: one SQL statement (only reading is allowed: :data:`SQL_ALLOWED_FUNCTIONS`, the
            authorizer), at most :data:`SQL_MAX_QUERY_BYTES` bytes of UTF-8.
        max_rows: the most rows to return, 1 to :data:`MAX_SQL_ROWS`.

    Returns:
        JSON text: ``{"columns": [...], "rows": [...], "row_count": N, "truncated": bool}``, one
        row per line, or ``{"error": "..."}`` when the query is refused, fails, runs past
        :data:`SQL_CPU_TIME_LIMIT_S` seconds of CPU time or needs more memory than a worker may use. Never raises
        for anything a query does.
    """
    if not 1 <= max_rows <= MAX_SQL_ROWS:
        return json.dumps({"error": f"max_rows must be between 1 and {MAX_SQL_ROWS}"})
    if not isinstance(query, str):
        return _sql_error("the query must be a string")
    query_bytes = len(query.encode("utf-8", "surrogatepass"))
    if query_bytes > SQL_MAX_QUERY_BYTES:
        return _sql_error(
            f"the query is {query_bytes:,} bytes long; run_sql takes at most "
            f"{SQL_MAX_QUERY_BYTES:,} bytes"
        )
    job = {
        "database": str(ensure_reference_db().resolve()),
        "query": query,
        "max_rows": max_rows,
        "cpu_time_limit_s": SQL_CPU_TIME_LIMIT_S,
        "max_result_chars": SQL_MAX_RESULT_CHARS,
        "max_value_bytes": SQL_MAX_VALUE_BYTES,
        "max_columns": SQL_MAX_COLUMNS,
        # SQLite's limits, read here so that a changed constant takes effect at the next query
        "limits": [
            [sqlite3.SQLITE_LIMIT_LENGTH, SQL_MAX_VALUE_BYTES],
            [sqlite3.SQLITE_LIMIT_COLUMN, SQL_MAX_COLUMNS],
            [sqlite3.SQLITE_LIMIT_SQL_LENGTH, SQL_MAX_QUERY_BYTES],
            [sqlite3.SQLITE_LIMIT_EXPR_DEPTH, SQL_MAX_EXPR_DEPTH],
            [sqlite3.SQLITE_LIMIT_COMPOUND_SELECT, SQL_MAX_COMPOUND_SELECTS],
            [sqlite3.SQLITE_LIMIT_FUNCTION_ARG, SQL_MAX_FUNCTION_ARGS],
            [sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, SQL_MAX_LIKE_PATTERN_BYTES],
            [sqlite3.SQLITE_LIMIT_VDBE_OP, SQL_MAX_PROGRAM_OPS],
            [sqlite3.SQLITE_LIMIT_ATTACHED, SQL_MAX_ATTACHED_DATABASES],
            [sqlite3.SQLITE_LIMIT_WORKER_THREADS, SQL_MAX_SORTER_THREADS],
        ],
    }
    return _SQL_WORKERS.run(job)


def shutdown_sql_workers() -> None:
    """Stop every run_sql worker process of this process and wait for each to end (idle ones and
    busy ones alike; a query in progress returns an error). The next query starts a new worker.
    Called at exit; tests call it to read the workers' peak memory from
    ``getrusage(RUSAGE_CHILDREN)``."""
    _SQL_WORKERS.shutdown()


# -- run_sql: the caller's side -----------------------------------------------------------------


class _SqlWorker(WorkerProcess):
    """One worker process, running :func:`_sql_worker_main`, and its two pipes."""

    def __init__(self) -> None:
        """Start the worker and wait until it is ready.

        Raises:
            OSError: the process cannot start, or did not say it was ready within
                SQL_WORKER_START_TIMEOUT_S seconds (it is killed).
        """
        super().__init__(
            "helpers.tooling.sql_sandbox",
            "_sql_worker_main",
            what="the run_sql worker process",
            start_timeout_s=SQL_WORKER_START_TIMEOUT_S,
        )

    def ask(self, job: dict[str, Any]) -> dict[str, Any] | str:
        """Send ``job`` and return the worker's reply, or why the worker was given up on (a
        ``str``): it used SQL_WORKER_CPU_GRACE_S more CPU seconds than the query's limit (the
        kernel would stop it at the next whole second anyway), it used none for
        SQL_IDLE_LIMIT_S seconds (a query always works: a worker that does not is stuck), or,
        where ``/proc`` is missing, SQL_HANG_GUARD_S seconds of wall clock passed.

        Raises:
            BrokenPipeError: the worker was gone before it got the job.
            EOFError: the worker ended before it replied.
        """
        write_frame(self.to_worker, json.dumps(job).encode("ascii"))  # lone surrogates escaped
        watch = WorkWatch(self.pid)
        watch.start()
        guard = time.monotonic() + SQL_HANG_GUARD_S
        with selectors.DefaultSelector() as selector:
            selector.register(self.from_worker, selectors.EVENT_READ)
            while not selector.select(SQL_WATCH_EVERY_S):
                cpu, idle_s = watch.look()
                if cpu is not None and cpu > job["cpu_time_limit_s"] + SQL_WORKER_CPU_GRACE_S:
                    return _time_limit_reason(job["cpu_time_limit_s"])
                if cpu is not None and idle_s > SQL_IDLE_LIMIT_S:
                    return f"the run_sql worker process did no work for {SQL_IDLE_LIMIT_S:g} s"
                if cpu is None and time.monotonic() > guard:
                    return (
                        f"the run_sql worker process gave no answer within its hang guard of "
                        f"{SQL_HANG_GUARD_S:g} s"
                    )
        # the reply, once it starts, is read whole (within a hang guard)
        reply = read_frame(self.from_worker, time.monotonic() + SQL_HANG_GUARD_S)
        if reply is None:
            return f"the run_sql worker's reply did not end within {SQL_HANG_GUARD_S:g} s"
        answer: dict[str, Any] = json.loads(reply)
        return answer


class _SqlWorkerPool:
    """The run_sql workers of this process: at most SQL_MAX_WORKERS at work, up to
    SQL_MAX_IDLE_WORKERS idle ones kept for the next queries."""

    def __init__(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(SQL_MAX_WORKERS)
        self._idle: list[_SqlWorker] = []
        self._live: set[_SqlWorker] = set()

    def _take(self) -> tuple[_SqlWorker, bool]:
        """An idle worker (and True), or a new one (and False). Raises OSError (see
        :class:`_SqlWorker`)."""
        with self._lock:
            if self._idle:
                return self._idle.pop(), True
        worker = _SqlWorker()
        with self._lock:
            self._live.add(worker)
        return worker, False

    def _drop(self, worker: _SqlWorker) -> None:
        with self._lock:
            self._live.discard(worker)
        worker.kill()

    def _give_back(self, worker: _SqlWorker, rss_bytes: int) -> None:
        with self._lock:
            keep = (
                worker in self._live
                and len(self._idle) < SQL_MAX_IDLE_WORKERS
                and rss_bytes <= SQL_WORKER_RECYCLE_RSS_BYTES
            )
            if keep:
                self._idle.append(worker)
        if not keep:
            self._drop(worker)

    def run(self, job: dict[str, Any]) -> str:
        """Run ``job`` (see :func:`run_sql`) in a worker and return run_sql's result: the
        worker's output, or an error when the worker cannot start, is stopped at the time limit
        or ends before it replies."""
        if os.getpid() != self._pid:  # a forked child: the parent's workers are not ours
            self.__init__()  # type: ignore[misc]
        with self._slots:
            while True:  # a new worker ends the loop; an idle one may have ended meanwhile
                try:
                    worker, reused = self._take()
                except OSError as exc:
                    return _sql_error(str(exc))
                try:
                    reply = worker.ask(job)
                except BrokenPipeError:
                    self._drop(worker)
                    if reused:
                        continue  # an idle worker had ended (killed from outside): a new one
                    return _sql_error("the run_sql worker process ended before it got the query")
                except EOFError:
                    status = worker.exit_status()
                    self._drop(worker)
                    if status == -signal.SIGXCPU:  # RLIMIT_CPU, inside one long function call
                        return _sql_error(
                            _time_limit_reason(job["cpu_time_limit_s"]) + " and was stopped"
                        )
                    return _sql_error(
                        f"the run_sql worker process ended while running the query (exit "
                        f"status {status}); the query may need more than the "
                        f"{SQL_WORKER_ADDRESS_SPACE_BYTES:,} bytes of memory a worker may use"
                    )
                if isinstance(reply, str):
                    self._drop(worker)
                    return _sql_error(reply + " and was stopped")
                self._give_back(worker, reply["rss_bytes"])
                return str(reply["output"])

    def shutdown(self) -> None:
        """Kill every worker of this process (see :func:`shutdown_sql_workers`)."""
        with self._lock:
            workers = list(self._live) if os.getpid() == self._pid else []
            self._live.clear()
            self._idle.clear()
        for worker in workers:
            worker.kill()


_SQL_WORKERS = _SqlWorkerPool()
atexit.register(shutdown_sql_workers)


# -- run_sql: the worker's side -----------------------------------------------------------------


class _SqlGate:
    """The authorizer of one query: reading actions only, and only allow-listed functions. It
    remembers the first function it refused, for the error message."""

    def __init__(self) -> None:
        self.refused_function: str | None = None

    def __call__(self, action: int, arg1: str | None, arg2: str | None, *_rest: str | None) -> int:
        if action not in _ALLOWED_SQL_ACTIONS:
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() not in SQL_ALLOWED_FUNCTIONS:
            self.refused_function = self.refused_function or arg2
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK


class _TextBudget:
    """The connection's ``text_factory``: decodes a TEXT value only while the row being fetched
    still fits the result's budget, in characters; past it, every TEXT value of the row becomes
    ``_DROPPED`` (its bytes are freed at once) and ``overflowed`` is set. So a row never holds
    more decoded text than the budget, however long its values are."""

    def __init__(self) -> None:
        self.remaining_chars = 0
        self.overflowed = False

    def open_row(self, budget_chars: int) -> None:
        """Start a row that may add ``budget_chars`` characters to the result."""
        self.remaining_chars = budget_chars
        self.overflowed = False

    def __call__(self, raw: bytes) -> object:
        # a value of n UTF-8 bytes has at least n / 4 characters, and JSON adds 2 quotes
        if self.overflowed or len(raw) // 4 + 2 > self.remaining_chars:
            self.overflowed = True
            return _DROPPED
        text = raw.decode("utf-8", "replace")
        self.remaining_chars -= len(text) + 2
        if self.remaining_chars < 0:
            self.overflowed = True
            return _DROPPED
        return text


def _fetch_lines(
    cursor: sqlite3.Cursor, budget: _TextBudget, max_rows: int, max_result_chars: int
) -> tuple[list[str], bool]:
    """The result's rows as JSON lines (two spaces, then the row as a JSON array), fetched one at
    a time, and whether rows were left out (past ``max_rows``, or past ``max_result_chars``
    characters counting ``",\\n"`` between lines)."""
    lines: list[str] = []
    size = 0
    while True:
        # the row after the last one wanted is fetched only to learn that it exists
        budget.open_row(0 if len(lines) == max_rows else max_result_chars - size - len("  []"))
        row = cursor.fetchone()
        if row is None:
            return lines, False
        if len(lines) == max_rows or budget.overflowed:
            return lines, True
        line = "  " + json.dumps([_json_value(v) for v in row], ensure_ascii=False)
        del row  # its BLOBs (up to SQL_MAX_COLUMNS MB) are freed before the next row is fetched
        if size + len(line) > max_result_chars:
            return lines, True
        lines.append(line)
        size += len(line) + 2


def _failure_reason(exc: BaseException, gate: _SqlGate, job: dict[str, Any]) -> str:
    """Why a query failed, in words for the model."""
    reason = str(exc)
    if isinstance(exc, MemoryError) or "out of memory" in reason:
        return (
            "out of memory: the query needs more memory than run_sql allows "
            f"({SQL_WORKER_HEAP_BYTES:,} bytes for SQLite, {SQL_WORKER_ADDRESS_SPACE_BYTES:,} "
            "bytes for its worker process in all)"
        )
    if gate.refused_function is not None:
        return (
            f"the SQL function {gate.refused_function}() is not allowed in run_sql (ordinary "
            "text, number, date and time, JSON-reading, aggregate and window functions are)"
        )
    if "not authorized" in reason:
        return reason + " (only reading SELECT queries are allowed)"
    if reason == "interrupted":
        return _time_limit_reason(job["cpu_time_limit_s"]) + " and was stopped"
    if "too big" in reason:
        return reason + f" (a value may hold at most {job['max_value_bytes']:,} bytes)"
    if "too many columns" in reason:
        return reason + f" (a result may have at most {job['max_columns']} columns)"
    return reason


def _query_in_worker(job: dict[str, Any]) -> str:
    """Run one job of :func:`run_sql` on a fresh read-only connection and return run_sql's
    result (its JSON text). Runs in a worker process."""
    # the limit counts the worker's CPU time (all of it goes to this query), not the wall clock
    deadline = time.process_time() + job["cpu_time_limit_s"]
    gate, budget = _SqlGate(), _TextBudget()
    try:
        db = sqlite3.connect(Path(job["database"]).as_uri() + "?mode=ro", uri=True)
    except sqlite3.Error as exc:
        return _sql_error(str(exc))
    try:
        db.execute("PRAGMA temp_store = MEMORY")  # sorts and temporary tables count in the heap
        for category, value in job["limits"]:
            db.setlimit(category, value)
        db.set_authorizer(gate)
        db.set_progress_handler(lambda: int(time.process_time() > deadline), SQL_PROGRESS_EVERY_OPS)
        db.text_factory = budget
        cursor = db.execute(job["query"])
        columns = json.dumps([d[0] for d in cursor.description or []], ensure_ascii=False)
        # the cap counts everything returned: the column names (as JSON, escapes included) and
        # the frame around the rows too, with room for the longest row count
        frame = len(_result_frame(columns, "", job["max_rows"], truncated=False))
        if frame > job["max_result_chars"]:
            return _sql_error(
                f"the column names alone are {len(columns):,} characters as JSON, over run_sql's "
                f"{job['max_result_chars']:,}-character result: name the columns (AS x)"
            )
        lines, truncated = _fetch_lines(
            cursor, budget, job["max_rows"], job["max_result_chars"] - frame
        )
    except (sqlite3.Error, sqlite3.Warning, MemoryError, ValueError) as exc:
        return _sql_error(_failure_reason(exc, gate, job))
    finally:
        db.close()
    # one row per line: still valid JSON, and a preview or a line grep shows whole rows
    return _result_frame(columns, ",\n".join(lines), len(lines), truncated=truncated)


def _result_frame(columns_json: str, body: str, row_count: int, *, truncated: bool) -> str:
    """run_sql's result text: the column names (JSON), the rows' lines, the count, the flag."""
    return (
        f'{{"columns": {columns_json}, "rows": [\n{body}\n], '
        f'"row_count": {row_count}, "truncated": {"true" if truncated else "false"}}}'
    )


def _sql_worker_main() -> None:
    """The body of a worker process: limit its memory, say it is ready, then answer one job at
    a time (length-prefixed JSON on stdin, length-prefixed JSON ``{"output": ..., "rss_bytes":
    ...}`` on stdout) until stdin closes."""
    import resource

    replies = worker_replies()
    set_limit(resource.RLIMIT_AS, SQL_WORKER_ADDRESS_SPACE_BYTES)
    setup = sqlite3.connect(":memory:")
    setup.execute(f"PRAGMA hard_heap_limit = {int(SQL_WORKER_HEAP_BYTES)}")  # for the process
    setup.close()
    write_frame(replies, WORKER_READY)
    while True:
        job = next_job(SQL_WORKER_CPU_GRACE_S)
        if job is None:
            return
        try:
            output = _query_in_worker(job)
        except Exception as exc:  # a bug here must not end the worker: say what it was
            output = _sql_error(f"{type(exc).__name__}: {exc}")
        write_frame(replies, json.dumps({"output": output, "rss_bytes": rss_bytes()}).encode())
