"""What ``make test`` checks is what git stores: an attendee who ran and answered every notebook
(outputs saved, scratch notebooks added) fails nothing, and a notebook staged with outputs does."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

from devtools.stored_notebooks import course_notebooks, stored_text, with_outputs
from helpers.course.student_notebooks import SOLUTIONS_DIR, student_text

SOLUTION = next(SOLUTIONS_DIR.glob("03_*.ipynb"))


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
    )


def _run_notebook_text() -> str:
    """A notebook as JupyterLab saves it after an attendee ran it: outputs, counts."""
    notebook = nbformat.reads(student_text(SOLUTION), as_version=4)
    for count, cell in enumerate(c for c in notebook.cells if c.cell_type == "code"):
        cell.execution_count = count + 1
        cell.outputs = [nbformat.v4.new_output("stream", text=f"ran {count}\n")]
    return nbformat.writes(notebook)


@pytest.fixture
def room_copy(tmp_path) -> Path:
    """A git checkout holding one stripped course notebook in notebooks/ and solutions/."""
    for folder in ("notebooks", "solutions"):
        (tmp_path / folder).mkdir()
    (tmp_path / "notebooks" / SOLUTION.name).write_text(student_text(SOLUTION), encoding="utf-8")
    shutil.copy(SOLUTION, tmp_path / "solutions" / SOLUTION.name)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "course")
    return tmp_path


def test_an_attendees_saved_outputs_and_own_notebooks_fail_nothing(room_copy) -> None:
    mine = room_copy / "notebooks" / SOLUTION.name
    mine.write_text(_run_notebook_text(), encoding="utf-8")
    (room_copy / "notebooks" / "Untitled.ipynb").write_text(_run_notebook_text(), encoding="utf-8")
    (room_copy / "solutions" / "Untitled1.ipynb").write_text(_run_notebook_text(), "utf-8")
    found = course_notebooks(room_copy)
    assert [p.name for p in found] == [SOLUTION.name, SOLUTION.name]
    texts = {str(p): stored_text(p, room_copy) for p in found}
    assert texts[str(mine)] == student_text(SOLUTION)  # the stored one, not the attendee's
    assert with_outputs(texts) == []


def test_a_notebook_staged_with_outputs_is_named(room_copy) -> None:
    staged = room_copy / "solutions" / SOLUTION.name
    staged.write_text(_run_notebook_text(), encoding="utf-8")
    _git(room_copy, "add", ".")
    texts = {str(p): stored_text(p, room_copy) for p in course_notebooks(room_copy)}
    assert with_outputs(texts) == [str(staged)]


def test_outside_git_the_files_themselves_are_checked(tmp_path) -> None:
    (tmp_path / "notebooks").mkdir()
    path = tmp_path / "notebooks" / SOLUTION.name
    path.write_text(_run_notebook_text(), encoding="utf-8")
    assert stored_text(path, tmp_path) == path.read_text(encoding="utf-8")
    assert with_outputs({"run": stored_text(path, tmp_path)}) == ["run"]
    with pytest.raises(FileNotFoundError):
        stored_text(tmp_path / "notebooks" / "00_gone.ipynb", tmp_path)


def test_an_unreadable_notebook_is_an_error_not_a_pass() -> None:
    with pytest.raises(RuntimeError, match="nbstripout"):
        with_outputs({"broken": "{not json"})


def test_a_solution_an_instructor_ran_gives_the_same_student_notebook(tmp_path) -> None:
    """Outputs, counts, run metadata and the kernel's version, as a run leaves them in the
    solution, never reach the generated student notebook."""
    notebook = nbformat.reads(_run_notebook_text(), as_version=4)
    solution = nbformat.read(SOLUTION, as_version=4)
    for ran, cell in zip(notebook.cells, solution.cells, strict=True):
        ran.source = cell.source
        ran.metadata["execution"] = {"iopub.status.idle": "2026-11-25T14:46:51Z"}
        ran.metadata["scrolled"] = True
    notebook.metadata["language_info"] = {"name": "python", "version": "3.13.1"}
    notebook.metadata["widgets"] = {"state": {}}
    ran_path = tmp_path / SOLUTION.name
    nbformat.write(notebook, ran_path)
    assert student_text(ran_path) == student_text(SOLUTION)


def test_a_git_that_fails_is_an_error_never_the_working_file(room_copy) -> None:
    """When git cannot say what it stores (here a damaged index; on a shared machine, "dubious
    ownership"), the check says so instead of reading the attendee's working file."""
    (room_copy / ".git" / "index").write_bytes(b"DIRC garbage")
    mine = room_copy / "notebooks" / SOLUTION.name
    mine.write_text(_run_notebook_text(), encoding="utf-8")
    with pytest.raises(RuntimeError, match="git cannot show"):
        stored_text(mine, room_copy)
