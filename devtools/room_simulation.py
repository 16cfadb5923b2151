"""A room, simulated: N attendees at once, each running notebooks 02-04 against one PostgreSQL.

Each attendee is a process of its own (as each JupyterHub server is) that runs the solution
notebooks in a kernel (nbclient), with the environment the hub gives it
(``deploy/jupyterhub_config.d/workbook.py``): ``WORKBOOK_DB_URL`` in its own schema of the room's
database, ``JUPYTERHUB_USER``, a run-time folder of its own. All start together. Then the room is
read back as the instructor reads it (:func:`helpers.course.room.room_progress`) and checked for
cross-talk: every attendee's schema holds that attendee's checkpoint runs and no one else's, the
same TODOs passed and the same number of threads as every other attendee.

``make bench`` runs it with 8 attendees against a throwaway PostgreSQL (tests/with_postgres.sh)
and reports each attendee's seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from helpers.course.room import attendee_schema, provision_attendee, room_progress
from helpers.course.student_notebooks import solution_notebooks, todo_numbers

#: The notebooks an attendee runs in the simulation.
ROOM_NOTEBOOKS = ("02", "03", "04")
#: Seconds one attendee's notebooks may take before the simulation gives up on them.
ATTENDEE_GUARD_S = 1_800


def run_attendee(notebooks: tuple[str, ...]) -> dict[str, float]:
    """Run the solution notebooks ``notebooks`` in this process's environment, one kernel each;
    returns the seconds each took.

    Raises:
        nbclient.exceptions.CellExecutionError: a cell failed.
    """
    import nbformat
    from nbclient import NotebookClient

    seconds = {}
    for path in solution_notebooks():
        if path.name[:2] not in notebooks:
            continue
        notebook = nbformat.read(path, as_version=4)
        started = time.perf_counter()
        NotebookClient(notebook, timeout=ATTENDEE_GUARD_S, kernel_name="python3").execute(
            cwd=os.environ.get("WORKBOOK_VAR_DIR") or None
        )
        seconds[path.name[:2]] = time.perf_counter() - started
    return seconds


def expected_passes(notebooks: tuple[str, ...]) -> list[str]:
    """The ``"NN.T"`` TODOs whose checkpoints the solution notebooks ``notebooks`` pass."""
    import nbformat

    return sorted(
        f"{path.name[:2]}.{todo}"
        for path in solution_notebooks()
        if path.name[:2] in notebooks
        for todo in todo_numbers(nbformat.read(path, as_version=4))
    )


def simulate_room(
    room_url: str, attendees: int = 8, notebooks: tuple[str, ...] = ROOM_NOTEBOOKS
) -> dict[str, Any]:
    """Run ``attendees`` attendees at once against the room's PostgreSQL ``room_url`` (the
    admin's URL; each attendee gets a role and a schema of its own, as on the hub; a database of
    an earlier simulation is fine: each run uses names of its own).

    Returns:
        ``attendees`` (name → ``{"seconds": {notebook: s}, "total_s": s}``), ``wall_s``,
        ``cross_talk`` (what was found in the wrong schema, or missing: empty when none) and
        ``passed`` (the TODOs each attendee's checkpoints passed).

    Raises:
        RuntimeError: an attendee's notebooks failed (its output is in the message).
    """
    stamp = time.strftime("%H%M%S")
    names = [f"sim{stamp}-{k + 1:02d}" for k in range(attendees)]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="workbook-room-") as folder:
        running = {}
        for name in names:
            var = Path(folder) / name
            var.mkdir()
            env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
            env |= {
                "WORKBOOK_DB_URL": provision_attendee(room_url, name),
                "JUPYTERHUB_USER": name,
                "WORKBOOK_VAR_DIR": str(var),
                "WORKBOOK_PROFILE": "offline",
            }
            running[name] = subprocess.Popen(
                [sys.executable, "-m", "devtools.room_simulation", "--attendee", *notebooks],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        results = {}
        for name, process in running.items():
            out, err = process.communicate(timeout=ATTENDEE_GUARD_S)
            if process.returncode != 0:
                raise RuntimeError(f"attendee {name} failed: {err[-2000:]}")
            seconds = json.loads(out.strip().splitlines()[-1])
            results[name] = {"seconds": seconds, "total_s": sum(seconds.values())}
    wall = time.perf_counter() - started
    return {
        "attendees": results,
        "wall_s": wall,
        **_read_back(room_url, names, notebooks),
    }


def _read_back(room_url: str, names: list[str], notebooks: tuple[str, ...]) -> dict[str, Any]:
    """The room as the instructor sees it, checked: each attendee's line read (no error), named
    for that attendee, with every expected TODO passed, and all attendees the same number of
    threads."""
    progress = room_progress(room_url)
    expected = expected_passes(notebooks)
    cross_talk, passed, threads = [], {}, set()
    for name in names:
        line = progress.get(attendee_schema(name))
        if line is None:
            cross_talk.append(f"{name}: no schema")
            continue
        if line.error or line.attendee != name:
            cross_talk.append(f"{name}'s line: {line.attendee!r}, {line.error or 'read'}")
        passed[name] = line.passed
        if line.passed != expected:
            cross_talk.append(f"{name} passed {line.passed}, expected {expected}")
        threads.add(line.threads)
    if len(threads) > 1:
        cross_talk.append(f"attendees hold different numbers of threads: {sorted(threads)}")
    return {"cross_talk": cross_talk, "passed": passed, "threads_each": sorted(threads)}


def room_markdown(result: dict[str, Any], machine: dict[str, Any]) -> str:
    """The bench's room block: attendees, wall time, seconds per attendee, cross-talk."""
    totals = sorted(a["total_s"] for a in result["attendees"].values())
    median = totals[len(totals) // 2]
    verdict = (
        "no cross-talk: each attendee's own role and schema held that attendee's checkpoint runs only, every "
        "attendee passed the same TODOs and holds the same number of threads"
        if not result["cross_talk"]
        else f"**cross-talk**: {'; '.join(result['cross_talk'])}"
    )
    return (
        f"{len(totals)} attendees at once, each running notebooks "
        f"{', '.join(ROOM_NOTEBOOKS)} (solutions, offline) in a kernel of its own against one "
        f"PostgreSQL database, a role and a schema each: {result['wall_s']:.0f} s for the room; per "
        f"attendee {totals[0]:.0f} s at best, {median:.0f} s median, {totals[-1]:.0f} s at "
        f"worst, on {machine['cpu']} ({machine['cores']} cores; every attendee shares them). "
        f"{verdict[0].upper()}{verdict[1:]}."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A simulated room, or one attendee of it.")
    parser.add_argument("--attendee", nargs="+", metavar="NN", help="(internal) run these")
    parser.add_argument(
        "--room-url",
        default=os.environ.get("WORKBOOK_ROOM_URL") or os.environ.get("WORKBOOK_BENCH_PG_URL"),
        help="the room's PostgreSQL URL (default $WORKBOOK_ROOM_URL, else $WORKBOOK_BENCH_PG_URL)",
    )
    parser.add_argument("--attendees", type=int, default=8)
    args = parser.parse_args(argv)
    if args.attendee:
        print(json.dumps(run_attendee(tuple(args.attendee))))
        return 0
    result = simulate_room(args.room_url, args.attendees)
    print(json.dumps(result, indent=2, default=str))
    return 1 if result["cross_talk"] else 0


if __name__ == "__main__":
    sys.exit(main())
