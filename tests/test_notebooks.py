"""The notebooks: student versions are generated from the solutions, and every hard-stop
checkpoint is shown to fail on its stub and pass on its answer (executed with nbclient)."""

from __future__ import annotations

import contextlib

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from helpers.student_notebooks import (
    BEGIN,
    END,
    HINT,
    NOTEBOOKS_DIR,
    checkpoint_number,
    fill_todos,
    make_student,
    pairs,
    render,
    todo_number,
    todo_numbers,
)

PAIRS = pairs()
TODOS = [
    (solution, student, n)
    for solution, student in PAIRS
    for n in todo_numbers(nbformat.read(solution, as_version=4))
]


def test_there_are_notebooks_with_todos() -> None:
    assert len(PAIRS) >= 4 and len(TODOS) >= 5


@pytest.mark.parametrize(("solution", "student"), PAIRS, ids=[p[0].name for p in PAIRS])
def test_committed_student_notebook_is_generated_and_holds_no_solution(solution, student) -> None:
    expected = render(make_student(nbformat.read(solution, as_version=4), name=solution.name))
    assert student.exists(), f"{student.name} is missing: run `make student`"
    text = student.read_text(encoding="utf-8")
    assert text == expected, f"{student.name} differs from its solution: run `make student`"
    for marker in (BEGIN, END, HINT):
        assert marker not in text


def _run(notebook: nbformat.NotebookNode) -> int | None:
    """Execute top to bottom; the index of the cell where execution stopped with an error."""
    client = NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS_DIR)}},
    )
    with contextlib.suppress(CellExecutionError):
        client.execute()
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code" and any(o.get("output_type") == "error" for o in cell.outputs):
            return index
    return None


@pytest.mark.parametrize(
    ("solution", "student", "n"), TODOS, ids=[f"{s.stem}-TODO{n}" for s, _, n in TODOS]
)
def test_checkpoint_stops_on_the_stub_and_passes_on_the_answer(solution, student, n) -> None:
    solution_nb = nbformat.read(solution, as_version=4)
    student_nb = nbformat.read(student, as_version=4)
    todo_at = next(
        i for i, c in enumerate(student_nb.cells) if todo_number(solution_nb.cells[i]) == n
    )
    checkpoint_at = todo_at + 1
    assert checkpoint_number(student_nb.cells[checkpoint_at]) == n

    stub = fill_todos(student_nb, solution_nb, set(range(1, n)))
    stopped = _run(stub)
    assert stopped in (todo_at, checkpoint_at), (
        f"with TODO {n} unanswered, execution must stop in TODO {n} or its checkpoint, "
        f"stopped at cell {stopped}"
    )
    error = next(o for o in stub.cells[stopped].outputs if o.get("output_type") == "error")
    assert error["ename"] == "NotImplementedError" and f"TODO {n}" in error["evalue"]

    answered = fill_todos(student_nb, solution_nb, set(range(1, n + 1)))
    stopped = _run(answered)
    assert stopped is None or stopped > checkpoint_at, (
        f"with TODO {n} answered, execution stopped at cell {stopped}, before its checkpoint passed"
    )
    printed = "".join(o.get("text", "") for o in answered.cells[checkpoint_at].outputs)
    assert f"✅ TODO {n} passed" in printed
