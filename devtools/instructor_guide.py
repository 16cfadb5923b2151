"""The measured parts of the instructor guide (``docs/instructor-guide.md``): ``make guide``.

Five blocks, between ``<!-- guide:NAME -->`` markers, are generated; the rest of the guide is
written by hand:

- ``minutes``: per notebook section, the words to read, the lines of code to write (the solution
  code of its TODOs), the seconds its cells run (nbclient, offline, on the machine named in the
  block), and the attendee minutes these make (:func:`section_minutes`, an estimate whose basis
  the block states); each notebook's total is also written into the ``time`` block at the top of
  the notebook itself, so the page and the guide say the same;
- ``schedules``: a half day and a full day built from those minutes, slot by slot, with the
  breaks; the slots add up to the day by construction;
- ``notebooks``: each notebook's goals and stretch exercise, read from the notebook;
- ``tokens``: per notebook, the model calls and tokens its turns use (every answer of the offline
  model logs its ``usage``: o200k_base, the tokenizer of OpenAI's current models), and what a
  room pays for them at a stated price;
- ``mistakes``: per TODO, each plausible wrong answer of ``tests/wrong_answers.py`` and the
  property its checkpoint reports as failed (run in a kernel, as the checkpoint test does).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from devtools.readme_figures import update
from helpers.base.paths import PROJECT_ROOT
from helpers.course.install_cell import INSTALL_CELL_SOURCE, INSTALL_CELL_TAG
from helpers.course.student_notebooks import (
    BEGIN,
    END,
    NOTEBOOKS_DIR,
    SOLUTIONS_DIR,
    fill_todos,
    make_student,
    solution_notebooks,
    todo_number,
)
from helpers.course.student_notebooks import main as write_student_notebooks

GUIDE = PROJECT_ROOT / "docs" / "instructor-guide.md"
#: The estimate's inputs, each with its basis (stated in the guide's minutes block).
#: Reading: 180 words a minute, below the 238 a minute that Brysbaert (2019, "How many words do
#: we read per minute?", Journal of Memory and Language 109) found for English non-fiction, because
#: this text is technical and full of code.
WORDS_PER_MINUTE = 180
#: A TODO: five minutes to read its contract, run its checkpoint and read one failure, plus a
#: minute for every two lines of the solution's code. No room has been timed yet: calibrate these
#: after you teach (the schedules below move with them).
MINUTES_PER_TODO = 5
LINES_PER_MINUTE = 2
#: Reading code an attendee runs but does not write (every code cell but the TODOs' and the
#: install cell): 15 non-blank lines a minute, the rate a review of the notebooks used to count
#: what the page asks beyond prose. Not yet timed in a room, like the others.
CODE_LINES_READ_PER_MINUTE = 15
#: The recap questions' discussion, per notebook.
RECAP_MINUTES = 5
#: The days the schedules fill: (name, start, its blocks of teaching minutes between breaks, the
#: breaks' names and minutes).
DAYS: dict[str, dict[str, Any]] = {
    "half day": {"start": "09:00", "blocks": [100, 100], "breaks": [("break", 15)]},
    # the newest material, for a room that knows what a tool result costs inline: the set-up,
    # the reference (what code mode and MCP build on), code mode and MCP
    "half day, the newest material": {
        "start": "09:00",
        "blocks": [100, 100],
        "breaks": [("break", 15)],
        "notebooks": ["00_setup", "04_opaque_reference_boxing", "08_code_mode", "09_real_mcp"],
    },
    "full day": {
        "start": "09:00",
        "blocks": [105, 105, 90, 90],
        "breaks": [("break", 15), ("lunch", 60), ("break", 15)],
    },
}
#: The stated price for the cost figures (USD per million tokens) and the room it is for.
PRICE = {
    "model": "gpt-4o-mini",
    "input_per_million": 0.15,
    "output_per_million": 0.60,
    "source": "OpenAI's API pricing page (list price of gpt-4o-mini); check it before you teach",
}
ROOM = 20


def section_minutes(words: int, lines: int, todos: int, seconds: float, read_lines: int = 0) -> int:
    """An attendee's minutes for a notebook section: reading ``words`` at
    :data:`WORDS_PER_MINUTE` and ``read_lines`` of code at :data:`CODE_LINES_READ_PER_MINUTE`,
    each of ``todos`` TODOs at :data:`MINUTES_PER_TODO` plus ``lines`` of solution code at
    :data:`LINES_PER_MINUTE`, and ``seconds`` of its cells' run time; rounded up, at least one
    minute. An estimate, not a measurement of a room."""
    return max(
        1,
        math.ceil(
            words / WORDS_PER_MINUTE
            + read_lines / CODE_LINES_READ_PER_MINUTE
            + todos * MINUTES_PER_TODO
            + lines / LINES_PER_MINUTE
            + seconds / 60
        ),
    )


def _read_lines(cell: nbformat.NotebookNode) -> int:
    """The code lines an attendee reads in a cell she runs but does not write (none in the
    install cell, which she only runs)."""
    if cell.get("metadata", {}).get("tags") and INSTALL_CELL_TAG in cell.metadata["tags"]:
        return 0
    if cell.source.startswith(INSTALL_CELL_SOURCE.split("\n", 1)[0]):
        return 0
    return sum(1 for line in cell.source.splitlines() if line.strip())


#: The page's bounds on code an attendee reads (issue 48; the teaching anchors keep a cell to
#: about five lines with an output after each): the median code cell she runs but does not write,
#: the largest such cell, and all of them together, in non-blank lines.
CELL_MEDIAN_LINES = 5
CELL_MAX_LINES = 15
READ_LINES_PER_NOTEBOOK = 100


def cell_figures(notebook: nbformat.NotebookNode) -> dict[str, Any]:
    """The code an attendee reads in ``notebook`` (a solution notebook: her copy has the same
    cells, the TODOs' as stubs): ``{"median": …, "largest": …,
    "read": …, "cells": [(index, lines), …]}`` in non-blank lines, over the code cells she runs
    but does not write (not a TODO's, not the install cell; an empty cell does not count)."""
    from helpers.course.student_notebooks import todo_number

    cells = [
        (index, _read_lines(cell))
        for index, cell in enumerate(notebook.cells)
        if cell.cell_type == "code" and todo_number(cell) is None
    ]
    cells = [(index, lines) for index, lines in cells if lines]
    sizes = sorted(lines for _, lines in cells)
    return {
        "median": statistics.median(sizes) if sizes else 0,
        "largest": max(sizes, default=0),
        "read": sum(sizes),
        "cells": cells,
    }


def machine() -> str:
    """This machine, for the run times: CPU model, cores, Python, and the date."""
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return (
        f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d')}"
    )


def _words(markdown: str) -> int:
    return len(re.findall(r"[A-Za-z][\w'-]*", re.sub(r"```.*?```", "", markdown, flags=re.S)))


def _solution_lines(source: str) -> int:
    code = source.split(BEGIN, 1)[1].split(END, 1)[0] if BEGIN in source else ""
    return sum(1 for line in code.splitlines() if line.strip() and not line.strip().startswith("#"))


def _run(notebook: nbformat.NotebookNode, usage_log: Path) -> list[float]:
    """Run every cell; the seconds each took."""
    os.environ["WORKBOOK_USAGE_LOG"] = str(usage_log)
    client = NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS_DIR)}},
    )
    seconds = []
    started = time.perf_counter()
    with client.setup_kernel():
        seconds.append(time.perf_counter() - started)  # the kernel's start, first
        for index, cell in enumerate(notebook.cells):
            started = time.perf_counter()
            if cell.cell_type == "code":
                client.execute_cell(cell, index)
            seconds.append(time.perf_counter() - started)
    os.environ.pop("WORKBOOK_USAGE_LOG", None)
    return seconds


def notebook_sections(
    notebook: nbformat.NotebookNode, seconds: list[float] | None = None
) -> list[dict[str, Any]]:
    """A notebook's sections (a ``#`` or ``##`` heading starts one), each with what an attendee
    reads and writes: ``{"title", "words", "read" (code lines run but not written), "lines"
    (solution lines of its TODOs), "todos", "seconds" (its cells' run time, from ``seconds``,
    one per cell; 0 without)}``. Everything but ``seconds`` comes from the notebook's text alone,
    so a test can tell when the guide's table no longer matches the notebooks."""
    spent_per_cell = seconds if seconds is not None else [0.0] * len(notebook.cells)
    sections: list[dict[str, Any]] = []
    for cell, spent in zip(notebook.cells, spent_per_cell, strict=True):
        heading = re.match(r"#{1,2} (.+)", cell.source) if cell.cell_type == "markdown" else None
        if heading or not sections:
            sections.append(
                {
                    "title": heading[1] if heading else "(start)",
                    "words": 0,
                    "read": 0,
                    "lines": 0,
                    "todos": 0,
                    "seconds": 0.0,
                }
            )
        section = sections[-1]
        if cell.cell_type == "markdown":
            section["words"] += _words(cell.source)
        elif todo_number(cell) is not None:
            section["todos"] += 1
            section["lines"] += _solution_lines(cell.source)
        else:
            section["read"] += _read_lines(cell)
        section["seconds"] += spent
    return sections


def measure() -> dict[str, Any]:
    """Sections, minutes and tokens of every solution notebook."""
    notebooks = {}
    with tempfile.TemporaryDirectory() as folder:
        for path in solution_notebooks():
            notebook = nbformat.read(path, as_version=4)
            log = Path(folder) / f"{path.stem}.jsonl"
            started = time.perf_counter()
            kernel_start, *seconds = _run(notebook, log)
            wall = time.perf_counter() - started
            calls = (
                [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
            )
            sections = notebook_sections(notebook, seconds)
            for section in sections:
                section["minutes"] = section_minutes(
                    section["words"],
                    section["lines"],
                    section["todos"],
                    section["seconds"],
                    section["read"],
                )
            paid = any("make_client(" in c.source for c in notebook.cells if c.cell_type == "code")
            notebooks[path.stem] = {
                "sections": sections,
                "minutes": sum(s["minutes"] for s in sections) + RECAP_MINUTES,
                "wall_seconds": wall,
                "kernel_seconds": kernel_start,
                "goals": _goals(notebook),
                "stretch": _stretch(notebook),
                "paid": paid,
                "model_calls": len(calls),
                "prompt_tokens": sum(c["prompt_tokens"] for c in calls),
                "completion_tokens": sum(c["completion_tokens"] for c in calls),
            }
    return notebooks


def mistakes() -> dict[tuple[str, int], list[tuple[str, str]]]:
    """For each TODO, each wrong answer and the first line of what its checkpoint says."""
    sys.path.insert(0, str(PROJECT_ROOT / "tests"))
    from wrong_answers import WRONG_ANSWERS

    said: dict[tuple[str, int], list[tuple[str, str]]] = {}
    for path in solution_notebooks():
        solution = nbformat.read(path, as_version=4)
        todos = [(i, todo_number(c)) for i, c in enumerate(solution.cells) if todo_number(c)]
        for todo_at, n in todos:
            student = make_student(solution, name=path.name)
            notebook = fill_todos(student, solution, set(range(1, n)))
            client = NotebookClient(
                notebook,
                timeout=300,
                kernel_name="python3",
                resources={"metadata": {"path": str(NOTEBOOKS_DIR)}},
            )
            with client.setup_kernel():
                for index, cell in enumerate(notebook.cells[:todo_at]):
                    if cell.cell_type == "code":
                        client.execute_cell(cell, index)
                for label, wrong in WRONG_ANSWERS.get((path.name[:2], n), []):
                    cells = [
                        nbformat.v4.new_code_cell(wrong),
                        nbformat.v4.new_code_cell(notebook.cells[todo_at + 1].source),
                    ]
                    for offset, cell in enumerate(cells):
                        try:
                            client.execute_cell(cell, todo_at + offset)
                        except CellExecutionError:
                            break
                    error = next(
                        (o for o in cells[-1].outputs if o.get("output_type") == "error"), {}
                    )
                    message = str(error.get("evalue", "(no message)"))
                    said.setdefault((path.name[:2], n), []).append((label, message))
    return said


def _goals(notebook: nbformat.NotebookNode) -> list[str]:
    """The bullet list under "In this notebook you will" in the notebook's first cell."""
    text = notebook.cells[0].source.split("**In this notebook you will**", 1)
    if len(text) < 2:
        return []
    listed = text[1].split("**Time**", 1)[0]
    return [m[1].strip() for m in re.finditer(r"^- (.+(?:\n  .+)*)", listed, flags=re.M)]


def _stretch(notebook: nbformat.NotebookNode) -> str:
    """The last paragraph of the notebook's "## Stretch" section (the exercise; any paragraph
    before it sets the scene), or "" when it has none."""
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("## Stretch"):
            body = cell.source.split("\n", 1)[1].strip()
            return " ".join(body.split("\n\n")[-1].split())
    return ""


def _time_text(data: dict[str, Any]) -> str:
    todos = sum(s["todos"] for s in data["sections"])
    work = f"{todos} TODO{'s' if todos != 1 else ''}" if todos else "no TODO"
    return (
        f"about {data['minutes']} minutes: reading, {work}, the cells' run time and "
        f"{RECAP_MINUTES} minutes for the recap (an estimate; the instructor guide gives its basis)"
    )


def _minutes_block(measured: dict[str, Any], measured_load: tuple[float, ...]) -> str:
    lines = [
        f"Run times measured on {machine()}, offline; the load average was "
        f"{measured_load[0]:.1f} when the runs began (the machine's cores: {os.cpu_count()}).",
        "",
        "| notebook | section | words | lines to read | lines to write | run (s) | minutes |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for name, data in measured.items():
        for section in data["sections"]:
            lines.append(
                f"| {name} | {section['title']} | {section['words']} | "
                f"{section['read'] or ''} | {section['lines'] or ''} | "
                f"{section['seconds']:.1f} | {section['minutes']} |"
            )
        lines.append(f"| {name} | recap discussion | | | | | {RECAP_MINUTES} |")
        lines.append(f"| **{name}** | **in all** | | | | | **{data['minutes']}** |")
    wall = sum(d["wall_seconds"] for d in measured.values())
    lines += [
        "",
        "| notebook | kernel start (s) | cells (s) | top to bottom (s) |",
        "|---|---:|---:|---:|",
        *(
            f"| {name} | {d['kernel_seconds']:.1f} | "
            f"{sum(s['seconds'] for s in d['sections']):.1f} | {d['wall_seconds']:.1f} |"
            for name, d in measured.items()
        ),
        f"| **all** | | | **{wall:.0f}** |",
        "",
        f"All notebooks, top to bottom: {wall:.0f} s ({wall / 60:.1f} minutes; the goal is under 3).",
        "",
        f"The minutes are an estimate, not a timed room: reading at {WORDS_PER_MINUTE} words a "
        "minute (below the 238 that Brysbaert 2019 found for English non-fiction, because this "
        f"text is technical) and the code cells an attendee runs but does not write at "
        f"{CODE_LINES_READ_PER_MINUTE} lines a minute (the rate a review of the notebooks "
        f"used); each TODO {MINUTES_PER_TODO} minutes to read its contract and run "
        f"its checkpoint, plus a minute per {LINES_PER_MINUTE} lines of its solution's code; the "
        f"cells' run time; {RECAP_MINUTES} minutes per recap. Calibrate them after you teach: "
        "`WORDS_PER_MINUTE`, `CODE_LINES_READ_PER_MINUTE`, `MINUTES_PER_TODO` and "
        "`LINES_PER_MINUTE` in "
        "`devtools/instructor_guide.py`, then `make guide`.",
    ]
    return "\n".join(lines)


def _clock(start: str, minutes: int) -> str:
    hours, mins = map(int, start.split(":"))
    total = hours * 60 + mins + minutes
    return f"{total // 60:02d}:{total % 60:02d}"


def schedule(measured: dict[str, Any], day: dict[str, Any]) -> list[tuple[str, int]]:
    """The slots of one day, in order: ``(what, minutes)``.

    The notebooks go in order, back to back (those ``day["notebooks"]`` names, when it names
    some); a break falls where a block of the day ends, in the
    middle of a notebook if need be (the rest of it is a slot "… (continued)"). The spare minutes
    of the last block go to the stretch exercises; a notebook that does not fit whole is left out
    (:func:`_schedules_block` names it). Every slot's minutes come from ``measured`` or ``day``,
    so the slots add up to the day.
    """
    slots: list[tuple[str, int]] = []
    blocks = list(day["blocks"])
    left = blocks.pop(0)
    breaks = list(day["breaks"])
    chosen = day.get("notebooks")
    for name, data in measured.items():
        if chosen is not None and name not in chosen:
            continue
        need = data["minutes"]
        if need > left + sum(blocks):
            break  # it cannot finish today
        label = name
        while need:
            if not left:
                slots.append(breaks.pop(0))
                left = blocks.pop(0)
            taken = min(need, left)
            slots.append((label, taken))
            need, left, label = need - taken, left - taken, f"{name} (continued)"
    if left:
        slots.append(("stretch exercises, questions", left))
    for block in blocks:  # whole blocks left over
        slots += [breaks.pop(0), ("stretch exercises, questions", block)]
    return slots


def _schedules_block(measured: dict[str, Any]) -> str:
    lines: list[str] = []
    for name, day in DAYS.items():
        slots = schedule(measured, day)
        placed = {what.removesuffix(" (continued)") for what, _ in slots}
        left_out = [n for n in day.get("notebooks", measured) if n not in placed]
        total = sum(minutes for _, minutes in slots)
        lines += [
            f"**{name}** ({total} minutes, {_clock(day['start'], 0)}–"
            f"{_clock(day['start'], total)}):",
            "",
            "| from | to | slot | minutes |",
            "|---|---|---|---:|",
        ]
        at = 0
        for what, minutes in slots:
            lines.append(
                f"| {_clock(day['start'], at)} | {_clock(day['start'], at + minutes)} | {what} | "
                f"{minutes} |"
            )
            at += minutes
        lines.append(f"| | | **in all** | **{at}** |")
        lines.append("")
        lines.append(
            "Left for another session: " + ", ".join(left_out) + "."
            if left_out
            else ("Every notebook it names fits." if "notebooks" in day else "Every notebook fits.")
        )
        lines.append("")
    return "\n".join(lines).rstrip()


def _notebooks_block(measured: dict[str, Any]) -> str:
    lines = []
    for name, data in measured.items():
        lines.append(f"**{name}** ({data['minutes']} minutes)")
        lines.append("")
        lines += [f"- {goal}" for goal in data["goals"]]
        if data["stretch"]:
            lines.append(f"- *Stretch*: {data['stretch']}")
        lines.append("")
    return "\n".join(lines).rstrip()


def write_times(measured: dict[str, Any]) -> list[Path]:
    """Write each notebook's estimated minutes into the ``time`` block of its first cell (the
    solution, then the attendee copy made from it); returns the solution paths written."""
    written = []
    for name, data in measured.items():
        path = SOLUTIONS_DIR / f"{name}.ipynb"
        notebook = nbformat.read(path, as_version=4)
        updated = update(notebook.cells[0].source, {"time": _time_text(data)}, prefix="guide")
        if updated != notebook.cells[0].source:
            notebook.cells[0].source = updated
            nbformat.write(notebook, path)
            written.append(path)
    return written


def _tokens_block(measured: dict[str, Any]) -> str:
    lines = [
        f"| notebook | model calls | prompt tokens | completion tokens | one attendee ({PRICE['model']}) | a room of {ROOM} |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    total = 0.0
    for name, data in measured.items():
        dollars = (
            data["prompt_tokens"] * PRICE["input_per_million"]
            + data["completion_tokens"] * PRICE["output_per_million"]
        ) / 1e6
        tokens = (
            f"| {name} | {data['model_calls']:,} | {data['prompt_tokens']:,} | "
            f"{data['completion_tokens']:,} |"
        )
        if not data["paid"]:  # its turns always run on the offline model (scripted plans)
            lines.append(f"{tokens} $0 (always offline) | $0 |")
            continue
        total += dollars
        lines.append(f"{tokens} ${dollars:.3f} | ${dollars * ROOM:.2f} |")
    lines.append(f"| **all** | | | | **${total:.3f}** | **${total * ROOM:.2f}** |")
    lines.append("")
    lines.append(
        f"Price: ${PRICE['input_per_million']} per million input tokens and "
        f"${PRICE['output_per_million']} per million output tokens ({PRICE['source']}); no "
        "prompt caching counted. A notebook marked *always offline* runs scripted plans on the "
        "offline model whatever the profile."
    )
    return "\n".join(lines)


def failed_property(report: str) -> str:
    """The property a checkpoint's report says failed: its first line, without the
    ``✗ TODO n failed · name:`` in front (the report's other lines are the input, expected and got)."""
    first = report.strip().splitlines()[0] if report.strip() else "(no message)"
    return re.sub(r"^✗ TODO \d+ failed · [\w.]+: ", "", first)


def _mistakes_block(said: dict[tuple[str, int], list[tuple[str, str]]]) -> str:
    lines = [
        "| notebook | TODO | the mistake | the property that stops it |",
        "|---|---:|---|---|",
    ]
    for (notebook, todo), entries in sorted(said.items()):
        for label, message in entries:
            lines.append(
                f"| {notebook} | {todo} | {label} | {failed_property(message).replace('|', '/')} |"
            )
    return "\n".join(lines)


#: The short form's longest property, in characters: a row the room reads at a glance.
SHORT_PROPERTY_CHARS = 70


def short_property(report: str) -> str:
    """A checkpoint report's failed property in a few words, for the room: its first clause (up
    to a ``; `` or `` — `` outside brackets), at most :data:`SHORT_PROPERTY_CHARS` characters cut
    at a word; a report that the answer raised says which exception, not its message."""
    said = failed_property(report)
    raised = re.match(r"your code raised (\w+)", said)
    if raised:
        return f"it raises {raised[1]}"
    depth, end = 0, len(said)
    for at, char in enumerate(said):
        depth += (char in "([{") - (char in ")]}")
        if depth <= 0 and (said.startswith("; ", at) or said.startswith(" — ", at)):
            end = at
            break
    clause = said[:end].strip().rstrip(",.:")
    if len(clause) > SHORT_PROPERTY_CHARS:
        clause = clause[:SHORT_PROPERTY_CHARS].rsplit(" ", 1)[0]
        opened = [at for at, char in enumerate(clause) if char in "([{"]
        closed = sum(char in ")]}" for char in clause)
        if len(opened) > closed:  # cut inside brackets: end before the one left open
            clause = clause[: opened[closed]]
        clause = clause.rstrip(" ,.:;") + "…"
    return clause


def _mistakes_short_block(said: dict[tuple[str, int], list[tuple[str, str]]]) -> str:
    """One row per TODO: how many listed mistakes its checkpoint stops, and the properties they
    break, most often broken first, each with its count."""
    lines = [
        "| TODO | mistakes | the properties they break (how many) |",
        "|---|---:|---|",
    ]
    for (notebook, todo), entries in sorted(said.items()):
        counts = Counter(short_property(message) for _, message in entries)
        broken = "; ".join(f"{prop.replace('|', '/')} ({n})" for prop, n in counts.most_common())
        lines.append(f"| {notebook} · {todo} | {len(entries)} | {broken} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Measure and write the instructor guide's blocks.")
    parser.parse_args(argv)
    load = os.getloadavg()
    measured = measure()
    write_times(measured)
    write_student_notebooks([])  # the attendee copies carry the same time
    blocks = {
        "minutes": _minutes_block(measured, load),
        "schedules": _schedules_block(measured),
        "notebooks": _notebooks_block(measured),
        "tokens": _tokens_block(measured),
    }
    said = mistakes()
    blocks["mistakes_short"] = _mistakes_short_block(said)
    blocks["mistakes"] = _mistakes_block(said)
    text = GUIDE.read_text(encoding="utf-8")
    GUIDE.write_text(update(text, blocks, prefix="guide"), encoding="utf-8")
    print(f"wrote {len(blocks)} measured blocks into {GUIDE.relative_to(PROJECT_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
