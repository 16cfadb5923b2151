"""Where the workbook keeps things on disk.

Committed inputs live in ``data/``. Everything the workbook writes at run time (the tool-output
store, the built reference database, the drive outbox, the tokenizer cache) lives in the run-time
folder ``var/``, which git ignores. ``WORKBOOK_VAR_DIR`` moves it (tests point it at a temporary
folder).

Two ways to have the workbook: a checkout (``make lab``: the course files are the repository's,
and the user's ``.env`` and ``var/`` sit at its root), or an installed wheel (``pip install`` on
Binder, Colab or a laptop without the repository): the wheel carries ``data/``, ``notebooks/`` and
``solutions/`` inside the package (``helpers/_course/``, see pyproject.toml), and the user's
``.env`` and ``var/`` are in the folder they work in (:func:`workspace_dir`).

What the workbook writes is the user's own: tool outputs, conversations, drive files. Its folders
are made owner-only (:data:`PRIVATE_DIR_MODE`) and its database files owner-only
(:data:`PRIVATE_FILE_MODE`); a folder or file of the current user left with wider modes by an
earlier version is tightened when it is next opened (:func:`private_dir`, :func:`private_file`).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from pathlib import Path

#: The ``helpers`` package (this module is helpers/base/paths.py).
_PACKAGE_DIR = Path(__file__).resolve().parent.parent
#: Where an installed wheel keeps the course files (absent in a checkout).
BUNDLED_COURSE_DIR: Path = _PACKAGE_DIR / "_course"
#: Whether this is an installed wheel rather than a checkout of the repository.
INSTALLED: bool = BUNDLED_COURSE_DIR.is_dir()
#: The root of the course files: the checkout, or the files bundled in the installed wheel.
PROJECT_ROOT: Path = BUNDLED_COURSE_DIR if INSTALLED else _PACKAGE_DIR.parent
#: The folder holding the ``helpers`` package (what a fresh interpreter needs on ``sys.path``).
PACKAGE_PARENT: Path = _PACKAGE_DIR.parent
#: The file ``workbook copy-notebooks`` leaves in a folder of one's own (an installed wheel):
#: that folder, and every folder under it, uses its ``.env`` and ``var/``.
WORKSPACE_MARKER = ".workbook-workspace"
DATA_DIR: Path = PROJECT_ROOT / "data"
CASES_DIR: Path = DATA_DIR / "cases"

#: Mode of every folder the workbook creates for itself (``var/``, the outbox): owner only.
PRIVATE_DIR_MODE = 0o700
#: Mode of every database file the workbook creates (the store, its ``-wal``/``-shm``/``-journal``
#: siblings, the reference database): owner read and write only.
PRIVATE_FILE_MODE = 0o600
#: The permission bits of the group and of others: none of them is set on a private path.
GROUP_OTHER_BITS = 0o077


def make_owner_only(path: Path) -> None:
    """Clear the group and other bits of ``path`` (following a symlink) if the current user owns
    it; a path of another user, or a system without POSIX owners, is left as it is. Best effort:
    a file system that refuses ``chmod`` (read-only, FAT, some network mounts) leaves the mode
    unchanged.

    Raises:
        FileNotFoundError: ``path`` does not exist.
    """
    if not hasattr(os, "geteuid"):
        return
    info = os.stat(path)
    mode = stat.S_IMODE(info.st_mode)
    if info.st_uid == os.geteuid() and mode & GROUP_OTHER_BITS:
        with contextlib.suppress(OSError):
            os.chmod(path, mode & ~GROUP_OTHER_BITS)


def private_dir(path: Path) -> Path:
    """``path``, created if missing with mode :data:`PRIVATE_DIR_MODE` (its missing parents get
    the default mode), its group and other bits cleared if it already existed and is the current
    user's.

    Args:
        path: the folder.

    Returns:
        ``path``.

    Raises:
        OSError: the folder cannot be created, or exists and is not a folder.
    """
    path.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    make_owner_only(path)
    return path


def private_file(path: Path) -> Path:
    """``path``, created empty if missing with mode :data:`PRIVATE_FILE_MODE` (``O_EXCL``: never
    through an existing symlink), its group and other bits cleared if it already existed and is
    the current user's. The folder must exist.

    Args:
        path: the file (an empty file is a valid, empty SQLite database).

    Returns:
        ``path``.

    Raises:
        OSError: the file cannot be created (missing folder, no permission).
    """
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE))
    make_owner_only(path)
    return path


#: How a temporary file of the workbook's names the process writing it: ``name.pid<N>.…``.
_WRITER_PID_RE = re.compile(r"\.pid(\d+)\.")


def writer_prefix(name: str) -> str:
    """The prefix of a temporary file this process writes before moving it to ``name``
    (``iso_reference.sqlite.pid4242.``): :func:`remove_abandoned` knows whose it is."""
    return f"{name}.pid{os.getpid()}."


def remove_abandoned(folder: Path) -> int:
    """Delete the temporary files in ``folder`` (named by :func:`writer_prefix`, with any
    SQLite ``-journal``) whose writer has died: a build killed mid-way (a kernel restarted during
    the first ``run_sql``) leaves its file, which nothing else would remove. A live writer's file
    is left alone. Returns how many were deleted."""
    removed = 0
    for path in folder.glob("*.pid*.*"):
        match = _WRITER_PID_RE.search(path.name)
        if match is None or _process_alive(int(match[1])):
            continue
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed += 1
    return removed


def _process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (one of another user counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def workbook_version() -> str:
    """The installed distribution's version (pyproject.toml's), or ``"unknown"`` when the
    package is imported from a folder without installing it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("context-relay-workbook")
    except PackageNotFoundError:
        return "unknown"


def workspace_dir() -> Path:
    """The user's own folder, where ``.env`` is read and ``var/`` made: the checkout's root, or,
    for an installed wheel, the nearest folder at or above the current one holding
    :data:`WORKSPACE_MARKER` (where ``workbook copy-notebooks`` put the notebooks; its
    ``solutions/`` share it), else the current folder."""
    if not INSTALLED:
        return PROJECT_ROOT
    here = Path.cwd()
    return next((p for p in (here, *here.parents) if (p / WORKSPACE_MARKER).is_file()), here)


def var_dir() -> Path:
    """The run-time folder (``$WORKBOOK_VAR_DIR`` or ``var/`` in :func:`workspace_dir`), created
    on first use with mode :data:`PRIVATE_DIR_MODE` (an existing folder of the current user is
    tightened to it)."""
    return private_dir(Path(os.environ.get("WORKBOOK_VAR_DIR") or workspace_dir() / "var"))


def store_db_path() -> Path:
    """The default SQLite file of the tool-output store."""
    return var_dir() / "tool_outputs.sqlite"


def reference_db_path() -> Path:
    """The read-only reference database that ``run_sql`` queries (built by ``workbook build-data``)."""
    return var_dir() / "iso_reference.sqlite"


def outbox_dir() -> Path:
    """The folder that ``google_drive_write_file`` writes into (mode :data:`PRIVATE_DIR_MODE`)."""
    return private_dir(var_dir() / "outbox")
