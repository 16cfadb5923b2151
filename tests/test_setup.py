"""Set-up that cannot trap an attendee: the Python version is checked before anything is made,
and a .venv left by an older Python is rebuilt instead of failing later."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
OLD_PYTHON = (
    '#!/bin/sh\nif [ "$1" = "--version" ]; then echo "Python 3.10.12"; exit 0; fi\nexit 1\n'
)

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _make(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """``make ARGS`` on a copy of the Makefile in ``folder``, as an attendee runs it (not as a
    sub-make of ``make test``, whose variables would follow it in)."""
    shutil.copy(ROOT / "Makefile", folder / "Makefile")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    return subprocess.run(
        ["make", "--no-print-directory", *args], cwd=folder, capture_output=True, text=True, env=env
    )


def _old_python(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(OLD_PYTHON)
    path.chmod(0o755)
    return path


def test_an_old_python_gets_one_line_and_no_venv(tmp_path) -> None:
    old = _old_python(tmp_path / "bin" / "python3.10")
    done = _make(tmp_path, ".venv/bin/python", f"PYTHON={old}")
    assert done.returncode != 0
    assert done.stdout.strip().splitlines() == [
        f"The workbook needs Python 3.11 or newer, and {old} is Python 3.10.12: install one "
        "and run, e.g., make .venv/bin/python PYTHON=python3.12"
    ]
    assert not (tmp_path / ".venv").exists()


def test_a_venv_of_an_old_python_is_rebuilt(tmp_path) -> None:
    _old_python(tmp_path / ".venv" / "bin" / "python")
    done = _make(tmp_path, ".venv/bin/python", f"PYTHON={sys.executable}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert ".venv was made with Python 3.10.12: removing it" in done.stdout
    version = subprocess.run(
        [
            tmp_path / ".venv" / "bin" / "python",
            "-c",
            "import sys; print(sys.version_info >= (3, 11))",
        ],
        capture_output=True,
        text=True,
    )
    assert version.stdout.strip() == "True"


def test_jupyterlab_reads_the_workbooks_settings_no_news_pop_up() -> None:
    """make installs jupyter/overrides.json where this venv's JupyterLab reads its defaults:
    no news pop-up greets an attendee, and no update check."""
    import json

    from jupyterlab.labapp import LabApp

    shipped = json.loads((ROOT / "jupyter" / "overrides.json").read_text())
    installed = Path(LabApp().app_settings_dir) / "overrides.json"
    assert json.loads(installed.read_text()) == shipped
    notification = shipped["@jupyterlab/apputils-extension:notification"]
    assert notification == {"fetchNews": "false", "checkForUpdates": False}


def test_native_windows_is_told_where_to_run_before_anything_fails_halfway() -> None:
    """On native Windows ``import helpers`` (a notebook's first import, and the CLI's) stops with
    one sentence naming WSL 2 and the browser paths, instead of a tool failing in notebook 03."""
    from hang import HANG_GUARD_S

    done = subprocess.run(
        [sys.executable, "-c", "import sys; sys.platform = 'win32'; import helpers"],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: the Context Relay Workbook needs Linux or macOS")
    assert "WSL 2" in last and "Colab" in last
    cli = subprocess.run(
        [sys.executable, "-c", "import sys; sys.platform = 'win32'; "
         "sys.argv = ['C:\\\\venv\\\\Scripts\\\\workbook.exe', 'models']; import helpers"],
        capture_output=True, text=True, timeout=HANG_GUARD_S,
    )  # fmt: skip
    assert cli.returncode == 1
    assert cli.stderr.startswith("workbook: the Context Relay Workbook needs Linux or macOS")
    assert cli.stderr.count("\n") == 1  # the console script: one line, no traceback
