"""The benchmark behind ``make bench``: medians over repeated runs, with the machine named.

Speed goals live here, not in timed tests. Each figure is printed with its goal:

- box + unbox round trip (a real tool's output boxed into the store, then unboxed into another
  tool's argument) for 1 KB, 1 MB and 10 MB values;
- a 200-character slice of a 1 KB and of a 50 MB stored value, and their ratio (goal < 3×:
  reads cost O(slice), not O(value));
- ``log_tool`` throughput over 10,000 outputs (goal ≥ 2,000 rows/s on SQLite);
- one tool call whose argument is a 1 MB hostile text, per shape (goal < 1 s: linear scans);
- lookup by ``tool_call_id`` among 100,000 rows (goal < 1 ms);
- the offline run time of every solution notebook (goal: all of them under 180 s);
- tokens: the comparison's totals per strategy and their ratio to the floor;
- CPU seconds of the ``workbook`` command (user + system, of a child process): ``--help`` (goal
  < 0.3 s), ``ask --help`` and one offline ``ask`` turn, beside what bounds them: importing the
  ``openai`` SDK and SQLAlchemy, which a turn needs, in a bare interpreter.

- a room of thirty on a real JupyterHub and PostgreSQL (:func:`devtools.real_room.measure_room`,
  as root): the spawns under JupyterHub's default limit and the room's, the day's first burst,
  the kernels' starts, and ``workbook room progress`` (goal < 5 s of wall clock, < 3 s of CPU).

``python -m devtools.bench [--db-url URL] [--quick] [--out build/bench.json]``; with
``WORKBOOK_BENCH_PG_URL`` set, the store figures are measured on PostgreSQL too, and with
``WORKBOOK_BENCH_ROOM_URL`` (tests/with_postgres.sh sets both) the room.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from sqlalchemy import insert

from devtools.setup_timing import setup_markdown, time_lab_start
from helpers.context.policies import BoxPolicy
from helpers.context.strategies import LESSON_ROLES, build_policy, strategies_in_role
from helpers.loop.dispatch import dispatch
from helpers.store.schema import ToolOutput
from helpers.store.tool_outputs import ToolOutputStore
from helpers.text.escaping import for_rich
from helpers.tooling.registry import ToolContext, ToolRegistry, tool_from_function
from helpers.tooling.tools import default_registry


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            cpu = next(
                line.split(":", 1)[1].strip() for line in info if line.startswith("model name")
            )
    except (OSError, StopIteration):
        pass
    return {
        "platform": platform.platform(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
    }


def median_s(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``fn`` in seconds over ``repeat`` runs."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def round_trip_tools(values: dict[str, str], received: list[str]) -> ToolRegistry:
    """Two tools for round trips: ``produce(key)`` returns ``values[key]``; ``consume(text)``
    appends what it really received to ``received``."""

    def produce(key: str) -> str:
        """Return a stored benchmark value.

        Args:
            key: which value.
        """
        return values[key]

    def consume(text: str) -> str:
        """Receive a value.

        Args:
            text: the value.
        """
        received.append(text)
        return f"received {len(text)} chars"

    return ToolRegistry([tool_from_function(produce), tool_from_function(consume)])


def bench_round_trip(store: ToolOutputStore, size_bytes: int, repeat: int) -> float:
    """Median seconds for box + unbox of an ASCII value of ``size_bytes``."""
    values = {"v": ("0123456789abcdef" * (size_bytes // 16 + 1))[:size_bytes]}
    received: list[str] = []
    policy = BoxPolicy()
    tools = round_trip_tools(values, received).merged(policy.internal_tools())
    ctx = ToolContext(store=store, thread_id="bench_" + uuid.uuid4().hex)

    def once() -> None:
        call = uuid.uuid4().hex
        boxed = dispatch(f"p{call}", "produce", '{"key": "v"}', tools, policy, ctx)
        dispatch(f"c{call}", "consume", json.dumps({"text": boxed.result}), tools, policy, ctx)
        assert received.pop() == values["v"]

    return median_s(once, repeat)


#: Argument texts that made backtracking regexes slow, at any length ``n`` (characters asked):
#: code fences around long runs of spaces or tabs, runs of wrappers, scheme look-alikes, key-like
#: runs, truncation markers. ``tests/test_limits.py`` checks that their cost grows linearly.
HOSTILE_ARGUMENT_SHAPES: dict[str, Callable[[int], str]] = {
    "fence and spaces": lambda n: "```\n" + " " * n + "x``",
    "fence and tabs": lambda n: "```text\n" + "\t" * n + "``",
    "fences": lambda n: "```\n" * (n // 4),
    "backticks": lambda n: "`" * n,
    "quotes": lambda n: '"' * n,
    "schemes": lambda n: "internal:/" * (n // 10),
    "key-like": lambda n: "A" * n,
    "markers": lambda n: " ...[+1 chars. full output: fetch_tool_output(tool_call_id='" * (n // 60),
}


def hostile_argument(shape: str, json_chars: int) -> str:
    """The arguments JSON text ``{"text": …}`` of ``shape`` at about ``json_chars`` characters
    (JSON escapes counted: a tab is two)."""
    make = HOSTILE_ARGUMENT_SHAPES[shape]
    per_unit = len(json.dumps(make(100_000))) / 100_000
    return json.dumps({"text": make(int(json_chars / per_unit))})


def bench_hostile_arguments(store: ToolOutputStore, repeat: int) -> dict[str, float]:
    """The slowest median seconds, over the lesson's strategies and the subject's variant
    (inline, truncate, box and box-json), of one ``deep_check`` call whose
    argument is each :data:`HOSTILE_ARGUMENT_SHAPES` shape at about 990,000 characters of JSON
    (goal < 1 s: every scan of a model's text is linear)."""
    slowest: dict[str, float] = {}
    for strategy in strategies_in_role(*LESSON_ROLES, "variant"):
        policy = build_policy(strategy)
        tools = default_registry().merged(policy.internal_tools())
        thread = "bench_args_" + uuid.uuid4().hex
        store.log_tool(thread, "call_long", "yt_transcribe", {}, "x" * 20_000)
        for shape in HOSTILE_ARGUMENT_SHAPES:
            raw = hostile_argument(shape, 990_000)

            def once(
                raw: str = raw, policy: Any = policy, tools: Any = tools, thread: str = thread
            ) -> None:
                ctx = ToolContext(store=store, thread_id=thread)
                dispatch("call_" + uuid.uuid4().hex, "deep_check", raw, tools, policy, ctx)

            seconds = median_s(once, repeat)
            slowest[shape] = max(slowest.get(shape, 0.0), seconds)
    return slowest


def bench_slices(store: ToolOutputStore, repeat: int) -> dict[str, float]:
    small = store.log_tool("bench_slice", uuid.uuid4().hex, "x", {}, "a" * 1_000)
    big = store.log_tool("bench_slice", uuid.uuid4().hex, "x", {}, "abcdefghij" * 5_000_000)
    small_s = median_s(lambda: store.read_range(small.id, 400, 200), repeat)
    big_s = median_s(lambda: store.read_range(big.id, 25_000_000, 200), repeat)
    return {"slice_1kb_ms": small_s * 1e3, "slice_50mb_ms": big_s * 1e3, "ratio": big_s / small_s}


def bench_log_tool(store: ToolOutputStore, count: int) -> float:
    """Rows per second of ``log_tool`` (each its own committed transaction)."""
    thread = "bench_log_" + uuid.uuid4().hex
    output = "row " * 50
    started = time.perf_counter()
    for i in range(count):
        store.log_tool(thread, f"call_{i}", "run_sql", {"query": "SELECT 1", "i": i}, output)
    return count / (time.perf_counter() - started)


def bench_lookup(store: ToolOutputStore, rows: int, lookups: int) -> float:
    """Median milliseconds of ``get(thread_id, tool_call_id)`` among ``rows`` rows."""
    thread = "bench_lookup_" + uuid.uuid4().hex
    now = datetime.now(UTC)
    batch = 10_000
    with store.engine.begin() as connection:  # set-up only: bulk rows
        for first in range(0, rows, batch):
            connection.execute(
                insert(ToolOutput),
                [
                    {
                        "ref_id": uuid.uuid4().hex,
                        "thread_id": thread,
                        "tool_call_id": f"call_{i}",
                        "tool_name": "x",
                        "tool_args": "{}",
                        "content": "v",
                        "n_chunks": 0,
                        "n_chars": 1,
                        "sha256": "0" * 64,
                        "kind": "tool_output",
                        "created_at": now,
                    }
                    for i in range(first, min(first + batch, rows))
                ],
            )
    step = max(1, rows // lookups)
    ids = iter(range(0, rows, step))
    return median_s(lambda: store.get(thread, f"call_{next(ids)}"), min(lookups, rows)) * 1e3


def bench_notebooks() -> dict[str, float]:
    """Seconds to run each solution notebook top to bottom with the offline model."""
    import nbformat
    from nbclient import NotebookClient

    from helpers.course.student_notebooks import NOTEBOOKS_DIR, solution_notebooks

    seconds = {}
    for path in solution_notebooks():
        notebook = nbformat.read(path, as_version=4)
        started = time.perf_counter()
        NotebookClient(
            notebook,
            timeout=300,
            kernel_name="python3",
            resources={"metadata": {"path": str(NOTEBOOKS_DIR)}},
        ).execute()
        seconds[path.stem] = time.perf_counter() - started
    return seconds


def bench_tokens(store: ToolOutputStore) -> dict[str, Any]:
    """Every shipped case at full size (the large ones: megabytes) under every strategy, and the
    scaling run from 1 KB to 10 MB: totals, and how long each took; with the ids ``make
    figures`` draws (:data:`devtools.readme_figures.SEED`), so its tokens are the figures'."""
    from devtools.readme_figures import SEED
    from helpers.base.ids import reproducible_ids

    with reproducible_ids(SEED):
        return _bench_tokens(store)


def _bench_tokens(store: ToolOutputStore) -> dict[str, Any]:
    from helpers.cases.case_files import ALL_CASES, load_cases
    from helpers.context.strategies import compared_strategies, field_strategies
    from helpers.evaluation.compare import Comparison
    from helpers.evaluation.runs import client_for_cases, run_cases
    from helpers.evaluation.scaling import run_scaling
    from helpers.models.llm import resolve_model

    cases = load_cases(ALL_CASES)
    client = client_for_cases(resolve_model("offline", env={}), cases)
    started = time.perf_counter()
    runs = run_cases(
        cases,
        [*compared_strategies(), *field_strategies()],
        client=client,
        model="offline-reference",
        store=store,
    )
    cases_s = time.perf_counter() - started
    started = time.perf_counter()
    scaling = run_scaling(strategies=[*compared_strategies(), *field_strategies()], store=store)
    scaling_s = time.perf_counter() - started
    comparison = Comparison(runs, "offline-reference", None, 600, scaling=scaling)
    metrics = comparison.metrics()
    from devtools.floor_gap import excess_parts, oracle_ratio

    return {  # bench.json's own section: the comparison's totals, as compare.json has them
        "totals": {v: t.model_dump(mode="json") for v, t in metrics.totals.items()},
        "floor_gap": excess_parts(comparison),
        "oracle": oracle_ratio(cases, client=client, model="offline-reference", store=store),
        "cases_s": cases_s,
        "scaling_s": scaling_s,
        "breaks": dict(scaling.breaks),
    }


#: A prompt the offline model has a plan for (case0's, two tool calls and an answer): a prompt
#: it has none for ends with exit code 4 (no_plan), which is not a turn.
CASE0_PROMPT = (
    "Generate a transcript of the YouTube video with video_id='999' and then pass it to Deep "
    "Check for analysis."
)
#: Twenty short code-mode programs, one tool call each, as a checkpoint of notebook 08 runs
#: them: the programs' workers (forked from the fork server, or spawned) are counted.
TWENTY_PROGRAMS = (
    "from helpers.tooling.program_sandbox import run_program\n"
    "class Host:\n"
    "    def tool_names(self): return ['echo']\n"
    "    def __call__(self, name, arguments): return True, arguments\n"
    "for _ in range(20):\n"
    "    assert run_program('return await tools.echo({n: 1})', Host()).ok\n"
)
#: Commands whose CPU the bench measures, each with its goal in CPU seconds (None: shown, no goal).
CLI_COMMANDS: dict[str, tuple[list[str], float | None]] = {
    "workbook --help": (["-m", "helpers.cli", "--help"], 0.3),
    "workbook ask --help": (["-m", "helpers.cli", "ask", "--help"], 0.3),
    "workbook ask (one offline turn)": (
        ["-m", "helpers.cli", "ask", "-p", "offline", "--db", "sqlite://", CASE0_PROMPT],
        0.8,
    ),
    "code mode: 20 short programs": (["-c", TWENTY_PROGRAMS], None),
    "bound: import openai": (["-c", "import openai"], None),
    "bound: import sqlalchemy": (["-c", "import sqlalchemy"], None),
    "bound: the interpreter alone": (["-c", "pass"], None),
}


def cpu_s(arguments: list[str]) -> float:
    """CPU seconds (user + system) of ``python ARGUMENTS`` run as a child process, its output
    discarded. Raises :class:`subprocess.CalledProcessError` if it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, *arguments], check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def bench_cli(repeat: int) -> dict[str, float]:
    """Median CPU seconds of each of :data:`CLI_COMMANDS` (the first run warms the file cache)."""
    figures = {}
    for label, (arguments, _goal) in CLI_COMMANDS.items():
        cpu_s(arguments)
        figures[label] = statistics.median(cpu_s(arguments) for _ in range(repeat))
    return figures


#: ``workbook compare``'s goal, in CPU seconds (user + system) on the bench's machine (issue 50).
COMPARE_GOAL_CPU_S = 30.0
#: box's prompt tokens over the floor's, on the cases it passed (issue 50's goal).
BOX_FLOOR_GOAL = 1.2


#: What ``make lab`` and ``make data`` leave in ``var/`` before anyone runs ``compare``: the
#: reference data and the tokenizer's files (copied into the bench's own run-time folder, so
#: compare's figure is compare's, not the first build of the data).
BUILT_DATA = ("iso_reference.sqlite", "reference-data.inputs.json", "pages", "tiktoken")


def bench_compare() -> dict[str, float]:
    """One full ``workbook compare`` (every case, strategy, design step, persona and scaling
    size) in a child process with its own run-time folder, the reference data already built in
    it (:data:`BUILT_DATA`, as after ``make lab``), as ``/usr/bin/time`` would report it:
    ``user_s``, ``sys_s``, ``cpu_s`` (their sum; code mode's program workers are children of
    its fork server, which it waits for at exit, so they are counted in it), ``wall_s``, and ``max_rss_mb`` (the largest resident set of any
    child so far, in MB of 2^20 bytes)."""
    from helpers.base.paths import var_dir
    from helpers.tooling.reference_data import build_reference_data

    build_reference_data()  # when stale; the tokenizer's files come with the first count
    with tempfile.TemporaryDirectory(prefix="workbook-bench-compare-") as folder:
        for name in BUILT_DATA:
            source = var_dir() / name
            if source.is_dir():
                shutil.copytree(source, Path(folder) / name)
            elif source.exists():
                shutil.copy2(source, Path(folder) / name)
        env = {**os.environ, "WORKBOOK_VAR_DIR": folder, "WORKBOOK_PROFILE": "offline"}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "helpers.cli", "compare", "--out", f"{folder}/out"],
            check=True,
            capture_output=True,
            env=env,
        )
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    user, system = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    return {
        "user_s": user,
        "sys_s": system,
        "cpu_s": user + system,
        "wall_s": wall,
        "max_rss_mb": after.ru_maxrss / 1024,  # Linux reports kilobytes
    }


def run_speed(*, quick: bool) -> dict[str, Any]:
    """The figures of the ``speed`` block only: the commands' CPU, ``workbook compare``'s, and
    every strategy's tokens (box against the floor)."""
    folder = Path(tempfile.mkdtemp(prefix="workbook-bench-"))
    return {
        "machine": machine(),
        "cli_cpu_s": bench_cli(3 if quick else 5),
        "compare": bench_compare(),
        "tokens": bench_tokens(ToolOutputStore(f"sqlite:///{folder / 'tokens.sqlite'}")),
    }


def run(db_url: str | None, *, quick: bool) -> dict[str, Any]:
    repeat = 5 if quick else 15
    folder = Path(tempfile.mkdtemp(prefix="workbook-bench-"))
    stores = {"sqlite": ToolOutputStore(db_url or f"sqlite:///{folder / 'bench.sqlite'}")}
    if os.environ.get("WORKBOOK_BENCH_PG_URL"):
        stores["postgresql"] = ToolOutputStore(os.environ["WORKBOOK_BENCH_PG_URL"])
    results: dict[str, Any] = {"machine": machine(), "stores": {}}
    for name, store in stores.items():
        figures: dict[str, Any] = {}
        for label, size in (("1KB", 1_000), ("1MB", 1_000_000), ("10MB", 10_000_000)):
            figures[f"round_trip_{label}_ms"] = (
                bench_round_trip(store, size, 3 if size > 1e6 else repeat) * 1e3
            )
        figures.update(bench_slices(store, repeat * 4))
        figures["log_tool_rows_per_s"] = bench_log_tool(store, 2_000 if quick else 10_000)
        figures["lookup_ms_at_100k_rows"] = bench_lookup(store, 20_000 if quick else 100_000, 1_000)
        results["stores"][name] = figures
        if name == "sqlite":
            results["hostile_arguments_s"] = bench_hostile_arguments(store, 3)
        store.close()
    results["cli_cpu_s"] = bench_cli(3 if quick else 5)
    results["compare"] = bench_compare()
    results["notebooks_s"] = bench_notebooks()
    results["tokens"] = bench_tokens(ToolOutputStore(f"sqlite:///{folder / 'tokens.sqlite'}"))
    results["lab_start"] = time_lab_start()
    room_url = os.environ.get("WORKBOOK_BENCH_ROOM_URL")  # tests/with_postgres.sh's room admin
    if room_url:  # make bench starts a throwaway PostgreSQL with password authentication
        if os.geteuid() == 0 and shutil.which("nft") and shutil.which("npm"):
            from devtools.real_room import measure_room

            results["room"] = measure_room(room_url, folder / "room")
        else:
            print("make bench: the room of 30 needs root, nft and npm: not measured")
        url_command = [
            "-m",
            "helpers.cli",
            "room",
            "url",
            "bench-cpu",
            "--room-url",
            room_url,
        ]
        cpu_s(url_command)
        results["room_url_cpu_s"] = statistics.median(cpu_s(url_command) for _ in range(5))
    return results


def _report_command(results: dict[str, Any], console: Console) -> None:
    """The ``workbook`` command's figures: compare's CPU, and the start-up table."""
    c = results["compare"]
    console.print(
        f"[bold]workbook compare:[/] {c['cpu_s']:.1f} s CPU ({c['user_s']:.1f} user + "
        f"{c['sys_s']:.1f} system; goal < {COMPARE_GOAL_CPU_S:.0f} s), {c['wall_s']:.1f} s wall, "
        f"{c['max_rss_mb']:,.0f} MB max RSS"
    )
    table = Table(title="The workbook command: CPU seconds (user + system, median)")
    for column in ("command", "CPU s", "goal"):
        table.add_column(column, justify="left" if column == "command" else "right")
    for label, seconds in results["cli_cpu_s"].items():
        goal = CLI_COMMANDS[label][1]
        table.add_row(label, f"{seconds:.2f}", "" if goal is None else f"< {goal} s")
    console.print(table)


def report(results: dict[str, Any], console: Console) -> None:
    m = results["machine"]
    console.print(
        f"[bold]Machine:[/] {m['cpu']}, {m['cores']} cores, {m['platform']}, Python {m['python']}, SQLite {m['sqlite']}"
    )
    for name, f in results["stores"].items():
        table = Table(title=f"Store: {name} (medians)")
        for column in ("measure", "value", "goal"):
            table.add_column(column, justify="left" if column == "measure" else "right")
        for label in ("1KB", "1MB", "10MB"):
            table.add_row(
                f"box + unbox round trip, {label}", f"{f[f'round_trip_{label}_ms']:.2f} ms", ""
            )
        table.add_row("200-char slice of a 1 KB value", f"{f['slice_1kb_ms']:.3f} ms", "")
        table.add_row("200-char slice of a 50 MB value", f"{f['slice_50mb_ms']:.3f} ms", "")
        table.add_row("ratio 50 MB / 1 KB", f"{f['ratio']:.2f}×", "< 3×")
        table.add_row(
            "log_tool throughput", f"{f['log_tool_rows_per_s']:,.0f} rows/s", "≥ 2,000 rows/s"
        )
        table.add_row(
            "lookup by tool_call_id, 100,000 rows",
            f"{f['lookup_ms_at_100k_rows']:.3f} ms",
            "< 1 ms",
        )
        console.print(table)
    table = Table(title="One tool call with a 1 MB hostile argument (slowest strategy, median)")
    for column in ("argument shape", "seconds", "goal"):
        table.add_column(column, justify="left" if column == "argument shape" else "right")
    for shape, seconds in results.get("hostile_arguments_s", {}).items():
        table.add_row(shape, f"{seconds:.3f}", "< 1 s")
    console.print(table)
    _report_command(results, console)
    notebooks = results["notebooks_s"]
    table = Table(title="Solution notebooks, offline")
    table.add_column("notebook")
    table.add_column("seconds", justify="right")
    for name, seconds in notebooks.items():
        table.add_row(name, f"{seconds:.1f}")
    table.add_row("[bold]all[/] (goal < 180 s)", f"{sum(notebooks.values()):.1f}")
    console.print(table)
    tokens = results["tokens"]
    table = Table(
        title="Every case at full size, every strategy (o200k_base, offline model)",
        caption=f"{tokens['cases_s']:.1f} s for the cases; {tokens['scaling_s']:.1f} s for the "
        "scaling run (1 KB to 10 MB)",
    )
    for column in (
        "strategy",
        "passed",
        "prompt tokens",
        "× inline",
        "× floor",
        "$ cached",
        "seconds",
    ):
        table.add_column(column, justify="left" if column == "strategy" else "right")
    for strategy, total in tokens["totals"].items():
        table.add_row(
            strategy,
            f"{total['passed']}/{total['cases']}",
            f"{total['prompt_tokens']:,}",
            str(total["ratio_to_inline"]),
            str(total["ratio_to_floor"]),
            f"${total.get('usd_cached', 0):.4f}",
            f"{total['seconds']:.1f}",
        )
    console.print(table)
    for strategy, sentence in tokens["breaks"].items():
        console.print(f"  [bold]{strategy}[/] {for_rich(sentence)}")
    for name, block in _room_blocks(results).items():
        console.print(f"[bold]{name}:[/] {for_rich(block)}")


#: ``workbook room url``'s goal, in CPU seconds: the hub runs it before every spawn.
ROOM_URL_GOAL_CPU_S = 0.3


def _room_blocks(results: dict[str, Any]) -> dict[str, str]:
    """deploy/README.md's room blocks: the spawns, the day's burst and the kernels, the
    instructor's view (each when measured), and what ``workbook room url`` costs the hub per
    spawn."""
    from devtools.real_room import day_markdown, progress_markdown, spawn_markdown

    blocks = {}
    if "room" in results:
        room = results["room"]
        blocks["room_spawns"] = spawn_markdown(room, results["machine"])
        blocks["room_day"] = day_markdown(room)
        blocks["room_progress"] = progress_markdown(room)
    if "room_url_cpu_s" in results:
        blocks["room_url"] = (
            f"`workbook room url`, which the hub runs before each spawn, takes "
            f"{results['room_url_cpu_s']:.2f} s of CPU (median; goal < {ROOM_URL_GOAL_CPU_S} s)."
        )
    return blocks


def speed_block(results: dict[str, Any]) -> str:
    """docs/comparison.md's ``speed`` block: ``workbook compare``'s CPU, the commands' CPU and
    box's tokens against the floor, each with its goal (issue 50)."""
    m = results["machine"]
    c = results["compare"]
    speed = [
        f"`workbook compare --out DIR` (every case, strategy, design step, persona and scaling "
        f"size, offline, the reference data already built as `make lab` leaves it), measured "
        f"by `make bench` as `/usr/bin/time` does: **{c['cpu_s']:.0f} s "
        f"of CPU** ({c['user_s']:.1f} s user + {c['sys_s']:.1f} s system; goal ≤ "
        f"{COMPARE_GOAL_CPU_S:.0f} s), {c['wall_s']:.0f} s wall, {c['max_rss_mb']:,.0f} MB at "
        f"most in memory, on {m['cpu']} ({m['cores']} cores).",
        "",
        "| command | CPU seconds | goal |",
        "|---|---:|---:|",
    ]
    for label, seconds in results["cli_cpu_s"].items():
        goal = CLI_COMMANDS[label][1]
        speed.append(f"| `{label}` | {seconds:.2f} | {'' if goal is None else f'≤ {goal}'} |")
    from helpers.context.strategies import strategy_in_role

    subject = strategy_in_role("subject")  # the strategy the floor is derived from
    box = results["tokens"]["totals"][subject]
    speed += [
        "",
        f"`{subject}` over the floor (prompt tokens, the cases it passed): "
        f"**{box['ratio_to_floor']}×** "
        f"with {box['passed']}/{box['cases']} cases passed (goal ≤ {BOX_FLOOR_GOAL}×).",
    ]
    gap, oracle = results["tokens"].get("floor_gap"), results["tokens"].get("oracle")
    if gap and oracle:
        from devtools.floor_gap import PARTS

        speed += [
            "",
            f"What it sends that the floor does not, part by part, over all its model calls "
            f"(`devtools/floor_gap.py`; the parts overlap with the calls the floor drops, so "
            f"they do not add up to the {gap['excess']:,} tokens it spends beyond the floor):",
            "",
            "| part | prompt tokens |",
            "|---|---:|",
            *(f"| {PARTS[k]} | {v:,} |" for k, v in gap["parts"].items()),
            "",
            f"The first part is the one a client could save, if it knew in advance which cases "
            f"look inside a result: offering the resolve tool to those cases only, and changing "
            f"nothing else, `{subject}` reaches **{oracle['ratio_to_floor']}×** "
            f"({oracle['passed']}/{oracle['cases']} passed). No rule that decides per case "
            f"whether to offer it can go below that: the rest is `tool_search`, the rule, the "
            f"previews and the real tools a case does not call.",
        ]
    return "\n".join(speed)


def readme_blocks(results: dict[str, Any]) -> dict[str, str]:
    """The speed blocks of the README and docs/ (``<!-- bench:NAME -->``), written from
    ``results``: ``store`` (the store's figures, a column per measured database), ``speed``
    (``workbook compare`` and the command's start-up) and ``setup`` (``make lab`` to its URL)."""
    m = results["machine"]
    stores = results["stores"]
    names = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}
    head = " | ".join(names.get(n, n) for n in stores)
    rows = [
        f"`make bench` on {m['cpu']}, {m['cores']} cores, Python {m['python']}, SQLite "
        f"{m['sqlite']}, {m['date']} (medians):",
        "",
        f"| measure | {head} | goal |",
        "|---|" + "---:|" * len(stores) + "---:|",
    ]

    def row(label: str, goal: str, cell: Callable[[dict[str, Any]], str]) -> None:
        rows.append(f"| {label} | {' | '.join(cell(f) for f in stores.values())} | {goal} |")

    row(
        "box + unbox round trip, 1 KB / 1 MB / 10 MB",
        "",
        lambda f: (
            " / ".join(f"{f[f'round_trip_{k}_ms']:.2g}" for k in ("1KB", "1MB", "10MB")) + " ms"
        ),
    )
    row("200-char slice of a 1 KB value", "", lambda f: f"{f['slice_1kb_ms']:.2f} ms")
    row("200-char slice of a 50 MB value", "", lambda f: f"{f['slice_50mb_ms']:.2f} ms")
    row("ratio 50 MB / 1 KB", "< 3×", lambda f: f"{f['ratio']:.2f}×")
    row(
        "`log_tool` throughput",
        "≥ 2,000 rows/s",
        lambda f: f"{f['log_tool_rows_per_s']:,.0f} rows/s",
    )
    row(
        "lookup by `tool_call_id` among 100,000 rows",
        "< 1 ms",
        lambda f: f"{f['lookup_ms_at_100k_rows']:.2f} ms",
    )
    notebooks = sum(results["notebooks_s"].values())
    rows.append(
        f"| all {len(results['notebooks_s'])} solution notebooks, offline | {notebooks:.1f} s"
        + " |" * len(stores)
        + " < 180 s |"
    )
    return {
        "store": "\n".join(rows),
        "speed": speed_block(results),
        "setup": setup_markdown(results["lab_start"], m),
        **_room_blocks(results),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Benchmark the workbook's store, policies and notebooks."
    )
    parser.add_argument("--db-url", help="the store to measure (default: a fresh SQLite file)")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions and rows")
    parser.add_argument("--out", default="build/bench.json", help="where to write the figures")
    parser.add_argument(
        "--readme", action="store_true", help="write the speed blocks of README.md and docs/ too"
    )
    parser.add_argument(
        "--speed-only",
        action="store_true",
        help="measure only the speed block (commands, compare, tokens) and write only it",
    )
    args = parser.parse_args(argv)
    if args.speed_only:
        results = run_speed(quick=args.quick)
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print(speed_block(results))
        if args.readme:
            from devtools.readme_figures import write_blocks

            changed = write_blocks({"speed": speed_block(results)}, prefix="bench")
            print(f"wrote the speed block into {', '.join(p.name for p in changed) or 'no page'}")
        return 0
    results = run(args.db_url, quick=args.quick)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    report(results, Console())
    print(f"wrote {out}")
    if args.readme:
        from devtools.readme_figures import write_blocks

        changed = write_blocks(readme_blocks(results), prefix="bench")
        print(f"wrote the speed blocks into {', '.join(p.name for p in changed) or 'no page'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
