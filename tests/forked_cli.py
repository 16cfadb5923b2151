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
sees. What the interpreter reads only as it starts (``PYTHON*`` settings such as
``PYTHONIOENCODING``, the locale's ``LANG`` and ``LC_*``) and standard input given as bytes
cannot be given to a forked process: :func:`run_workbook` then starts ``python -m helpers.cli``.
A test about the process itself (a reader that goes away, what an import loads, a signal)
starts ``python -m helpers.cli`` itself. ``sys.path`` is the test process's (``tests/`` on it).
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
#: What the interpreter reads from the environment only as it starts: a command whose
#: environment gives these other values than this process has is started, not forked.
AT_START = ("PYTHON", "LANG", "LC_")

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
    streams = ((0, stdin, "r", sys.__stdin__), (1, stdout, "w", sys.__stdout__))
    streams += ((2, stderr, "w", sys.__stderr__),)
    opened = []
    for fd, path, mode, started in streams:  # each as the interpreter made it as it started
        file = os.open(path, os.O_RDONLY if mode == "r" else os.O_WRONLY)
        os.dup2(file, fd)
        os.close(file)
        like = started or sys.stdout
        opened.append(open(fd, mode, encoding=like.encoding, errors=like.errors, closefd=False))  # noqa: SIM115
    sys.stdin, sys.stdout, sys.stderr = opened
    sys.argv = [MAIN_PATH, *args]
    code = 1
    try:
        code = helpers.cli.console_main()
    except Exception:  # as the interpreter reports what nothing caught, then exits 1
        sys.excepthook(*sys.exc_info())
    finally:  # what the interpreter does at its end: multiprocessing's child skips it
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    sys.exit(code)


def _text(data: bytes) -> str:
    """Output as ``subprocess.run(text=True)`` reads it: the locale's encoding, universal
    newlines."""
    text = data.decode(locale.getpreferredencoding(False))
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _started(
    args: Sequence[str], env: dict[str, str], stdin: str | bytes, cwd: str, timeout: float
) -> subprocess.CompletedProcess[str]:
    """``python -m helpers.cli ARGS``, started."""
    data = stdin.encode(locale.getpreferredencoding(False)) if isinstance(stdin, str) else stdin
    done = subprocess.run(
        [sys.executable, "-m", "helpers.cli", *args],
        capture_output=True,
        env=env,
        input=data,
        cwd=cwd,
        timeout=timeout,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, _text(done.stdout), _text(done.stderr)
    )


def run_workbook(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    stdin: str | bytes = "",
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = HANG_GUARD_S,
) -> subprocess.CompletedProcess[str]:
    """``workbook ARGS`` (``env``: its whole environment, default this process's; ``stdin``:
    its standard input) run to its end, as :func:`subprocess.run` with ``capture_output=True``
    and ``text=True`` reports it. ``timeout``, in seconds, is a hang guard: past it the command
    is killed and :class:`subprocess.TimeoutExpired` raised, with what it had written.

    Forked, unless ``env`` gives a start setting (:data:`AT_START`) another value than this
    process has, or ``stdin`` is bytes: then ``python -m helpers.cli`` is started."""
    env = dict(os.environ if env is None else env)
    folder_run_in = str(cwd or os.getcwd())
    at_start = {key for key in {*env, *os.environ} if key.startswith(AT_START)}
    if isinstance(stdin, bytes) or any(env.get(k) != os.environ.get(k) for k in at_start):
        return _started(args, env, stdin, folder_run_in, timeout)
    with tempfile.TemporaryDirectory(prefix="workbook-forked-") as folder:
        paths = [str(Path(folder) / name) for name in ("stdin", "stdout", "stderr")]
        Path(paths[0]).write_bytes(stdin.encode(locale.getpreferredencoding(False)))
        for path in paths[1:]:
            Path(path).touch()
        process = _forkserver().Process(
            target=_command, args=(list(args), env, folder_run_in, *paths)
        )
        process.start()
        process.join(timeout)
        killed = process.exitcode is None
        if killed:
            process.kill()
            process.join()
        out, err = (_text(Path(path).read_bytes()) for path in paths[1:])
    if killed:
        raise subprocess.TimeoutExpired([MAIN_PATH, *args], timeout, out, err)
    return subprocess.CompletedProcess([MAIN_PATH, *args], process.exitcode, out, err)
