"""Hints on demand, in three levels: the idea, the approach, then something close to code.

A stub in a student notebook says where to look and how to ask: ``hint("04", 2)``. Each call
shows one more level (or the level asked for), read from the solution notebook's ``### HINT N:``
lines, never its code::

    hint("04", 2)           # level 1: the idea
    hint("04", 2, level=2)  # levels 1 and 2: the approach
    hint("04", 2, level=3)  # all three: close to code
"""

from __future__ import annotations

from helpers.course.student_notebooks import (
    code_cell_sources,
    notebook_key,
    solution_named,
    solution_parts,
    todo_in_code,
)

LEVELS = {1: "the idea", 2: "the approach", 3: "close to code"}


def hints_for(notebook: str | int, todo: int) -> dict[int, str]:
    """The three hints of TODO ``todo`` of notebook ``notebook`` (``"04"``, ``4`` or its full
    name).

    Raises:
        LookupError: no such notebook or TODO.
    """
    try:
        path = solution_named(notebook)
    except LookupError as exc:
        raise LookupError(f"{exc}; use its number, e.g. hint('04', 2)") from None
    for source in code_cell_sources(path):  # never nbformat: hint() runs in a kernel
        if todo_in_code(source) == todo:
            return solution_parts(source, label=f"TODO {todo}")[1]
    raise LookupError(f"notebook {path.stem} has no TODO {todo}")


def hint(notebook: str | int, todo: int, level: int = 1) -> None:
    """Print the hints of a TODO up to ``level`` (1-3); ``notebook`` is its number, ``"04"``
    (or ``4``)."""
    if level not in LEVELS:
        raise ValueError("level is 1 (the idea), 2 (the approach) or 3 (close to code)")
    notebook = notebook_key(notebook)
    hints = hints_for(notebook, todo)
    text = "\n".join(f"Hint {n} ({LEVELS[n]}): {hints[n]}" for n in range(1, level + 1))
    if level < 3:
        text += f"\n(more: hint({notebook!r}, {todo}, level={level + 1}))"
    print(text)
