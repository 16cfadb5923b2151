"""A fair checkpoint passes a correct answer in any style.

``tests/correct_answers.py`` holds correct answers to every TODO written from the attendee
notebooks alone, in styles other than the solution's. Each runs here, in this process, in a
namespace that holds what the notebook's own import cells import (as the attendee's kernel does),
against its TODO's checkpoint: each must pass. (The kernel test, ``tests/test_notebooks.py``,
proves the other side: the stub and every plausible wrong answer are stopped.)
"""

from __future__ import annotations

import ast
import contextlib
import io
from functools import cache
from typing import Any

import nbformat
import pytest
from correct_answers import CORRECT_ANSWERS

from helpers.course.checks.todos import CHECKS
from helpers.course.student_notebooks import SOLUTIONS_DIR, todo_number

ANSWERS = [
    (notebook, todo, style, source)
    for (notebook, todo), answers in sorted(CORRECT_ANSWERS.items())
    for style, source in answers
]


@cache
def _imports(notebook: str) -> str:
    """The import statements of a notebook's code cells before its first TODO: the names an
    attendee's TODO cell can use."""
    path = next(SOLUTIONS_DIR.glob(f"{notebook}_*.ipynb"))
    statements: list[str] = []
    for cell in nbformat.read(path, as_version=4).cells:
        if todo_number(cell) is not None:
            break
        if cell.cell_type != "code" or "workbook-install" in cell.metadata.get("tags", []):
            continue
        tree = ast.parse(cell.source)
        statements += [
            ast.unparse(node) for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)
        ]
    return "\n".join(statements)


def test_every_todo_has_correct_answers_in_other_styles() -> None:
    assert set(CORRECT_ANSWERS) == set(CHECKS)


@pytest.mark.parametrize(
    ("notebook", "todo", "style", "source"),
    ANSWERS,
    ids=[f"{n}-TODO{t}-{i}" for i, (n, t, _, _) in enumerate(ANSWERS)],
)
def test_a_correct_answer_in_another_style_passes(notebook, todo, style, source) -> None:
    namespace: dict[str, Any] = {}
    exec(_imports(notebook), namespace)
    exec(source, namespace)
    check = CHECKS[(notebook, todo)]
    function = namespace[check.__name__.removeprefix("check_")]
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown):
        check(function)  # a stop raises, with its short report as the message
    assert f"✓ TODO {todo} passed" in shown.getvalue(), f"{style}: {shown.getvalue()}"
