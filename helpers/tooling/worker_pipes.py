"""A worker process's plumbing: length-prefixed messages on two pipes, its memory, its limits.

The sandboxes that run untrusted work in a process of its own (``run_sql``'s queries,
:mod:`helpers.tooling.sql_sandbox`; code mode's programs, :mod:`helpers.tooling.program_sandbox`)
talk to their caller the same way: each message is its length (8 bytes, big-endian) and then
its bytes, so a message of any size passes through a pipe whole, and a caller waiting for one can
give up at a deadline. The worker lowers its own limits (``resource.RLIMIT_*``), and the caller
reads a worker's resident memory from ``/proc``.

A worker ends with its caller however the caller ends (a signal, SIGKILL, a kernel restart):
it holds the read end of a pipe of its own, its **lifeline**, whose only write end is the
caller's; when the caller's process ends, the kernel closes that end, and a thread of the
worker's, waiting on the pipe, reads the end of file and exits the process
(:func:`die_with_caller`). No cleanup code of the caller's has to run, and unlike Linux's
``PR_SET_PDEATHSIG`` it does not fire when the caller's *thread* ends (a pooled ``run_sql``
worker outlives the thread that started it). A child the caller forks (``multiprocessing``'s
default on Linux) would inherit the write end and keep the worker alive after the caller: the
child closes its copies as it starts (``os.register_at_fork``).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import select
import selectors
import signal
import struct
import subprocess
import sys
import threading
import time
from typing import Any, Protocol

#: Every message between a caller and its worker: its length, then its payload.
FRAME_HEADER = struct.Struct(">Q")
#: The most bytes read from a pipe at once.
PIPE_READ_BYTES = 1 << 20
#: What a worker sends when it is ready for its first job.
WORKER_READY = b"ready"


#: A worker's exit status when its caller has gone (its lifeline closed).
ORPHANED_EXIT = 3
#: The write ends of this process's workers' lifelines.
_LIFELINES: set[int] = set()


def _close_lifelines_in_a_child() -> None:
    """In a child just forked: close its copies of the lifelines, which are its parent's."""
    for fd in list(_LIFELINES):
        with contextlib.suppress(OSError):
            os.close(fd)
    _LIFELINES.clear()


os.register_at_fork(after_in_child=_close_lifelines_in_a_child)


def die_with_caller(lifeline: int) -> threading.Thread:
    """In a worker: exit the process (:data:`ORPHANED_EXIT`, at once, no cleanup) as soon as
    the pipe ``lifeline`` (a file descriptor: its read end) reaches its end, which it does when
    every write end is closed: the caller ended, however. A daemon thread waits on it, asleep
    (so it never counts as the worker's work). Returns the thread."""

    def wait_for_the_end() -> None:
        with contextlib.suppress(OSError):
            while os.read(lifeline, 1):
                pass
        os._exit(ORPHANED_EXIT)

    watcher = threading.Thread(target=wait_for_the_end, name="lifeline", daemon=True)
    watcher.start()
    return watcher


class FrameTooLarge(ValueError):
    """A message announced more bytes than its reader accepts (the bytes are not read)."""


def write_frame(fd: int, payload: bytes) -> None:
    """Write one message (length, then payload) to the pipe ``fd``, blocking until it is all
    written. Raises BrokenPipeError when the other end is closed."""
    view = memoryview(FRAME_HEADER.pack(len(payload)) + payload)
    while view:
        view = view[os.write(fd, view) :]


def read_exactly(fd: int, size_bytes: int, deadline: float | None) -> bytes | None:
    """``size_bytes`` bytes read from the pipe ``fd``; ``None`` if ``deadline`` (``time.monotonic``
    seconds; ``None``: wait for ever) passes first. Raises EOFError if the pipe closes first."""
    data = bytearray()
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while len(data) < size_bytes:
            if deadline is not None:
                wait_s = deadline - time.monotonic()
                if wait_s <= 0 or not selector.select(wait_s):
                    return None
            chunk = os.read(fd, min(size_bytes - len(data), PIPE_READ_BYTES))
            if not chunk:
                raise EOFError("the other process closed the pipe")
            data += chunk
    return bytes(data)


def read_frame(fd: int, deadline: float | None, *, max_bytes: int | None = None) -> bytes | None:
    """One message (see :func:`write_frame`) from the pipe ``fd``, or ``None`` if ``deadline``
    passes first.

    Raises:
        EOFError: the pipe closed first.
        FrameTooLarge: the message is longer than ``max_bytes`` (its bytes are left unread).
    """
    header = read_exactly(fd, FRAME_HEADER.size, deadline)
    if header is None:
        return None
    size_bytes = FRAME_HEADER.unpack(header)[0]
    if max_bytes is not None and size_bytes > max_bytes:
        raise FrameTooLarge(f"a message of {size_bytes:,} bytes, over the {max_bytes:,} accepted")
    return read_exactly(fd, size_bytes, deadline)


def rss_bytes(pid: int | str = "self") -> int:
    """The resident memory of process ``pid`` (default: this one) now, in bytes (0 where
    ``/proc`` is missing or the process is gone)."""
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def cpu_seconds(pid: int | str = "self") -> float | None:
    """The CPU time process ``pid`` has used so far (user and system, every thread), in seconds
    (``/proc/PID/stat``'s ``utime`` and ``stime``, in clock ticks: 10 ms on Linux); ``None``
    where ``/proc`` is missing or the process is gone. It counts the process's own work only:
    the time it waits for a core on a busy machine, or for a pipe, is not in it."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            text = stat.read()
        # the command name (field 2) may hold spaces and parentheses: the fields follow its last
        fields = text[text.rindex(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def all_asleep(pid: int | str) -> bool:
    """Whether every thread of process ``pid`` is asleep, waiting for an event (state ``S`` in
    ``/proc/PID/task/TID/stat``): not running or waiting for a core (``R``), not waiting on the
    disk (``D``: a page swapped in on a busy machine), not stopped (``T``). ``False`` where it
    cannot be read."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for thread in threads:
        try:
            with open(f"/proc/{pid}/task/{thread}/stat", encoding="ascii", errors="replace") as f:
                text = f.read()
        except OSError:
            continue  # a thread that has just ended
        if text[text.rindex(")") + 2 : text.rindex(")") + 3] != "S":
            return False
    return bool(threads)


class WorkWatch:
    """What a caller watches of a worker process while it waits on it: the CPU time the worker
    has used since :meth:`start` (its own work, whatever the machine's load), and how long it
    has been idle: using no CPU with every thread asleep (:func:`all_asleep`), never while it
    runs, waits for a core or for the disk, or is stopped; and when it last used any CPU at all
    (``cpu_moved_at``, :func:`time.monotonic`: a hang guard counts from there, so a worker
    making progress, however slowly, is never stopped by one). Reads ``/proc`` (:func:`cpu_seconds`);
    where it is missing, :meth:`cpu_used_s` is ``None`` and the caller falls back on its
    wall-clock guard."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._at_start: float | None = None
        self._seen: float | None = None
        self._last_work = self.cpu_moved_at = time.monotonic()
        self.cpu_used_s = 0.0

    def start(self) -> None:
        """Count from now."""
        self._at_start = self._seen = cpu_seconds(self.pid)
        self._last_work = self.cpu_moved_at = time.monotonic()
        self.cpu_used_s = 0.0

    def look(self) -> tuple[float | None, float]:
        """The worker's CPU seconds since :meth:`start` (``None`` without ``/proc``) and the
        seconds of wall clock it has been idle (since it last used CPU, was not asleep, or
        :meth:`rest` was called)."""
        now, cpu = time.monotonic(), cpu_seconds(self.pid)
        if cpu is None or self._at_start is None:
            return None, 0.0
        self.cpu_used_s = cpu - self._at_start
        if cpu != self._seen:
            self.cpu_moved_at = now
        if cpu != self._seen or not all_asleep(self.pid):
            self._seen, self._last_work = cpu, now
        return self.cpu_used_s, now - self._last_work

    def rest(self) -> None:
        """The worker had good reason to use no CPU until now (it waited on its caller)."""
        self._last_work = self.cpu_moved_at = time.monotonic()


def set_limit(kind: int, soft: int) -> None:
    """Lower the soft and hard limit ``kind`` (``resource.RLIMIT_*``) to ``soft`` (never above
    the hard limit the worker was given); the address-space limit's hard limit too."""
    import resource

    _, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(kind, (soft, soft if kind == resource.RLIMIT_AS else hard))


#: Seconds to wait for a worker that closed its pipe to report its exit status (it is ending: a
#: hang guard, long enough for a starved process to finish dying).
WORKER_EXIT_WAIT_S = 30.0


def readable(fd: int, timeout_s: float | None) -> bool:
    """Whether ``fd`` becomes readable (or its other end closes, or, a pidfd, its process
    ends) within ``timeout_s`` seconds (``None``: waits until it does). ``poll``, not
    ``select``: a descriptor numbered past 1,023 is fine."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(None if timeout_s is None else max(timeout_s, 0.0) * 1000))


class Forker(Protocol):
    """What starts a worker by fork (:class:`helpers.tooling.fork_server.ForkServer`)."""

    def fork(self, fds: list[int], timeout_s: float) -> tuple[int, int]:
        """A new worker with ``fds`` (stdin, stdout, lifeline): its pid and a pidfd of it.
        Raises OSError when it cannot."""
        ...

    def wait_status(self, pid: int) -> int | None:
        """The ended worker ``pid``'s wait status (``None``: it runs). Raises OSError."""
        ...


class WorkerProcess:
    """One worker process running ``entry``, a function of a ``helpers`` module, and its two
    pipes: messages go in on its stdin, come out on its stdout, its stderr is dropped. Forked
    by ``forker`` (a fork server, :mod:`helpers.tooling.fork_server`) when one is given and
    can, else spawned (``python -I``).

    Attributes:
        pid: its process id.
        process: the :class:`subprocess.Popen` of a spawned worker; ``None`` for a forked one.
        to_worker, from_worker: the pipes' file descriptors.
    """

    def __init__(
        self,
        module: str,
        entry: str,
        *,
        what: str,
        start_timeout_s: float,
        env: dict[str, str] | None = None,
        forker: Forker | None = None,
    ) -> None:
        """Start ``module.entry()`` in a new process and wait until it says it is ready
        (:data:`WORKER_READY`).

        Args:
            module, entry: what the process runs, e.g. ``helpers.tooling.sql_sandbox`` and
                ``_sql_worker_main``.
            what: the worker in words, for the error (``"the run_sql worker process"``).
            start_timeout_s: seconds it may take to be ready.
            env: its environment (default: this process's).
            forker: forks it (running ``module.entry()`` in its child); ``None``, or a forker
                that cannot: the worker is spawned.

        Raises:
            OSError: it did not start, or was not ready in time (it is killed).
        """
        lifeline, self._lifeline = os.pipe()  # neither inherited by any other child
        self.process: subprocess.Popen[bytes] | None = None
        self._pidfd = -1
        self._status: int | None = None
        try:
            if forker is None or not self._fork(forker, lifeline, start_timeout_s):
                self._spawn(module, entry, env, lifeline)
        except OSError:
            os.close(self._lifeline)
            raise
        finally:
            os.close(lifeline)
        _LIFELINES.add(self._lifeline)
        try:
            deadline = time.monotonic() + start_timeout_s
            if read_frame(self.from_worker, deadline, max_bytes=64) != WORKER_READY:
                raise OSError(f"not ready within {start_timeout_s:g} s")
        except (OSError, EOFError, FrameTooLarge) as exc:
            self.kill()
            raise OSError(f"{what} did not start: {exc}") from exc

    def _spawn(self, module: str, entry: str, env: dict[str, str] | None, lifeline: int) -> None:
        from helpers.base.paths import PACKAGE_PARENT

        code = (
            f"import sys; sys.path.insert(0, {str(PACKAGE_PARENT)!r}); "
            f"from helpers.tooling.worker_pipes import die_with_caller; "
            f"die_with_caller({lifeline}); "
            f"from {module} import {entry}; {entry}()"
        )
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-c", code],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
            env=env,
            pass_fds=(lifeline,),
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.pid = self.process.pid
        self.to_worker = self.process.stdin.fileno()
        self.from_worker = self.process.stdout.fileno()

    def _fork(self, forker: Forker, lifeline: int, timeout_s: float) -> bool:
        """Fork the worker; ``False`` (nothing of it left open) when ``forker`` cannot."""
        stdin, self.to_worker = os.pipe()
        self.from_worker, stdout = os.pipe()
        try:
            self.pid, self._pidfd = forker.fork([stdin, stdout, lifeline], timeout_s)
        except OSError:
            os.close(self.to_worker)
            os.close(self.from_worker)
            return False
        finally:
            os.close(stdin)
            os.close(stdout)
        self._forker = forker
        return True

    def ended(self) -> bool:
        """Whether a forked worker's process has ended (its pidfd says so; a spawned one's is
        not asked here, so as not to reap it): past then, its pid may be another process's
        once its fork server has gone, and nothing read of ``/proc`` by it is the worker's."""
        return self._pidfd >= 0 and readable(self._pidfd, 0)

    def exit_status(self) -> int | None:
        """The worker's exit status (negative: the signal that ended it), waiting up to
        :data:`WORKER_EXIT_WAIT_S` seconds; ``None`` if it is still running (or, forked, its
        fork server has gone and its status with it)."""
        if self.process is not None:
            try:
                return self.process.wait(timeout=WORKER_EXIT_WAIT_S)
            except subprocess.TimeoutExpired:
                return None
        return self._forked_status(WORKER_EXIT_WAIT_S)

    def _forked_status(self, wait_s: float | None) -> int | None:
        """A forked worker's exit status once its pidfd says it has ended (reaped by its
        server), waiting up to ``wait_s`` seconds (``None``: until it ends)."""
        ended = self._pidfd >= 0 and readable(self._pidfd, wait_s)
        if self._status is None and ended:
            with contextlib.suppress(OSError):
                raw = self._forker.wait_status(self.pid)
                self._status = None if raw is None else os.waitstatus_to_exitcode(raw)
        return self._status

    def kill(self) -> None:
        """Kill the worker (SIGKILL) and wait for it, so that it leaves no zombie."""
        if self.process is not None:
            with contextlib.suppress(OSError):
                self.process.kill()
            self.process.wait()
            for pipe in (self.process.stdin, self.process.stdout):
                with contextlib.suppress(OSError):
                    pipe.close()  # type: ignore[union-attr]
        elif self._pidfd >= 0:
            try:
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            except ProcessLookupError:
                pass  # it has ended
            except OSError:  # refused (a seccomp rule): by its pid, not reaped while it runs
                if not self.ended():
                    with contextlib.suppress(OSError):
                        os.kill(self.pid, signal.SIGKILL)
            self._forked_status(WORKER_EXIT_WAIT_S)
            for fd in (self._pidfd, self.to_worker, self.from_worker):
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._pidfd = -1
        _LIFELINES.discard(self._lifeline)
        with contextlib.suppress(OSError):
            os.close(self._lifeline)
        self._lifeline = -1


def worker_replies() -> int:
    """In a worker: the file descriptor its messages go out on (its stdout), with stdout itself
    sent where stderr goes, so a stray ``print`` never lands among the messages."""
    replies = os.dup(1)
    os.dup2(2, 1)
    return replies


def limit_cpu_for(cpu_time_limit_s: float, grace_s: float) -> None:
    """In a worker: let it use ``cpu_time_limit_s`` + ``grace_s`` more seconds of CPU time
    (``RLIMIT_CPU``) from now, then be stopped by the kernel (``SIGXCPU``)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = usage.ru_utime + usage.ru_stime
    set_limit(resource.RLIMIT_CPU, math.ceil(cpu_s + cpu_time_limit_s + grace_s))


def next_job(cpu_grace_s: float) -> dict[str, Any] | None:
    """In a worker: the next job from its stdin (a JSON object with its ``cpu_time_limit_s``),
    its CPU time limited to that plus ``cpu_grace_s`` (:func:`limit_cpu_for`); ``None`` when
    the caller closed the pipe."""
    try:
        request = read_frame(0, None)
    except EOFError:
        return None
    assert request is not None
    job: dict[str, Any] = json.loads(request)
    limit_cpu_for(job["cpu_time_limit_s"], cpu_grace_s)
    return job
