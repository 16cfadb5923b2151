"""run_sql bounded by construction: allow-listed functions, SQLite's limits, rows fetched one at a
time against the result's budget, and a worker process that is killed at the time limit and
cannot hold more than its address-space limit.

Every attack runs on the real reference database. Peak memory is read from the kernel: the attack
runs in a fresh Python process, which stops its workers and then reads
``getrusage(RUSAGE_CHILDREN).ru_maxrss`` (the largest worker) and ``RUSAGE_SELF`` (itself).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from helpers.base.paths import PROJECT_ROOT, reference_db_path
from helpers.tooling import sql_sandbox as sandbox
from helpers.tooling.sql_sandbox import (
    SQL_MAX_COLUMNS,
    SQL_MAX_COMPOUND_SELECTS,
    SQL_MAX_LIKE_PATTERN_BYTES,
    SQL_MAX_QUERY_BYTES,
    SQL_MAX_RESULT_CHARS,
    SQL_MAX_VALUE_BYTES,
    SQL_WORKER_ADDRESS_SPACE_BYTES,
)
from helpers.tooling.tools import run_sql

#: The most memory an attack may hold, in bytes, in the worker and in the caller.
PEAK_MEMORY_LIMIT_BYTES = 256_000_000
#: ``ru_maxrss`` is in kilobytes on Linux, in bytes on macOS.
_MAXRSS_UNIT_BYTES = 1 if sys.platform == "darwin" else 1024

_MEASURE = """
import json, resource, sys
from helpers.tooling.sql_sandbox import shutdown_sql_workers
from helpers.tooling.tools import run_sql

def caller_peak_kb():
    # VmHWM: this process image's own peak (ru_maxrss of a child of a large process starts at
    # the parent's size, and Linux keeps it across exec)
    try:
        with open("/proc/self/status") as status:
            return next(int(l.split()[1]) for l in status if l.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

query, max_rows = json.loads(sys.stdin.read())
result = run_sql(query, max_rows)
shutdown_sql_workers()  # the workers end and are waited for: RUSAGE_CHILDREN now counts them
print(json.dumps({
    "result": json.loads(result),
    "worker_maxrss": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    "caller_maxrss": caller_peak_kb(),
}))
"""


def _run_measured(query: str, max_rows: int = 50) -> tuple[dict, int, int]:
    """run_sql's parsed result in a fresh process, with the peak resident memory of its largest
    worker and of the process itself, in bytes."""
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE],
        input=json.dumps([query, max_rows]),
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        env=os.environ.copy(),
        check=True,
    )
    report = json.loads(done.stdout)
    return (
        report["result"],
        report["worker_maxrss"] * _MAXRSS_UNIT_BYTES,
        report["caller_maxrss"] * _MAXRSS_UNIT_BYTES,
    )


def _children_cpu_s() -> float:
    """CPU time of this process's reaped children, in seconds (user and system)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _text(i: int, chars: int = 990_000) -> str:
    """SQL for a text value of ``chars`` copies of one letter (the letter differs with ``i``)."""
    return f"printf('%.*c', {chars}, '{chr(97 + i % 26)}')"


# -- the same results as before, for ordinary queries ------------------------------------------


def _as_before(query: str, max_rows: int = 50) -> str:
    """run_sql's result as the in-process version built it (fetchmany, then one JSON line per
    row), straight from the reference database file."""
    db = sqlite3.connect(f"file:{reference_db_path()}?mode=ro", uri=True)
    try:
        cursor = db.execute(query)
        columns = [d[0] for d in cursor.description]
        rows = cursor.fetchmany(max_rows + 1)
    finally:
        db.close()
    lines = ["  " + json.dumps(list(row), ensure_ascii=False) for row in rows[:max_rows]]
    return (
        f'{{"columns": {json.dumps(columns, ensure_ascii=False)}, "rows": [\n'
        + ",\n".join(lines)
        + f'\n], "row_count": {len(lines)}, "truncated": {json.dumps(len(rows) > max_rows)}}}'
    )


@pytest.mark.parametrize(
    ("query", "max_rows"),
    [
        (
            "SELECT code, name, type FROM subdivisions WHERE country_alpha_2 = 'NO' ORDER BY code",
            50,
        ),
        ("SELECT code, name FROM subdivisions ORDER BY code", 1000),
        (
            "SELECT c.name, count(*) AS n, group_concat(s.type, '|') FROM countries c "
            "JOIN subdivisions s ON s.country_alpha_2 = c.alpha_2 GROUP BY c.alpha_2 "
            "ORDER BY n DESC, c.name LIMIT 20",
            50,
        ),
        (
            "SELECT alpha_2, upper(substr(name, 1, 3)), length(name), instr(name, 'a'), "
            "coalesce(common_name, official_name, name), round(avg(length(name)) OVER (), 2), "
            "row_number() OVER (ORDER BY name), json_extract(json_object('n', name), '$.n'), "
            "date('2024-01-31', '+1 month'), typeof(numeric), iif(name LIKE 'N%', 1, 0) "
            "FROM countries WHERE name GLOB '[MN]*' ORDER BY name",
            100,
        ),
    ],
    ids=["norway", "a-thousand-rows", "aggregates", "functions"],
)
def test_ordinary_queries_give_the_same_results_as_before(query: str, max_rows: int) -> None:
    result = run_sql(query, max_rows)
    assert result == _as_before(query, max_rows)
    data = json.loads(result)
    assert data["row_count"] > 0 and "error" not in data


def test_norway_has_its_counties() -> None:
    data = json.loads(
        run_sql("SELECT code, name FROM subdivisions WHERE country_alpha_2 = 'NO' ORDER BY code")
    )
    assert ["NO-03", "Oslo"] in data["rows"] and data["truncated"] is False
    assert all(code.startswith("NO-") for code, _ in data["rows"])


def test_text_that_is_not_utf8_is_shown_with_replacement_characters() -> None:
    data = json.loads(run_sql("SELECT CAST(x'ff41' AS TEXT)"))
    assert data["rows"] == [["\ufffdA"]]


# -- functions: an allow-list ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "function"),
    [
        ("SELECT fts3_tokenizer('simple')", "fts3_tokenizer"),
        ("SELECT load_extension('/tmp/evil')", "load_extension"),
        ("SELECT zeroblob(2000000000)", "zeroblob"),
        ("SELECT randomblob(2000000000)", "randomblob"),
        ("SELECT instr(hex(zeroblob(500000)) || 'x', 'y' || hex(zeroblob(400000)))", "zeroblob"),
        ("SELECT sqlite_compileoption_get(0)", "sqlite_compileoption_get"),
        ("SELECT json_set('{}', '$.a', 1)", "json_set"),
        ("SELECT name FROM countries WHERE fts5_source_id() IS NULL", "fts5_source_id"),
    ],
)
def test_functions_outside_the_allow_list_are_refused_by_name(query: str, function: str) -> None:
    result = json.loads(run_sql(query))
    assert set(result) == {"error"}
    assert f"the SQL function {function}() is not allowed" in result["error"]


def test_the_pointer_of_fts3_tokenizer_never_comes_back() -> None:
    result = run_sql("SELECT fts3_tokenizer('simple'), fts3_tokenizer('porter')")
    assert "blob_bytes" not in result and "not allowed" in result


def test_every_allowed_function_exists_in_this_sqlite() -> None:
    db = sqlite3.connect(":memory:")
    known = {name for (name,) in db.execute("SELECT name FROM pragma_function_list")}
    db.close()
    assert known >= sandbox.SQL_ALLOWED_FUNCTIONS


# -- SQLite's limits -------------------------------------------------------------------------


def test_sqlite_limits_refuse_oversized_queries() -> None:
    too_wide = "SELECT " + ", ".join(["1"] * (SQL_MAX_COLUMNS + 1))
    assert f"at most {SQL_MAX_COLUMNS} columns" in json.loads(run_sql(too_wide))["error"]
    assert json.loads(run_sql("SELECT " + ", ".join(["1"] * SQL_MAX_COLUMNS)))["row_count"] == 1

    too_long = "SELECT '" + "x" * SQL_MAX_QUERY_BYTES + "'"
    error = json.loads(run_sql(too_long))["error"]
    assert f"at most {SQL_MAX_QUERY_BYTES:,} bytes" in error

    compound = " UNION ALL ".join(["SELECT 1"] * (SQL_MAX_COMPOUND_SELECTS + 1))
    assert "too many terms in compound SELECT" in json.loads(run_sql(compound))["error"]

    pattern = "'" + "%a" * SQL_MAX_LIKE_PATTERN_BYTES + "'"
    error = json.loads(run_sql(f"SELECT name FROM countries WHERE name LIKE {pattern}"))["error"]
    assert "LIKE or GLOB pattern too complex" in error

    big = f"SELECT length({_text(0, SQL_MAX_VALUE_BYTES + 1)})"
    assert json.loads(run_sql(big))["rows"] == [[None]]  # printf gives NULL past the limit
    half = SQL_MAX_VALUE_BYTES // 2 + 1
    concat = f"SELECT length({_text(0, half)} || {_text(1, half)})"
    assert "too big" in json.loads(run_sql(concat))["error"]


def test_workers_run_with_an_address_space_limit() -> None:
    run_sql("SELECT 1")
    workers = list(sandbox._SQL_WORKERS._idle)
    assert workers
    limits = Path(f"/proc/{workers[0].process.pid}/limits")
    if not limits.exists():
        pytest.skip("no /proc on this system")
    line = next(x for x in limits.read_text().splitlines() if x.startswith("Max address space"))
    assert line.split()[3:5] == [str(SQL_WORKER_ADDRESS_SPACE_BYTES)] * 2


# -- memory: each attack measured --------------------------------------------------------------

_ATTACKS = {
    # the reported attacks: 1,000 zeroblob columns in one row; 2,000 columns in 11 rows
    "zeroblob-1000-columns": ("SELECT " + ", ".join(["zeroblob(999999)"] * 1000), 50, "error"),
    "zeroblob-2000-columns-11-rows": (
        "SELECT " + ", ".join(["zeroblob(999999)"] * 2000) + " FROM countries LIMIT 11",
        50,
        "error",
    ),
    # the same without zeroblob, at the column limit: SQLite's heap limit stops them
    "text-64-columns": (
        "SELECT " + ", ".join(_text(i) for i in range(SQL_MAX_COLUMNS)),
        50,
        "out of memory",
    ),
    "blob-64-columns-11-rows": (
        "SELECT "
        + ", ".join(f"CAST({_text(i)} || name AS BLOB)" for i in range(SQL_MAX_COLUMNS))
        + " FROM countries LIMIT 11",
        50,
        "out of memory",
    ),
    # rows SQLite can build: the result's budget keeps at most SQL_MAX_RESULT_CHARS of text
    "blob-30-columns-11-rows": (
        "SELECT "
        + ", ".join(f"CAST({_text(i)} || name AS BLOB)" for i in range(30))
        + " FROM countries LIMIT 11",
        1000,
        "rows",
    ),
    "one-row-of-20-megabytes": (
        "SELECT " + ", ".join(_text(i) for i in range(20)),
        50,
        "truncated",
    ),
    "a-megabyte-per-row": (f"SELECT {_text(0)} || code FROM subdivisions", 10_000, "truncated"),
    # a hundred constant values of a megabyte, each held for the whole query
    "100-constants": (
        "SELECT " + " + ".join(f"length({_text(i)} || '{i}')" for i in range(100)),
        50,
        "out of memory",
    ),
    # a sort of 5,000 one-megabyte rows (temporary storage is in SQLite's heap)
    "sorted-megabytes": (
        f"SELECT {_text(0)} || code AS v FROM subdivisions ORDER BY v DESC",
        10,
        "out of memory",
    ),
}


@pytest.mark.parametrize(("query", "max_rows", "outcome"), _ATTACKS.values(), ids=_ATTACKS)
def test_no_attack_holds_more_than_256_mb(query: str, max_rows: int, outcome: str) -> None:
    result, worker_peak, caller_peak = _run_measured(query, max_rows)
    assert worker_peak < PEAK_MEMORY_LIMIT_BYTES, f"worker peak {worker_peak:,} bytes"
    assert caller_peak < PEAK_MEMORY_LIMIT_BYTES, f"caller peak {caller_peak:,} bytes"
    if outcome == "error":
        assert set(result) == {"error"}
    elif outcome == "out of memory":
        assert "out of memory" in result["error"]
    elif outcome == "truncated":
        assert result["truncated"] is True
        size = sum(len(json.dumps(row, ensure_ascii=False)) + 4 for row in result["rows"])
        assert size <= SQL_MAX_RESULT_CHARS
    else:
        assert result["row_count"] == 11 and result["truncated"] is False
        assert result["rows"][0][0]["blob_bytes"] > 990_000


def test_a_row_past_the_budget_is_left_out_whole() -> None:
    data = json.loads(run_sql("SELECT " + ", ".join(_text(i) for i in range(3))))
    assert data == {"columns": data["columns"], "rows": [], "row_count": 0, "truncated": True}
    rows = json.loads(run_sql(f"SELECT {_text(0)} || code FROM subdivisions", 10_000))
    assert rows["row_count"] == 2 and rows["truncated"] is True  # 2 x ~990,000 characters


@pytest.mark.parametrize(
    ("name", "copies"),
    [("n" * 90_000, 64), ("\x01" * 15_000, 64), ("n" * 30_000, 3), ("é" * 40_000, 40)],
    ids=["long-names", "control-character-names", "fits", "non-ascii"],
)
def test_the_result_cap_counts_the_column_names_too(name: str, copies: int) -> None:
    """``*`` repeats one long column name (the query holds it once) in every copy of a table:
    the names count against the result's cap like the rows, as JSON (escapes included)."""
    query = f'WITH t AS (SELECT 1 AS "{name}") SELECT * FROM ' + ", ".join(
        f"t AS t{k}" for k in range(copies)
    )
    result = run_sql(query)
    assert len(result) <= SQL_MAX_RESULT_CHARS
    data = json.loads(result)
    names_chars = len(json.dumps([name] * copies, ensure_ascii=False))
    if names_chars > SQL_MAX_RESULT_CHARS:
        assert "column names" in data["error"] and f"{names_chars:,}" in data["error"]
    else:
        assert data["columns"] == [name] * copies and data["row_count"] == 1


# -- time: one slow function call is stopped too -----------------------------------------------


def test_a_slow_function_call_is_stopped_at_the_time_limit() -> None:
    # instr() of a 400,000-character needle in a 1 MB haystack compares ~2 * 10^11 bytes: one
    # call runs for seconds, and no progress handler runs inside it; four of them run for tens.
    # The kernel stops the worker (RLIMIT_CPU) at the limit and its grace of CPU time: the
    # worker's CPU time is read from getrusage(RUSAGE_CHILDREN) once it is reaped (issue 47: the
    # limit counts the work, whatever the machine's load)
    haystack, needle = _text(0, 999_000), f"{_text(0, 400_000)} || 'b'"
    query = "SELECT " + " + ".join(f"instr({haystack} || '{i}', {needle})" for i in range(4))
    assert "error" not in json.loads(run_sql("SELECT 1"))  # a worker is ready
    limit_s, grace_s = sandbox.SQL_CPU_TIME_LIMIT_S, sandbox.SQL_WORKER_CPU_GRACE_S
    sandbox.shutdown_sql_workers()  # the idle worker reaped: its CPU time is counted before
    before = _children_cpu_s()
    result = json.loads(run_sql(query))
    used_s = _children_cpu_s() - before
    # RLIMIT_CPU is whole seconds, rounded up from what the worker had used before the query
    assert limit_s <= used_s < limit_s + grace_s + 2  # it ran until the limit, no further
    assert f"used more than {limit_s:g} s of CPU time" in result["error"]
    assert json.loads(run_sql("SELECT count(*) FROM countries"))["rows"][0][0] >= 249


def test_a_worker_that_died_while_idle_is_replaced() -> None:
    run_sql("SELECT 1")
    for worker in list(sandbox._SQL_WORKERS._idle):
        worker.process.kill()
        worker.process.wait()
    data = json.loads(run_sql("SELECT alpha_3 FROM countries WHERE alpha_2 = 'NO'"))
    assert data["rows"] == [["NOR"]]


def test_concurrent_queries_each_get_their_own_rows() -> None:
    codes = ["NO", "SE", "FI", "DK", "IS", "EE"]
    results: dict[str, list] = {}

    def ask(code: str) -> None:
        for _ in range(3):
            query = f"SELECT code FROM subdivisions WHERE country_alpha_2 = '{code}' ORDER BY code"
            results.setdefault(code, []).append(json.loads(run_sql(query, 500))["rows"])

    threads = [threading.Thread(target=ask, args=(code,)) for code in codes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for code in codes:
        first = results[code][0]
        assert first and all(row[0].startswith(f"{code}-") for row in first)
        assert results[code] == [first] * 3
