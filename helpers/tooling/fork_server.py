"""Workers forked from a warm process (a fork server), so each one skips Python's start.

Each code-mode program runs in a fresh worker process of its own
(:mod:`helpers.tooling.program_sandbox`). Spawned, a worker pays the interpreter's start and its
imports (py_mini_racer and asyncio most of it): about 0.1 s of the 0.15 s of CPU a short
program costs, before V8 runs a line; notebook 08's checkpoint runs about 35 programs. A **fork
server** pays them once per caller: a process started as a worker is (``python -I``, the
worker's environment, no stderr) that imports the worker's module and what it will import, runs
no program and starts no V8 (V8's threads would not survive a fork), and then only forks, one
child per request. Each child is as fresh as a spawned worker: it has run nothing of anyone's,
its stdin and stdout are the pipes its caller made, and it holds a lifeline of its own
(:func:`helpers.tooling.worker_pipes.die_with_caller`).

How the caller keeps hold of a child it did not fork:

- requests go on a socket pair that only the caller and the server hold (``SOCK_SEQPACKET``,
  one packet a request); a fork request carries the child's three file descriptors
  (``SCM_RIGHTS``), and the reply is its pid;
- the server reaps a child only when its caller asks (a wait request, answered at once, ended
  or not), so the pid cannot be reused before; the caller takes a pidfd of it at once
  (``pidfd_open``), so its signals reach that process or none (``pidfd_send_signal``), and it
  waits for the child's end on the pidfd (readable once the process has ended);
- the server ends with its caller (a lifeline of its own), and leaves after
  :data:`FORK_SERVER_IDLE_S` seconds without a request when no child of its is left to reap:
  a kernel does not hold its memory between uses. When the caller exits it closes the
  socket and waits for the server, which kills and reaps any child left: the children's CPU
  time then counts in the caller's (``RUSAGE_CHILDREN``, what ``time`` reports).

Where the kernel has no pidfds (before Linux 5.3, macOS) workers are spawned, as they are when
a server cannot start or answer.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Callable

#: Seconds a fork server waits for a request, with no child left to reap, before it leaves.
FORK_SERVER_IDLE_S = 60.0
#: Seconds the caller waits, at its exit, for its fork server to kill and reap what is left.
FORK_SERVER_EXIT_WAIT_S = 10.0
#: A pid or a wait status on the socket.
_NUMBER = struct.Struct(">q")
#: A wait request's reply when the child has not ended yet.
_RUNNING = -(2**62)
_FORK, _WAIT = b"F", b"W"


# -- the server's side --------------------------------------------------------------------------


def serve(
    control_fd: int, lifeline: int, module: str, warm: str, entry: str, idle_s: float
) -> None:
    """The body of a fork server: ``module.warm()`` (the worker's imports), then answer the
    requests on the socket ``control_fd`` until the caller closes it, its lifeline ends, or
    ``idle_s`` seconds pass without one while no child is left to reap. Each child runs
    ``module.entry()`` and exits (never returning into this loop)."""
    from helpers.tooling.worker_pipes import ORPHANED_EXIT

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
            message, fds, _, _ = socket.recv_fds(control, 16, 3)
        except OSError:
            message, fds = b"", []
        if not message:  # the caller closed the socket: kill and reap what is left, and leave
            for fd in fds:
                os.close(fd)
            _end_children(children)
            return
        if message == _FORK and len(fds) == 3:
            pid = _fork_worker(worker_main, fds, control.fileno(), lifeline)
            if pid > 0:
                children.add(pid)
            reply = pid
        elif message[:1] == _WAIT and len(message) == 1 + _NUMBER.size and not fds:
            reply = _reap(_NUMBER.unpack(message[1:])[0], children)
        else:
            reply = -1
        for fd in fds:
            os.close(fd)
        try:
            control.send(_NUMBER.pack(reply))
        except OSError:  # the caller closed its end meanwhile
            _end_children(children)
            return


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
        from helpers.tooling.worker_pipes import die_with_caller

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


def _end_children(children: set[int]) -> None:
    """Kill and reap every child left (the caller is leaving, so is their work)."""
    for pid in children:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)  # not reaped yet: the pid is still this child's
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    children.clear()


# -- the caller's side --------------------------------------------------------------------------


class ForkServer:
    """The caller's end of one fork server (see the module's docstring).

    Attributes:
        process: the server's :class:`subprocess.Popen`.
    """

    def __init__(self, module: str, warm: str, entry: str, env: dict[str, str] | None) -> None:
        """Start the server (it imports while the first request waits).

        Raises:
            OSError: it cannot be started.
        """
        from helpers.base.paths import PACKAGE_PARENT
        from helpers.tooling.worker_pipes import _LIFELINES

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
        self.lock = threading.Lock()

    def fork(self, fds: list[int], timeout_s: float) -> int:
        """A new worker with ``fds`` (its stdin, its stdout, its lifeline: the server gets
        copies); returns its pid.

        Raises:
            OSError: the server did not answer within ``timeout_s`` seconds, has gone, or
                could not fork.
        """
        pid = self._ask(lambda: socket.send_fds(self.control, [_FORK], fds), timeout_s)
        if pid <= 0:
            raise OSError("the fork server could not fork")
        return pid

    def wait_status(self, pid: int) -> int | None:
        """Child ``pid``'s wait status (it is reaped), or ``None`` while it runs.

        Raises:
            OSError: the server has gone (its children with it: their statuses are lost), or
                ``pid`` is no child of its.
        """
        status = self._ask(lambda: self.control.send(_WAIT + _NUMBER.pack(pid)), 60.0)
        if status == _RUNNING:
            return None
        if status == -1:
            raise OSError(f"process {pid} is no child of the fork server")
        return status

    def _ask(self, send: Callable[[], object], timeout_s: float) -> int:
        with self.lock:
            send()
            ready = readable(self.control.fileno(), timeout_s)
            reply = self.control.recv(_NUMBER.size) if ready else b""
        if len(reply) != _NUMBER.size:
            raise OSError("the fork server did not answer" if not ready else "it has gone")
        return int(_NUMBER.unpack(reply)[0])

    def usable(self) -> bool:
        """Whether the server is still running (one that left when idle is reaped here)."""
        return self.process.poll() is None

    def close(self, wait_s: float = FORK_SERVER_EXIT_WAIT_S) -> None:
        """Tell the server to leave (it kills and reaps any child left) and wait for it."""
        from helpers.tooling.worker_pipes import _LIFELINES

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


def readable(fd: int, timeout_s: float | None) -> bool:
    """Whether ``fd`` becomes readable (or its other end closes, or, a pidfd, its process
    ends) within ``timeout_s`` seconds (``None``: waits until it does). ``poll``, not
    ``select``: a descriptor numbered past 1,023 is fine."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(None if timeout_s is None else max(timeout_s, 0.0) * 1000))


_SERVERS: dict[tuple[str, str, str, tuple[tuple[str, str], ...]], ForkServer] = {}
_SERVERS_LOCK = threading.Lock()


def _pidfds_work() -> bool:
    """Whether this kernel gives pidfds (``pidfd_open``, Linux 5.3) and ``/proc``."""
    if not (hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal")):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False
    return os.path.isdir("/proc/self/task")


_PIDFDS = _pidfds_work()


def fork_server(
    module: str, warm: str, entry: str, env: dict[str, str] | None
) -> ForkServer | None:
    """This process's fork server for workers running ``module.entry()``, started on first use
    (again if it left when idle); ``None`` where workers must be spawned (no pidfds, or the
    server cannot start)."""
    if not _PIDFDS:
        return None
    key = (module, warm, entry, tuple(sorted((env or {}).items())))
    with _SERVERS_LOCK:
        server = _SERVERS.get(key)
        if server is not None and not server.usable():
            server.close()
            server = None
        if server is None:
            try:
                server = _SERVERS[key] = ForkServer(module, warm, entry, env)
            except OSError:
                return None
        return server


def forget_server(server: ForkServer) -> None:
    """Stop using ``server`` (it did not answer): the next worker starts a new one."""
    with _SERVERS_LOCK:
        for key, known in list(_SERVERS.items()):
            if known is server:
                del _SERVERS[key]
    server.close(wait_s=1.0)


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
