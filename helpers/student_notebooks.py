"""Student notebooks, generated from the solution notebooks (the one source of truth).

A TODO cell starts with ``# TODO N: …``; its answer stands between nbgrader's markers::

    # TODO 1: append one tool message per call
    def handle_tool_calls(...):
        ### BEGIN SOLUTION
        ### HINT: parse call.function.arguments with json.loads …
        ...
        ### END SOLUTION

The student version replaces everything from ``### BEGIN SOLUTION`` to ``### END SOLUTION``
with ``raise NotImplementedError("TODO 1: <hint>")`` at the same indentation (the hint is the
``### HINT:`` line, our addition to nbgrader's syntax). The cell after each TODO cell is its
checkpoint, headed ``# Hard-stop checkpoint: TODO N``.

``python -m helpers.student_notebooks`` (``make student``) writes ``notebooks/NN_*.ipynb``
from ``notebooks/solutions/NN_*.ipynb``; ``--check`` exits 1 when the committed student
notebooks differ from what it would write.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

from helpers.paths import PROJECT_ROOT

NOTEBOOKS_DIR = PROJECT_ROOT / "notebooks"
SOLUTIONS_DIR = NOTEBOOKS_DIR / "solutions"
BEGIN, END, HINT = "### BEGIN SOLUTION", "### END SOLUTION", "### HINT:"
TODO_RE = re.compile(r"^# TODO (\d+):", re.MULTILINE)
CHECKPOINT_RE = re.compile(r"^# Hard-stop checkpoint: TODO (\d+)\b")


class NotebookFormatError(ValueError):
    """A solution notebook breaks the conventions above (unbalanced markers, no checkpoint…)."""


def todo_number(cell: nbformat.NotebookNode) -> int | None:
    """N if ``cell`` is the code cell of TODO N (it holds solution markers), else ``None``."""
    if cell.cell_type != "code" or BEGIN not in cell.source:
        return None
    match = TODO_RE.search(cell.source)
    return int(match[1]) if match else None


def checkpoint_number(cell: nbformat.NotebookNode) -> int | None:
    """N if ``cell`` is the hard-stop checkpoint of TODO N, else ``None``."""
    match = CHECKPOINT_RE.match(cell.source) if cell.cell_type == "code" else None
    return int(match[1]) if match else None


def strip_solution(source: str, *, label: str) -> str:
    """``source`` with each solution block replaced by a ``NotImplementedError`` stub.

    Raises:
        NotebookFormatError: markers are unbalanced or nested.
    """
    out: list[str] = []
    inside = False
    hint = ""
    indent = ""
    for line in source.split("\n"):
        stripped = line.strip()
        if stripped == BEGIN:
            if inside:
                raise NotebookFormatError(f"{label}: nested {BEGIN}")
            inside, hint, indent = True, "", line[: len(line) - len(line.lstrip())]
        elif stripped == END:
            if not inside:
                raise NotebookFormatError(f"{label}: {END} without {BEGIN}")
            message = f"{label}: {hint}" if hint else f"{label}: your code here"
            out.append(f"{indent}raise NotImplementedError({message!r})")
            inside = False
        elif inside:
            if stripped.startswith(HINT) and not hint:
                hint = stripped[len(HINT) :].strip()
        else:
            out.append(line)
    if inside:
        raise NotebookFormatError(f"{label}: {BEGIN} without {END}")
    return "\n".join(out)


def make_student(
    solution: nbformat.NotebookNode, *, name: str = "notebook"
) -> nbformat.NotebookNode:
    """The student version of a solution notebook (outputs cleared, solutions stubbed).

    Raises:
        NotebookFormatError: a TODO cell is not followed by its checkpoint.
    """
    student = nbformat.from_dict(solution)
    cells = student.cells
    for index, cell in enumerate(cells):
        if cell.cell_type != "code":
            continue
        cell.outputs, cell.execution_count = [], None
        number = todo_number(cell)
        if number is None:
            if BEGIN in cell.source:
                raise NotebookFormatError(f"{name}: a cell with {BEGIN} has no '# TODO N:' line")
            continue
        following = cells[index + 1] if index + 1 < len(cells) else None
        if following is None or checkpoint_number(following) != number:
            raise NotebookFormatError(
                f"{name}: TODO {number} is not followed by its checkpoint cell"
            )
        cell.source = strip_solution(cell.source, label=f"TODO {number}")
    return student


def fill_todos(
    student: nbformat.NotebookNode, solution: nbformat.NotebookNode, numbers: set[int]
) -> nbformat.NotebookNode:
    """A copy of ``student`` whose TODO cells in ``numbers`` hold the solution's answer."""
    filled = nbformat.from_dict(student)
    answers = {todo_number(c): c.source for c in solution.cells if todo_number(c) is not None}
    for cell in filled.cells:
        match = TODO_RE.search(cell.source) if cell.cell_type == "code" else None
        if match and int(match[1]) in numbers and "NotImplementedError" in cell.source:
            cell.source = answers[int(match[1])]
    return filled


def todo_numbers(notebook: nbformat.NotebookNode) -> list[int]:
    """The TODO numbers of a solution notebook, in order."""
    return [n for n in (todo_number(c) for c in notebook.cells) if n is not None]


def pairs() -> list[tuple[Path, Path]]:
    """(solution, student) paths of every solution notebook."""
    return [(p, NOTEBOOKS_DIR / p.name) for p in sorted(SOLUTIONS_DIR.glob("*.ipynb"))]


def render(notebook: nbformat.NotebookNode) -> str:
    """A notebook as the text ``nbformat.write`` stores."""
    return nbformat.writes(notebook) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="only check the committed ones")
    args = parser.parse_args(argv)
    stale = []
    for solution_path, student_path in pairs():
        solution = nbformat.read(solution_path, as_version=4)
        text = render(make_student(solution, name=solution_path.name))
        current = student_path.read_text(encoding="utf-8") if student_path.exists() else None
        if current != text:
            if args.check:
                stale.append(student_path.name)
            else:
                student_path.write_text(text, encoding="utf-8")
                print(f"wrote {student_path.relative_to(PROJECT_ROOT)}")
    if stale:
        print(f"student notebooks out of date: {', '.join(stale)} (run `make student`)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
