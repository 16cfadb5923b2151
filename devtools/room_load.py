"""A room of thirty on one PostgreSQL, measured (``make bench``): peak connections against the
room's budget, each store operation's latency, and errors.

Thirty kernels running notebooks do not fit two cores, so each attendee here is a lighter
client: a process of its own (as each attendee's kernel is) with the store URL the hub gives it
(:func:`helpers.course.room.provision_attendee`: the attendee's bounded role), doing what a
turn does to the store, :data:`TURNS_PER_ATTENDEE` times: open a thread, log three tool outputs
(10 KB, 1 KB, 100 KB), read one back by its reference and a 200-character slice of another,
record a checkpoint run. All start together; a monitor counts the server's connections every
20 ms. With the room's settings (:data:`helpers.course.room.ATTENDEE_CONNECTION_LIMIT`, the
store holding no idle connection) the peak stays within
:func:`helpers.course.room.connection_budget` and every operation succeeds on PostgreSQL's
default ``max_connections`` of 100.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import statistics
import threading
import time
from typing import Any

from helpers.course.room import admin_connection, connection_budget, provision_attendee

#: Attendees of the bench's room.
ROOM_LOAD_ATTENDEES = 30
#: Turns each attendee's client runs.
TURNS_PER_ATTENDEE = 20
#: The outputs one turn logs, in characters.
OUTPUT_SIZES_CHARS = (10_000, 1_000, 100_000)
#: How often the monitor counts connections, in seconds.
MONITOR_EVERY_S = 0.02


def attendee_client(url: str, name: str, turns: int) -> dict[str, Any]:
    """One attendee's client: ``turns`` turns against their store ``url``. Returns
    ``{"ms": [each operation's milliseconds], "turn_ms": [...], "errors": [...]}``; an error
    is recorded (its type and first words) and the client goes on."""
    from helpers.tooling.store import ToolOutputStore

    latencies: list[float] = []
    turn_ms: list[float] = []
    errors: list[str] = []
    store = ToolOutputStore(url)

    def timed(operation: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return operation(*args, **kwargs)
        except Exception as exc:  # measured, never fatal: the room goes on
            errors.append(f"{type(exc).__name__}: {' '.join(str(exc).split())[:120]}")
            return None
        finally:
            latencies.append((time.perf_counter() - started) * 1e3)

    for turn in range(turns):
        started = time.perf_counter()
        thread = f"{name}-turn-{turn}"
        timed(store.ensure_thread, thread)
        rows = [
            timed(store.log_tool, thread, f"call_{k}", "get_page", {"k": k}, "x" * size)
            for k, size in enumerate(OUTPUT_SIZES_CHARS)
        ]
        if rows[0] is not None:
            timed(store.get_by_ref, rows[0].ref_id)
        if rows[2] is not None:
            timed(store.read_range, rows[2].id, 50_000, 200)
        timed(store.log_checkpoint, name, "04", 1 + turn % 4, passed=True)
        turn_ms.append((time.perf_counter() - started) * 1e3)
    store.close()
    return {"ms": latencies, "turn_ms": turn_ms, "errors": errors}


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


def run_room_load(
    room_url: str, attendees: int = ROOM_LOAD_ATTENDEES, turns: int = TURNS_PER_ATTENDEE
) -> dict[str, Any]:
    """``attendees`` clients at once on the room of ``room_url`` (the admin's URL).

    Returns:
        ``attendees``, ``budget`` (:func:`~helpers.course.room.connection_budget`),
        ``max_connections`` (the server's), ``peak_connections`` (all the server's at once, the
        monitor's own included) and ``peak_attendee_connections``, ``op_ms`` and ``turn_ms``
        (``median`` and ``p95``), ``operations``, ``errors`` (their first ten and ``error_count``),
        ``wall_s``.

    Raises:
        ValueError: ``room_url`` is not a PostgreSQL URL.
        psycopg.Error: the room's database cannot be reached.
    """
    stamp = time.strftime("%H%M%S")
    names = [f"load{stamp}-{k + 1:02d}" for k in range(attendees)]
    urls = {name: provision_attendee(room_url, name) for name in names}
    peaks = {"all": 0, "attendees": 0}
    stop = threading.Event()

    with admin_connection(room_url) as monitor:
        monitor.autocommit = True  # a fresh look at pg_stat_activity each time
        max_connections = int(monitor.execute("SHOW max_connections").fetchone()[0])

        def watch() -> None:
            while not stop.is_set():
                counted = monitor.execute(
                    "SELECT count(*), count(*) FILTER (WHERE pg_catalog.starts_with("
                    "usename, 'attendee_')) FROM pg_catalog.pg_stat_activity "
                    "WHERE backend_type = 'client backend'"
                ).fetchone()
                peaks["all"] = max(peaks["all"], int(counted[0]))
                peaks["attendees"] = max(peaks["attendees"], int(counted[1]))
                time.sleep(MONITOR_EVERY_S)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        started = time.perf_counter()
        context = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(attendees, mp_context=context) as pool:
            futures = [pool.submit(attendee_client, urls[n], n, turns) for n in names]
            results = [f.result() for f in futures]
        wall = time.perf_counter() - started
        stop.set()
        watcher.join()
    op_ms = [ms for r in results for ms in r["ms"]]
    turn_ms = [ms for r in results for ms in r["turn_ms"]]
    errors = [e for r in results for e in r["errors"]]
    return {
        "attendees": attendees,
        "turns": turns,
        "budget": connection_budget(attendees),
        "max_connections": max_connections,
        "peak_connections": peaks["all"],
        "peak_attendee_connections": peaks["attendees"],
        "operations": len(op_ms),
        "op_ms": {"median": statistics.median(op_ms), "p95": _percentile(op_ms, 0.95)},
        "turn_ms": {"median": statistics.median(turn_ms), "p95": _percentile(turn_ms, 0.95)},
        "error_count": len(errors),
        "errors": errors[:10],
        "wall_s": wall,
    }


def room_load_markdown(result: dict[str, Any]) -> str:
    """The bench's sentence on the room of thirty."""
    return (
        f"{result['attendees']} attendees' clients at once on one PostgreSQL "
        f"(max_connections {result['max_connections']}), {result['turns']} turns each "
        f"({result['operations']:,} store operations): peak {result['peak_connections']} "
        f"connections ({result['peak_attendee_connections']} of attendees; the room's budget is "
        f"{result['budget']}), each operation {result['op_ms']['median']:.1f} ms median and "
        f"{result['op_ms']['p95']:.1f} ms at the 95th percentile, a turn "
        f"{result['turn_ms']['median']:.0f} ms median and {result['turn_ms']['p95']:.0f} ms at "
        f"the 95th percentile; {result['error_count']} errors."
    )


if __name__ == "__main__":
    import json
    import os
    import sys

    outcome = run_room_load(os.environ["WORKBOOK_BENCH_ROOM_URL"])
    print(json.dumps(outcome, indent=2))
    print(room_load_markdown(outcome))
    sys.exit(1 if outcome["error_count"] else 0)
