"""How long an attendee waits: ``make lab`` on a fresh clone, timed to the URL it prints.

:func:`time_lab_start` clones the repository's HEAD into a temporary folder and runs ``make lab``
there as a new user would, on a free loopback port, reading its output until JupyterLab prints
``http://127.0.0.1:PORT/lab?token=…``; then it stops JupyterLab and runs ``make lab`` again (the
set-up already done). uv's package cache is whatever this machine has (warm after one install),
which the figure says. ``make bench`` reports it in the README's set-up block.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from helpers.base.paths import PROJECT_ROOT

#: Seconds a ``make lab`` may take to print its URL before the measurement gives up.
LAB_START_GUARD_S = 1_200.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _seconds_to_url(clone: Path, env: dict[str, str]) -> float:
    """Run ``make lab`` in ``clone``; seconds until it prints its URL; then stop it.

    Raises:
        RuntimeError: ``make lab`` ended, or printed no URL within :data:`LAB_START_GUARD_S`
            (the message holds its last output).
    """
    port = _free_port()
    url = re.compile(rf"http://127\.0\.0\.1:{port}/lab\?token=\w+")
    started = time.monotonic()
    lab = subprocess.Popen(
        ["make", "--no-print-directory", "lab", f"LAB_PORT={port}"],
        cwd=clone,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: JupyterLab and make stop together
    )
    seen: list[str] = []
    try:
        assert lab.stdout is not None
        for line in lab.stdout:
            seen.append(line)
            if url.search(line):
                return time.monotonic() - started
            if time.monotonic() - started > LAB_START_GUARD_S:
                break
        raise RuntimeError("make lab printed no URL: " + "".join(seen[-20:]))
    finally:
        os.killpg(lab.pid, signal.SIGTERM)
        try:
            lab.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(lab.pid, signal.SIGKILL)
            lab.wait()


def _size_mb(folder: Path) -> float:
    """The files under ``folder``, in megabytes (10⁶ bytes) of disk."""
    blocks = sum(p.lstat().st_blocks for p in folder.rglob("*") if not p.is_symlink())
    return blocks * 512 / 1_000_000


def time_lab_start() -> dict[str, Any]:
    """``make lab`` on a fresh clone of HEAD, twice: ``first_s`` (install, data, JupyterLab, to
    the URL), ``again_s`` (set up already), ``venv_mb`` (the ``.venv`` it made) and
    ``python`` (the interpreter ``make`` used).

    Raises:
        RuntimeError: the clone or ``make lab`` failed.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    env.pop("VIRTUAL_ENV", None)
    with tempfile.TemporaryDirectory() as folder:
        clone = Path(folder) / "workbook"
        done = subprocess.run(
            ["git", "clone", "-q", str(PROJECT_ROOT), str(clone)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            raise RuntimeError(f"git clone failed: {done.stderr[-500:]}")
        first = _seconds_to_url(clone, env)
        again = _seconds_to_url(clone, env)
        python = subprocess.run(
            [str(clone / ".venv" / "bin" / "python"), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout.split()[-1]
        return {
            "first_s": first,
            "again_s": again,
            "venv_mb": _size_mb(clone / ".venv"),
            "python": python,
        }


def setup_markdown(timing: dict[str, Any], machine: dict[str, Any]) -> str:
    """The README's set-up figures, from :func:`time_lab_start` and the bench's machine."""
    return (
        f"`make lab` on a fresh clone reached its URL in **{timing['first_s']:.0f} s** (install "
        f"with uv's package cache warm, reference data, JupyterLab), and in "
        f"{timing['again_s']:.0f} s the next time; `.venv` took {timing['venv_mb']:,.0f} MB "
        f"(measured by `make bench` on {machine['cpu']}, {machine['cores']} cores, Python "
        f"{timing['python']}, {machine['date']}). The first install on a machine without the "
        "cache downloads the packages too."
    )
