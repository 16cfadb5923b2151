"""Workers forked from a warm process (a fork server), so each one skips Python's start.

Each code-mode program runs in a fresh worker process of its own
(:mod:`helpers.tooling.program_sandbox`). Spawned, a worker pays the interpreter's start and its
imports (py_mini_racer and asyncio most of it): more than half the CPU time of a short program,
before V8 runs a line; notebook 08's checkpoint runs about 35 programs. A **fork server** pays
them once per caller: a process started as a worker is (``python -I``, the worker's environment,
no stderr) that imports the worker's module and what it will import, runs no program and starts
no V8 (V8's threads would not survive a fork), and then only forks, one child per request. Each
child has run nothing of anyone's and holds nothing of another program's: its stdin and stdout
are the pipes its caller made, it holds a lifeline of its own
(:func:`helpers.tooling.worker_pipes.die_with_caller`), and the server's socket and lifeline are
closed in it. What it shares with its siblings is the server's memory layout: address-space
randomisation is chosen when a program is executed, not when it forks (the Android zygote's known
trade), so an address one program's worker learned holds in the next one's.
``WORKBOOK_CODE_MODE_FORK=0`` spawns every worker instead, a fresh layout each. A child also
gets what the caller had when the server started (its folder, limits, priority, and the
``helpers`` code as it was then) until the server leaves: a kernel whose code changed gets the
new code once the server has been idle for :data:`FORK_SERVER_IDLE_S`.

How the caller keeps hold of a child it did not fork:

- requests go on a socket pair that only the caller and the server hold (``SOCK_SEQPACKET``,
  one packet a request), each with a number of its own that its reply repeats: a reply to a
  request whose caller stopped waiting (interrupted, or past its time) is recognised and never
  read as another's;
- a fork request carries the child's three file descriptors (``SCM_RIGHTS``); the reply carries
  the child's pid and a pidfd of it, opened by the server while the child is its own and not yet
  reaped, so the caller never turns a number into a process: its signals reach that process or
  none (``pidfd_send_signal``), and the pidfd becomes readable when the process ends;
- the server reaps a child only when its caller asks (a wait request, after the pidfd said the
  child ended; a kill request, for a child nobody holds), so its pid is not reused while its
  caller reads ``/proc`` by that pid;
- the server ends with its caller (a lifeline of its own), ignores SIGINT (an interrupt sent to
  a kernel's process group is not its own: its children take it as spawned workers do), and
  leaves after :data:`FORK_SERVER_IDLE_S` seconds without a request when no child of its is
  left to reap, so a kernel does not hold its memory between uses. When the caller exits it
  closes the socket and waits for the server, which kills and reaps any child left: the
  children's CPU time then counts in the caller's (``RUSAGE_CHILDREN``, what ``time`` reports).

A server that cannot fork (a second thread, no processes left to start) answers so, and that
one worker is spawned; a server that has gone, or does not answer within the worker's start
timeout, is replaced. Where the kernel has no pidfds (before Linux 5.3, macOS) every worker is
spawned.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib
import itertools
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from helpers.tooling.worker_pipes import (
    _LIFELINES,
    ORPHANED_EXIT,
    WORKER_EXIT_WAIT_S,
    die_with_caller,
    readable,
)

#: Seconds a fork server waits for a request, with no child left to reap, before it leaves.
FORK_SERVER_IDLE_S = 60.0
#: Seconds the caller waits, at its exit, for its fork server to kill and reap what is left.
FORK_SERVER_EXIT_WAIT_S = 10.0
#: A request: what (:data:`_FORK`, :data:`_WAIT`, :data:`_KILL`), its number, its argument (a
#: pid, or 0).
_REQUEST = struct.Struct(">cqq")
#: A reply: the number of its request, and its value (a pid, a wait status, or -1: refused).
_REPLY = struct.Struct(">qq")
#: A wait request's reply while the child runs.
_RUNNING = -(2**62)
_FORK, _WAIT, _KILL = b"F", b"W", b"K"


class ForkServerGone(OSError):
    """The fork server has gone, or did not answer in time: it is replaced."""


# -- the server's side --------------------------------------------------------------------------


def serve(
    control_fd: int, lifeline: int, module: str, warm: str, entry: str, idle_s: float
) -> None:
    """The body of a fork server: ``module.warm()`` (the worker's imports), then answer the
    requests on the socket ``control_fd`` until the caller closes it, its lifeline ends, or
    ``idle_s`` seconds pass without one while no child is left to reap. Each child runs
    ``module.entry()`` and exits (never returning into this loop)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    loaded = importlib.import_module(module)
    getattr(loaded, warm)()
    worker_main: Callable[[], None] = getattr(loaded, entry)
    control = socket.socket(fileno=control_fd)
    children: set[int] = set()
    while True:
        ready, _, _ = select.select([control, lifeline], [], [], idle_s)
        if lifeline in ready:
            os._exit(ORPHANED_EXIT)  # the caller has gone: so do its children (their lifelines)
        if not ready:
            if children:
                continue
            return
        try:
            message, fds, flags, _ = socket.recv_fds(control, _REQUEST.size, 3)
        except OSError:
            message, fds, flags = b"", [], 0
        if len(message) != _REQUEST.size:  # the caller closed the socket: its work ends
            for fd in fds:
                os.close(fd)
            _end_children(children)
            return
        kind, number, argument = _REQUEST.unpack(message)
        value, pidfd = _answer(kind, argument, fds, flags, children, worker_main, control, lifeline)
        for fd in fds:
            os.close(fd)
        reply = _REPLY.pack(number, value)
        try:
            socket.send_fds(control, [reply], [pidfd] if pidfd >= 0 else [])
        except OSError:  # the caller closed its end meanwhile
            _end_children(children)
            return
        finally:
            if pidfd >= 0:
                os.close(pidfd)


def _answer(
    kind: bytes,
    pid: int,
    fds: list[int],
    flags: int,
    children: set[int],
    worker_main: Callable[[], None],
    control: socket.socket,
    lifeline: int,
) -> tuple[int, int]:
    """One request's value, and the pidfd to send with it (-1: none)."""
    if kind == _FORK and len(fds) == 3 and not flags & socket.MSG_CTRUNC:
        child = _fork_worker(worker_main, fds, control.fileno(), lifeline)
        if child < 0:
            return -1, -1
        children.add(child)
        try:
            return child, os.pidfd_open(child)
        except OSError:
            _kill(child, children)
            return -1, -1
    if kind == _WAIT and not fds:
        return _reap(pid, children), -1
    if kind == _KILL and not fds:
        return _kill(pid, children), -1
    return -1, -1


def _fork_worker(
    worker_main: Callable[[], None], fds: list[int], control_fd: int, lifeline: int
) -> int:
    """Fork a child that runs ``worker_main`` with ``fds`` (its stdin, its stdout, its
    lifeline); returns its pid, or -1 when this process has more than one thread (a fork would
    copy only this one, and any lock another held) or the fork fails."""
    if len(os.listdir("/proc/self/task")) != 1:
        return -1
    try:
        pid = os.fork()
    except OSError:
        return -1
    if pid:
        return pid
    try:  # the child: never back into the server's loop
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as a spawned worker has it
        stdin, stdout, own_lifeline = fds
        os.dup2(stdin, 0)
        os.dup2(stdout, 1)
        for fd in (stdin, stdout, control_fd, lifeline):
            os.close(fd)
        die_with_caller(own_lifeline)
        worker_main()
    except BaseException:
        os._exit(1)
    os._exit(0)


def _reap(pid: int, children: set[int]) -> int:
    """The wait status of child ``pid`` if it has ended (reaped now), :data:`_RUNNING` if not,
    -1 if it is no child of this server's."""
    if pid not in children:
        return -1
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        children.discard(pid)
        return -1
    if not done:
        return _RUNNING
    children.discard(pid)
    return status


def _kill(pid: int, children: set[int]) -> int:
    """Kill child ``pid`` (not reaped yet: the pid is still its own) and reap it; its wait
    status, or -1 if it is no child of this server's."""
    if pid not in children:
        return -1
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    children.discard(pid)
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:
        return -1


def _end_children(children: set[int]) -> None:
    """Kill and reap every child left (the caller is leaving, so is their work)."""
    for pid in list(children):
        _kill(pid, children)


# -- the caller's side --------------------------------------------------------------------------


class ForkServer:
    """The caller's end of one fork server (see the module's docstring): it forks workers
    (:meth:`fork`) and says how they ended (:meth:`wait_status`).

    Attributes:
        process: the server's :class:`subprocess.Popen`.
    """

    def __init__(self, module: str, warm: str, entry: str, env: dict[str, str] | None) -> None:
        """Start the server (it imports while the first request waits).

        Raises:
            OSError: it cannot be started.
        """
        from helpers.base.paths import PACKAGE_PARENT

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        lifeline, self._lifeline = os.pipe()
        code = (
            f"import sys; sys.path.insert(0, {str(PACKAGE_PARENT)!r}); "
            "from helpers.tooling.fork_server import serve; "
            f"serve({theirs.fileno()}, {lifeline}, {module!r}, {warm!r}, {entry!r}, "
            f"{FORK_SERVER_IDLE_S!r})"
        )
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-c", code],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
                pass_fds=(theirs.fileno(), lifeline),
            )
        except OSError:
            ours.close()
            os.close(self._lifeline)
            raise
        finally:
            theirs.close()
            os.close(lifeline)
        _LIFELINES.add(self._lifeline)
        self.control = ours
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)
        self._unheld: list[int] = []  # children forked for a request nobody waited for

    def fork(self, fds: list[int], timeout_s: float) -> tuple[int, int]:
        """A new worker with ``fds`` (its stdin, its stdout, its lifeline: the server gets
        copies); returns its pid and a pidfd of it (the caller's to close).

        Raises:
            ForkServerGone: the server has gone, or did not answer within ``timeout_s``
                seconds (it is replaced).
            OSError: the server could not fork this one (it stays).
        """
        pid, pidfd = self._ask(_FORK, 0, fds, timeout_s)
        if pid > 0 and pidfd is not None and _pid_of(pidfd) == pid:
            return pid, pidfd
        if pidfd is not None:
            os.close(pidfd)
        if pid > 0:  # forked, but its pidfd did not arrive (this process's descriptors ran out)
            self._unheld.append(pid)
        raise OSError("the fork server could not fork a worker")

    def wait_status(self, pid: int) -> int | None:
        """Child ``pid``'s wait status (it is reaped), or ``None`` while it runs.

        Raises:
            ForkServerGone: the server has gone (its children's statuses with it).
            OSError: ``pid`` is no child of the server's.
        """
        status, _ = self._ask(_WAIT, pid, [], WORKER_EXIT_WAIT_S)
        if status == _RUNNING:
            return None
        if status < 0:
            raise OSError(f"process {pid} is no child of the fork server")
        return status

    def _ask(
        self, kind: bytes, argument: int, fds: list[int], timeout_s: float
    ) -> tuple[int, int | None]:
        """Send one request and wait for its reply: its value and the pidfd it carries. A
        child forked for an earlier request that nobody waited for is killed and reaped first."""
        with self._lock:
            while self._unheld:
                self._exchange(_KILL, self._unheld.pop(), [], WORKER_EXIT_WAIT_S)
            return self._exchange(kind, argument, fds, timeout_s)

    def _exchange(
        self, kind: bytes, argument: int, fds: list[int], timeout_s: float
    ) -> tuple[int, int | None]:
        """One request and its reply (the lock held). A reply to an earlier request, whose
        caller stopped waiting, is set aside: a child it carries is killed at once (by its
        pidfd) and reaped by the next request."""
        number = next(self._numbers)
        try:
            socket.send_fds(self.control, [_REQUEST.pack(kind, number, argument)], fds)
        except OSError as exc:
            self.retire(close=True)
            raise ForkServerGone(f"the fork server has gone: {exc}") from exc
        deadline = time.monotonic() + timeout_s
        while True:
            if not readable(self.control.fileno(), deadline - time.monotonic()):
                self.retire(close=False)
                raise ForkServerGone(f"the fork server did not answer within {timeout_s:g} s")
            message, got, _, _ = socket.recv_fds(self.control, _REPLY.size, 1)
            if len(message) != _REPLY.size:
                for fd in got:
                    os.close(fd)
                self.retire(close=True)
                raise ForkServerGone("the fork server has gone")
            answered, value = _REPLY.unpack(message)
            if answered == number:
                return value, got[0] if got else None
            for fd in got:
                with contextlib.suppress(OSError):
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
                os.close(fd)
                self._unheld.append(value)

    def usable(self) -> bool:
        """Whether the server is still running (one that left when idle is reaped here)."""
        return self.process.poll() is None

    def retire(self, *, close: bool) -> None:
        """Start no more workers from this server. ``close``: it has gone, or is of no use,
        so the socket is closed (a server still there kills and reaps its children, and
        leaves). Else the socket stays open for the workers it has running (a server that did
        not answer in time may yet), and closes with the last of them."""
        with _SERVERS_LOCK:
            for key, known in list(_SERVERS.items()):
                if known is self:
                    del _SERVERS[key]
        if close:
            self.close(wait_s=1.0)

    def close(self, wait_s: float = FORK_SERVER_EXIT_WAIT_S) -> None:
        """Tell the server to leave (it kills and reaps any child left) and wait for it."""
        with contextlib.suppress(OSError):
            self.control.close()
        try:
            self.process.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        _LIFELINES.discard(self._lifeline)
        with contextlib.suppress(OSError):
            os.close(self._lifeline)


def _pid_of(pidfd: int) -> int:
    """The pid a pidfd stands for (``/proc/self/fdinfo``'s ``Pid:`` line), or -1."""
    try:
        with open(f"/proc/self/fdinfo/{pidfd}", "rb") as info:
            for line in info:
                if line.startswith(b"Pid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return -1


_SERVERS: dict[tuple[str, str, str, tuple[tuple[str, str], ...]], ForkServer] = {}
_SERVERS_LOCK = threading.Lock()


@functools.cache
def pidfds_work() -> bool:
    """Whether this kernel gives pidfds that can be opened, signalled and read in
    ``/proc/self/fdinfo`` (``pidfd_open``, Linux 5.3); asked once, on first use."""
    if not (hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal")):
        return False
    try:
        pidfd = os.pidfd_open(os.getpid())
    except OSError:
        return False
    try:
        signal.pidfd_send_signal(pidfd, 0)
        return _pid_of(pidfd) == os.getpid() and os.path.isdir("/proc/self/task")
    except OSError:
        return False
    finally:
        os.close(pidfd)


def fork_server(
    module: str, warm: str, entry: str, env: dict[str, str] | None
) -> ForkServer | None:
    """This process's fork server for workers running ``module.entry()`` after
    ``module.warm()``, started on first use (again once one has left or been retired);
    ``None`` where workers are spawned: no pidfds, ``WORKBOOK_CODE_MODE_FORK=0``, or a server
    that cannot start."""
    if not pidfds_work() or os.environ.get("WORKBOOK_CODE_MODE_FORK", "").strip() == "0":
        return None
    key = (module, warm, entry, tuple(sorted((env or {}).items())))
    with _SERVERS_LOCK:
        server = _SERVERS.get(key)
        if server is not None and not server.usable():
            del _SERVERS[key]
            server.close()
            server = None
        if server is None:
            try:
                server = _SERVERS[key] = ForkServer(module, warm, entry, env)
            except OSError:
                return None
        return server


def _close_servers() -> None:
    """At exit: every server told to leave and waited for (its children's CPU time counted)."""
    with _SERVERS_LOCK:
        servers = list(_SERVERS.values())
        _SERVERS.clear()
    for server in servers:
        server.close()


def _forget_servers_in_a_child() -> None:
    """In a child just forked: the servers are their parent's (their sockets closed here), and
    the lock may have been held by a thread the child does not have."""
    global _SERVERS_LOCK
    for server in _SERVERS.values():
        with contextlib.suppress(OSError):
            server.control.close()
    _SERVERS.clear()
    _SERVERS_LOCK = threading.Lock()


atexit.register(_close_servers)
os.register_at_fork(after_in_child=_forget_servers_in_a_child)
