"""The course notebooks as the repository stores them, whatever a room has done to its copies.

Attendees run and edit ``notebooks/`` (and an instructor may run ``solutions/``); JupyterLab saves
their outputs and their answers into those files, and adds notebooks of their own
(``Untitled.ipynb``). None of that is the workbook's business: ``make test`` checks what git
stores. For a tracked notebook that is the staged (index) version, the one the next commit would
hold, read with ``git show :path``; outside a git checkout (an unpacked archive), the file itself.

``python -m devtools.stored_notebooks`` (``make check-notebooks``, part of ``make test``)
exits 1 when a stored course notebook holds outputs, execution counts or the metadata
nbstripout removes, judged by nbstripout itself (``nbstripout --verify`` on copies of the stored
texts), the same check the pre-commit hook runs on the files being committed.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from helpers.base.paths import PROJECT_ROOT
from helpers.course.student_notebooks import solution_notebooks

COURSE_DIRS = ("solutions", "notebooks")


def course_notebooks(root: Path = PROJECT_ROOT) -> list[Path]:
    """The numbered notebooks of ``solutions/`` and ``notebooks/`` under ``root``, sorted;
    an attendee's own notebooks (``Untitled.ipynb``) and JupyterLab's checkpoints are not among
    them."""
    return [path for folder in COURSE_DIRS for path in solution_notebooks(root / folder)]


#: What ``git show :path`` says when there is no staged version to read: outside a git
#: checkout, or a file git does not track. Any other failure is an error, never a fallback.
_NOT_STAGED = ("not a git repository", "exists on disk, but not in the index", "does not exist")


def stored_text(path: Path, root: Path = PROJECT_ROOT) -> str:
    """The text git stores for ``path`` (absolute, under ``root``): the staged version of a
    tracked file, else (untracked, or ``root`` is no git checkout, or git is absent) the file's
    own text (UTF-8).

    Raises:
        FileNotFoundError: the file is neither tracked nor on disk.
        RuntimeError: git failed for another reason (e.g. "dubious ownership" of a checkout
            of another user): the check cannot say what git stores, so it says that.
    """
    relative = path.resolve().relative_to(root.resolve()).as_posix()
    try:
        shown = subprocess.run(
            ["git", "-C", str(root), "show", f":{relative}"],
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        shown = None  # no git on this machine
    if shown is not None and shown.returncode == 0:
        return shown.stdout.decode("utf-8")
    if shown is not None:
        error = shown.stderr.decode("utf-8", "replace")
        if not any(reason in error for reason in _NOT_STAGED):
            raise RuntimeError(f"git cannot show the stored {relative}: {error.strip()[:300]}")
    return path.read_text(encoding="utf-8")


def with_outputs(texts: dict[str, str]) -> list[str]:
    """The names in ``texts`` (name → notebook text) whose notebook nbstripout would change
    (outputs, execution counts, run-time metadata): one ``nbstripout --verify`` run, the venv's
    own copy, over copies in a temporary folder.

    Raises:
        RuntimeError: nbstripout failed for another reason (an unreadable notebook).
    """
    nbstripout = Path(sys.executable).with_name("nbstripout")
    with tempfile.TemporaryDirectory() as folder:
        paths = {}
        for index, (name, text) in enumerate(texts.items()):
            paths[name] = Path(folder) / f"{index:03d}.ipynb"
            paths[name].write_text(text, encoding="utf-8")
        if not paths:
            return []
        done = subprocess.run(
            [str(nbstripout), "--verify", *map(str, paths.values())],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    if done.returncode not in (0, 1) or done.stderr.strip():
        raise RuntimeError(f"nbstripout failed: {(done.stderr or done.stdout)[-300:]}")
    return [name for name, path in paths.items() if str(path) in done.stdout]


def main(argv: list[str] | None = None) -> int:
    """Exit 0 when every stored course notebook is stripped; else name each and exit 1."""
    del argv
    notebooks = course_notebooks()
    texts = {str(p.relative_to(PROJECT_ROOT)): stored_text(p) for p in notebooks}
    dirty = with_outputs(texts)
    for name in dirty:
        print(f"{name} is stored with outputs")
    if dirty:
        print("strip them before committing: make strip, then git add the notebooks")
        return 1
    print(f"{len(notebooks)} course notebooks stored without outputs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
