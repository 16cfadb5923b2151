"""The checkpoints themselves: each TODO's text states what its checkpoint checks, a failure is
short and names its smallest input, and the checks are deterministic."""

from __future__ import annotations

import re

import nbformat
import pytest

from helpers.course import checkpoint
from helpers.course.checks.todos import CHECKS
from helpers.course.student_notebooks import SOLUTIONS_DIR, checkpoint_number, student_text


def _stub(*_args, **_kwargs):
    raise NotImplementedError("TODO")


def _todo_text(notebook: str, todo: int) -> str:
    """What an attendee reads for a TODO: the Markdown since the previous checkpoint (or the
    top), and the TODO cell of the generated student notebook."""
    solution = next(SOLUTIONS_DIR.glob(f"{notebook}_*.ipynb"))
    cells = nbformat.reads(student_text(solution), as_version=4).cells  # pristine, never yours
    at = next(i for i, c in enumerate(cells) if checkpoint_number(c) == todo) - 1  # its stub
    start = max(
        [i for i, c in enumerate(cells[:at]) if checkpoint_number(c) is not None], default=-1
    )
    prose = [c.source for c in cells[start + 1 : at] if c.cell_type == "markdown"]
    return "\n".join([*prose, cells[at].source])


@pytest.mark.parametrize(("notebook", "todo"), sorted(CHECKS), ids=lambda v: str(v))
def test_every_property_a_checkpoint_tests_is_named_in_its_todo_text(notebook, todo) -> None:
    with pytest.raises(NotImplementedError):
        CHECKS[(notebook, todo)](_stub)
    text = " ".join(_todo_text(notebook, todo).lower().split())
    missing = [
        (prop.statement, term)
        for prop in checkpoint.REGISTERED[(notebook, todo)].properties
        for term in prop.terms
        if " ".join(term.lower().split()) not in text
    ]
    assert not missing, f"{notebook} TODO {todo}: the page never says {missing}"
    assert all(p.terms for p in checkpoint.REGISTERED[(notebook, todo)].properties)


def test_a_failure_is_short_and_shows_the_smallest_input() -> None:
    def make_preview(output, tool_call_id, limit=600):  # counts bytes
        if len(output.encode()) <= limit:
            return output
        return output[:limit] + f" ...[+{len(output) - limit} chars. full output: "
        f"fetch_tool_output(tool_call_id='{tool_call_id}')]"

    with pytest.raises(checkpoint.CheckpointFailed) as failed:
        CHECKS[("03", 1)](make_preview)
    lines = str(failed.value).splitlines()
    assert len(lines) <= 6 and all(len(line) <= 170 for line in lines)
    assert lines[0].startswith("❌ TODO 1 · make_preview:")
    assert [line.split()[0] for line in lines[1:4]] == ["input", "expected", "got"]
    assert "hint('03', 1)" in lines[-1] and "why()" in lines[-1]
    # the smallest failing input: one non-ASCII character at a limit of one
    assert re.search(r"make_preview\('[^']+' \[1 chars\], 'call_0', limit=1\)", lines[1]), lines[1]


def test_a_checkpoint_is_deterministic() -> None:
    def categorize(name):
        return "query" if name.startswith("internal_resource_") else "execution"

    reports = []
    for _ in range(2):
        with pytest.raises(checkpoint.CheckpointFailed) as failed:
            CHECKS[("06", 1)](categorize)
        reports.append(str(failed.value))
    assert reports[0] == reports[1]


def test_an_exception_in_the_attendees_code_is_reported_with_its_traceback(capsys) -> None:
    def guarded_call(registry, mode, name, arguments):
        return {}["boom"]

    with pytest.raises(checkpoint.CheckpointFailed) as failed:
        CHECKS[("07", 2)](guarded_call)
    assert "raised KeyError: 'boom'" in str(failed.value)
    checkpoint.why()
    assert "your code raised:" in capsys.readouterr().out
