"""``workbook`` commands for the tests, each in a process of its own, forked from one that has
imported the command line once: multiprocessing's forkserver with the CLI preloaded (the Python
documentation: library/multiprocessing.html, "forkserver" and ``set_forkserver_preload``).

What a test sees is what ``python -m helpers.cli ARGS`` gives it: a process of its own with its
environment, working folder and exit code, and its standard streams in files (not a terminal,
as in a pipe). What it saves is the imports, about 0.6 s of CPU a command (the openai package's
alone is 0.5 s: openai/openai-python#2819), some 100 times in ``tests/test_cli.py``. The server
process imports modules and runs nothing else, so a command starts from the state a fresh
interpreter has after importing them; no module of the workbook reads the environment at import
(each reads it when a command runs), so the environment a test gives is the one the command
sees. A test about the process itself (a reader that goes away, what an import loads, a signal)
starts ``python -m helpers.cli`` itself.
"""

from __future__ import annotations

import atexit
import locale
import multiprocessing
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from hang import HANG_GUARD_S

import helpers.cli

#: What the server process imports once: the command line and what its commands import when
#: they run (the agent loop, the SDK, the offline model, the store, the tools).
PRELOAD = (
    "helpers.cli",
    "helpers.cli.ask",
    "helpers.cli.cases",
    "helpers.cli.compare",
    "helpers.cli.outputs",
    "helpers.loop.agent",
    "helpers.models.llm",
    "helpers.models.offline",
    "helpers.store.tool_outputs",
    "helpers.tooling.tools",
    "forked_cli",
)
#: ``sys.argv[0]`` of ``python -m helpers.cli``.
MAIN_PATH = str(Path(helpers.cli.__file__).with_name("__main__.py"))

_context: multiprocessing.context.ForkServerContext | None = None


def _forkserver() -> multiprocessing.context.ForkServerContext:
    global _context
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(list(PRELOAD))
    return _context


def _command(
    args: list[str], env: dict[str, str], cwd: str, stdin: str, stdout: str, stderr: str
) -> None:
    """In the forked process: become ``python -m helpers.cli ARGS`` and run it to its end."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    for fd, path, flags in (
        (0, stdin, os.O_RDONLY),
        (1, stdout, os.O_WRONLY),
        (2, stderr, os.O_WRONLY),
    ):
        opened = os.open(path, flags)
        os.dup2(opened, fd)
        os.close(opened)
    encoding = locale.getpreferredencoding(False)  # as the interpreter chooses for a pipe
    sys.stdin = open(0, encoding=encoding, closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding=encoding, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding=encoding, errors="backslashreplace", closefd=False)  # noqa: SIM115
    sys.argv = [MAIN_PATH, *args]
    try:
        code = helpers.cli.console_main()
    finally:  # what the interpreter does at its end: multiprocessing's child skips it
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    sys.exit(code)


def run_workbook(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    stdin: str = "",
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = HANG_GUARD_S,
) -> subprocess.CompletedProcess[str]:
    """``workbook ARGS`` (``env``: its whole environment, default this process's; ``stdin``:
    its standard input) run to its end, as :func:`subprocess.run` with ``capture_output=True``
    and ``text=True`` reports it. ``timeout``, in seconds, is a hang guard: past it the command
    is killed and :class:`subprocess.TimeoutExpired` raised."""
    with tempfile.TemporaryDirectory(prefix="workbook-forked-") as folder:
        paths = [str(Path(folder) / name) for name in ("stdin", "stdout", "stderr")]
        Path(paths[0]).write_text(stdin, encoding=locale.getpreferredencoding(False))
        for path in paths[1:]:
            Path(path).touch()
        process = _forkserver().Process(
            target=_command,
            args=(
                list(args),
                dict(os.environ if env is None else env),
                str(cwd or os.getcwd()),
                *paths,
            ),
        )
        process.start()
        process.join(timeout)
        if process.exitcode is None:
            process.kill()
            process.join()
            raise subprocess.TimeoutExpired([MAIN_PATH, *args], timeout)
        out, err = (
            Path(path).read_text(encoding=locale.getpreferredencoding(False)) for path in paths[1:]
        )
    # the line ends as text=True reads them (universal newlines)
    out, err = (text.replace("\r\n", "\n").replace("\r", "\n") for text in (out, err))
    return subprocess.CompletedProcess([MAIN_PATH, *args], process.exitcode, out, err)
