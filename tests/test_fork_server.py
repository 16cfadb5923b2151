"""Code mode's workers forked from a warm process: each as fresh as a spawned one, reaped,
never outliving the caller, and their CPU time counted in the caller's."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
from hang import HANG_GUARD_S

from helpers.tooling import fork_server, worker_pipes
from helpers.tooling.program_sandbox import ProgramLimits, run_program

pytestmark = pytest.mark.skipif(not fork_server.pidfds_work(), reason="needs pidfds and /proc")


class EchoHost:
    def tool_names(self) -> list[str]:
        return ["echo"]

    def __call__(self, name: str, arguments_json: str) -> tuple[bool, str]:
        return True, arguments_json


def _parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


def _children_of(pid: int) -> str:
    with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as children:
        return children.read().strip()


@pytest.fixture
def workers(monkeypatch) -> list[tuple[int, int]]:
    """(pid, parent pid) of each worker started while the test runs, read as it is ready."""
    seen: list[tuple[int, int]] = []
    started = worker_pipes.WorkerProcess.__init__

    def noting(self, *args, **kwargs) -> None:
        started(self, *args, **kwargs)
        seen.append((self.pid, _parent_of(self.pid)))

    monkeypatch.setattr(worker_pipes.WorkerProcess, "__init__", noting)
    return seen


def _server() -> fork_server.ForkServer:
    (server,) = fork_server._SERVERS.values()
    return server


def test_each_program_is_a_child_of_the_fork_server_reaped_once_it_ends(workers) -> None:
    for _ in range(3):
        result = run_program("return await tools.echo({n: 1})", EchoHost())
        assert result.ok and result.text == '{"n":1}', result
        server = _server()
        assert _children_of(server.process.pid) == ""  # reaped: no zombie, no worker left
    assert [parent for _, parent in workers] == [server.process.pid] * 3 != [os.getpid()] * 3
    assert len({pid for pid, _ in workers}) == 3  # a process of its own for each program


def test_a_programs_globals_never_reach_the_next_program() -> None:
    first = run_program("globalThis.leak = 42; return 'set'", EchoHost())
    second = run_program("return typeof leak", EchoHost())
    assert (first.text, second.text) == ("set", "undefined")


def test_a_fork_server_killed_or_gone_idle_is_replaced(monkeypatch, workers) -> None:
    assert run_program("return 1", EchoHost()).ok
    killed = _server().process
    killed.kill()
    killed.wait(timeout=HANG_GUARD_S)
    assert run_program("return 2", EchoHost()).text == "2"
    assert workers[-1][1] == _server().process.pid not in (killed.pid, os.getpid())
    fork_server._close_servers()
    monkeypatch.setattr(fork_server, "FORK_SERVER_IDLE_S", 0.2)
    assert run_program("return 3", EchoHost()).text == "3"
    idle = _server().process
    idle.wait(timeout=HANG_GUARD_S)  # it leaves on its own, its child reaped
    assert run_program("return 4", EchoHost()).text == "4"
    assert workers[-1][1] == _server().process.pid not in (killed.pid, idle.pid, os.getpid())


def test_a_server_gone_in_the_middle_of_a_program_leaves_it_its_result(workers) -> None:
    """The worker holds its caller's lifeline, not the server's: a server killed while a
    program waits on a tool call leaves that program to finish, and the next gets a new one."""

    class KillingHost(EchoHost):
        def __call__(self, name: str, arguments_json: str) -> tuple[bool, str]:
            os.kill(_server().process.pid, signal.SIGKILL)
            return True, arguments_json

    assert run_program("return 0", EchoHost()).ok
    first = _server().process
    result = run_program("return await tools.echo({n: 2})", KillingHost())
    assert result.ok and result.text == '{"n":2}', result
    first.wait(timeout=HANG_GUARD_S)
    assert run_program("return 3", EchoHost()).text == "3"
    assert workers[-1][1] not in (first.pid, os.getpid())


@pytest.mark.parametrize("way", ["no pidfds", "WORKBOOK_CODE_MODE_FORK=0"])
def test_without_pidfds_or_when_told_the_worker_is_spawned(monkeypatch, workers, way) -> None:
    if way == "no pidfds":
        monkeypatch.setattr(fork_server, "pidfds_work", lambda: False)
    else:
        monkeypatch.setenv("WORKBOOK_CODE_MODE_FORK", "0")
    assert run_program("return 5", EchoHost()).text == "5"
    assert workers[-1][1] == os.getpid()


def test_a_server_with_a_second_thread_refuses_to_fork() -> None:
    """A fork copies only the forking thread (and any lock another holds): a server that is
    not single-threaded answers -1, and the caller spawns the worker instead."""
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert fork_server._fork_worker(lambda: None, [-1, -1, -1], -1, -1) == -1
    finally:
        stop.set()
        other.join()


_BUSY = "let n = 0; for (let i = 0; i < 2e8; i++) n += i % 7; return n"


def test_the_programs_cpu_time_counts_in_the_callers() -> None:
    """``time workbook …`` counts what its programs used: at exit the caller waits for its fork
    server, which has reaped each worker."""
    code = (
        "from helpers.tooling.program_sandbox import run_program\n"
        "class Host:\n"
        "    def tool_names(self): return []\n"
        "    def __call__(self, name, arguments): return True, ''\n"
        "used = 0.0\n"
        "for _ in range(3):\n"
        f"    result = run_program({_BUSY!r}, Host())\n"
        "    assert result.ok, result\n"
        "    used += result.cpu_seconds\n"
        "print(used)\n"
    )
    caller = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(caller.pid, 0)
    assert caller.stdout is not None
    programs_s = float(caller.stdout.read())
    caller.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    assert caller.returncode == 0
    assert programs_s > 0.5 and usage.ru_utime + usage.ru_stime >= programs_s


def test_the_fork_server_ends_with_its_caller(tmp_path) -> None:
    """The caller killed outright (a kernel restart: no cleanup of its runs): its fork server
    and the worker of its waiting program end too, by their lifelines."""
    code = (
        "import threading\n"
        "from helpers.tooling import fork_server, program_sandbox, worker_pipes\n"
        "class Host:\n"
        "    def tool_names(self): return []\n"
        "    def __call__(self, name, arguments): return True, ''\n"
        "started, ready = worker_pipes.WorkerProcess.__init__, threading.Event()\n"
        "def tell(self, *args, **kwargs):\n"
        "    started(self, *args, **kwargs)\n"
        "    print(self.pid, flush=True)\n"
        "    ready.set()\n"
        "worker_pipes.WorkerProcess.__init__ = tell\n"
        "limits = program_sandbox.ProgramLimits(idle_limit_s=3600, hang_guard_s=3600)\n"
        "threading.Thread(target=program_sandbox.run_program, daemon=True, args=(\n"
        "    'await new Promise(() => {})', Host(), limits)).start()\n"
        "ready.wait()\n"
        "(server,) = fork_server._SERVERS.values()\n"
        "print(server.process.pid, flush=True)\n"
        "threading.Event().wait()\n"
    )
    caller = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert caller.stdout is not None
    worker, server = int(caller.stdout.readline()), int(caller.stdout.readline())
    assert _parent_of(worker) == server and _parent_of(server) == caller.pid
    caller.kill()
    caller.wait(timeout=HANG_GUARD_S)
    for pid in (worker, server):
        deadline = time.monotonic() + HANG_GUARD_S
        while _alive(pid):
            assert time.monotonic() < deadline, f"process {pid} outlived its caller"
            time.sleep(0.05)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie has ended: reaped by init, or by no one)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _links(pid: int) -> set[str]:
    """What the descriptors of process ``pid`` are (``pipe:[…]``, ``socket:[…]``, a path)."""
    folder = f"/proc/{pid}/fd"
    return {os.readlink(f"{folder}/{fd}") for fd in os.listdir(folder)}


def test_a_worker_holds_none_of_the_servers_descriptors_and_its_own_limits(workers) -> None:
    """Read from /proc while the program's tool call runs: the worker holds neither the
    server's socket nor its lifeline, and its CPU and data limits are its own (set after the
    fork)."""
    from helpers.tooling.program_sandbox import PROGRAM_WORKER_DATA_BYTES

    seen: dict[str, object] = {}

    class LookingHost(EchoHost):
        def __call__(self, name: str, arguments_json: str) -> tuple[bool, str]:
            worker = workers[-1][0]
            seen["worker"] = _links(worker)
            seen["server"] = _links(_server().process.pid) - {"/dev/null"}
            with open(f"/proc/{worker}/limits", encoding="ascii") as limits:
                seen["limits"] = limits.read()
            return True, arguments_json

    assert run_program("return await tools.echo({n: 3})", LookingHost()).ok
    assert seen["server"] and not seen["server"] & seen["worker"], seen  # type: ignore[operator]
    lines = {line[:26].strip(): line[26:].split() for line in str(seen["limits"]).splitlines()}
    assert lines["Max data size"][0] == str(PROGRAM_WORKER_DATA_BYTES)
    assert lines["Max cpu time"][0] != "unlimited"


def test_a_reply_nobody_waited_for_is_set_aside_and_its_child_killed_and_reaped() -> None:
    """A fork request whose caller stopped waiting (interrupted, or past its time) gets its
    reply later: the next request recognises it by its number, kills that child (by the
    pidfd it carries), reaps it, and gets its own reply, never the other's."""
    from helpers.tooling import program_sandbox

    env = {"PATH": os.environ.get("PATH", "")}
    server = fork_server.fork_server(
        program_sandbox.__name__, "_program_worker_imports", "_program_worker_main", env
    )
    assert server is not None
    pipes = [os.pipe() for _ in range(6)]
    first = [pipes[0][0], pipes[1][1], pipes[2][0]]
    socket.send_fds(server.control, [fork_server._REQUEST.pack(b"F", 10**9, 0)], first)
    pid, pidfd = server.fork([pipes[3][0], pipes[4][1], pipes[5][0]], HANG_GUARD_S)
    try:
        assert fork_server._pid_of(pidfd) == pid and _parent_of(pid) == server.process.pid
        (unheld,) = server._unheld
        assert unheld != pid
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        assert worker_pipes.readable(pidfd, HANG_GUARD_S)
        status = server.wait_status(pid)  # the unheld child is killed and reaped first
        assert status is not None and os.waitstatus_to_exitcode(status) == -signal.SIGKILL
        assert server._unheld == [] and _children_of(server.process.pid) == ""
    finally:
        os.close(pidfd)
        for ends in pipes:
            for fd in ends:
                os.close(fd)


def test_limits_hold_in_a_forked_worker() -> None:
    """The worker's own limits are set after the fork, in the child: CPU time, memory."""
    looping = run_program("while (true) {}", EchoHost(), ProgramLimits(cpu_time_limit_s=0.5))
    assert not looping.ok and "more than 0.5 s of CPU time" in looping.error, looping
    hungry = "let a = []; while (true) a.push('x'.repeat(1e6) + a.length); return 1"
    grown = run_program(hungry, EchoHost(), ProgramLimits(max_rss_bytes=150 * 2**20))
    assert not grown.ok and "memory" in grown.error, grown
