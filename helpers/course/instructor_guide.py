"""The measured parts of the instructor guide (``docs/instructor-guide.md``): ``make guide``.

Three blocks, between ``<!-- guide:NAME -->`` markers, are generated; the rest of the guide is
written by hand:

- ``minutes``: per notebook section, the words to read, the lines of code to write (the solution
  code of its TODOs), the seconds its cells run (nbclient, offline), and the minutes these make:
  words / 180 per minute, plus a minute a line of code and 3 minutes a TODO, plus the run time,
  rounded up; a section takes at least one minute;
- ``tokens``: per notebook, the model calls and tokens its turns use (every answer of the offline
  model logs its ``usage``: o200k_base, the tokenizer of OpenAI's current models), and what a
  room pays for them at a stated price;
- ``mistakes``: per TODO, each plausible wrong answer of ``tests/wrong_answers.py`` and the
  message its checkpoint answers with (run in a kernel, as the checkpoint test does).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from helpers.course.readme_figures import update
from helpers.course.student_notebooks import (
    BEGIN,
    END,
    NOTEBOOKS_DIR,
    SOLUTIONS_DIR,
    fill_todos,
    make_student,
    todo_number,
)
from helpers.paths import PROJECT_ROOT

GUIDE = PROJECT_ROOT / "docs" / "instructor-guide.md"
WORDS_PER_MINUTE = 180
MINUTES_PER_LINE = 1
MINUTES_PER_TODO = 3
#: The stated price for the cost figures (USD per million tokens) and the room it is for.
PRICE = {
    "model": "gpt-4o-mini",
    "input_per_million": 0.15,
    "output_per_million": 0.60,
    "source": "OpenAI's API pricing page (list price of gpt-4o-mini); check it before you teach",
}
ROOM = 20


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
    with client.setup_kernel():
        for index, cell in enumerate(notebook.cells):
            started = time.perf_counter()
            if cell.cell_type == "code":
                client.execute_cell(cell, index)
            seconds.append(time.perf_counter() - started)
    os.environ.pop("WORKBOOK_USAGE_LOG", None)
    return seconds


def measure() -> dict[str, Any]:
    """Sections, minutes and tokens of every solution notebook."""
    notebooks = {}
    with tempfile.TemporaryDirectory() as folder:
        for path in sorted(SOLUTIONS_DIR.glob("*.ipynb")):
            notebook = nbformat.read(path, as_version=4)
            log = Path(folder) / f"{path.stem}.jsonl"
            seconds = _run(notebook, log)
            calls = (
                [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
            )
            sections: list[dict[str, Any]] = []
            for cell, spent in zip(notebook.cells, seconds, strict=True):
                heading = (
                    re.match(r"#{1,2} (.+)", cell.source) if cell.cell_type == "markdown" else None
                )
                if heading or not sections:
                    sections.append(
                        {
                            "title": heading[1] if heading else "(start)",
                            "words": 0,
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
                section["seconds"] += spent
            for section in sections:
                section["minutes"] = max(
                    1,
                    math.ceil(
                        section["words"] / WORDS_PER_MINUTE
                        + section["lines"] * MINUTES_PER_LINE
                        + section["todos"] * MINUTES_PER_TODO
                        + section["seconds"] / 60
                    ),
                )
            paid = any("make_client(" in c.source for c in notebook.cells if c.cell_type == "code")
            notebooks[path.stem] = {
                "sections": sections,
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
    for path in sorted(SOLUTIONS_DIR.glob("*.ipynb")):
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
                    message = " ".join(str(error.get("evalue", "(no message)")).split())
                    said.setdefault((path.name[:2], n), []).append((label, message))
    return said


def _minutes_block(measured: dict[str, Any]) -> str:
    lines = [
        "| notebook | section | words | lines to write | run (s) | minutes |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for name, data in measured.items():
        total = 0
        for section in data["sections"]:
            total += section["minutes"]
            lines.append(
                f"| {name} | {section['title']} | {section['words']} | {section['lines'] or ''} | "
                f"{section['seconds']:.1f} | {section['minutes']} |"
            )
        lines.append(f"| **{name}** | **in all** | | | | **{total}** |")
    return "\n".join(lines)


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


def _mistakes_block(said: dict[tuple[str, int], list[tuple[str, str]]]) -> str:
    lines = ["| notebook | TODO | the mistake | what the checkpoint says |", "|---|---:|---|---|"]
    for (notebook, todo), entries in sorted(said.items()):
        for label, message in entries:
            shown = message if len(message) <= 220 else message[:217] + "…"
            lines.append(f"| {notebook} | {todo} | {label} | {shown.replace('|', '/')} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Measure and write the instructor guide's blocks.")
    parser.parse_args(argv)
    measured = measure()
    blocks = {
        "minutes": _minutes_block(measured),
        "tokens": _tokens_block(measured),
        "mistakes": _mistakes_block(mistakes()),
    }
    text = GUIDE.read_text(encoding="utf-8")
    GUIDE.write_text(update(text, blocks, prefix="guide"), encoding="utf-8")
    print(f"wrote {len(blocks)} measured blocks into {GUIDE.relative_to(PROJECT_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
