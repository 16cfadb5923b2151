"""Where the workbook keeps things on disk.

Committed inputs live in ``data/``. Everything the workbook writes at run time (the tool-output
store, the built reference database, the drive outbox, the tokenizer cache) lives in the run-time
folder ``var/``, which git ignores. ``WORKBOOK_VAR_DIR`` moves it (tests point it at a temporary
folder).
"""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT: Path = Path(__file__).resolve().parent.parent
DATA_DIR: Path = PROJECT_ROOT / "data"
CASES_DIR: Path = DATA_DIR / "cases"


def var_dir() -> Path:
    """The run-time folder (``$WORKBOOK_VAR_DIR`` or ``<project>/var``), created on first use."""
    path = Path(os.environ.get("WORKBOOK_VAR_DIR") or PROJECT_ROOT / "var")
    path.mkdir(parents=True, exist_ok=True)
    return path


def store_db_path() -> Path:
    """The default SQLite file of the tool-output store."""
    return var_dir() / "tool_outputs.sqlite"


def reference_db_path() -> Path:
    """The read-only reference database that ``run_sql`` queries (built by ``workbook build-data``)."""
    return var_dir() / "iso_reference.sqlite"


def outbox_dir() -> Path:
    """The folder that ``google_drive_write_file`` writes into."""
    path = var_dir() / "outbox"
    path.mkdir(parents=True, exist_ok=True)
    return path
