"""A room for real, for ``make test-room`` and ``make bench``: JupyterHub from PyPI,
configurable-http-proxy from npm, a local-process spawner with one Linux user per attendee,
PostgreSQL with scram-sha-256 passwords over TCP, the workbook's wheel in the attendees'
environment, ``deploy/jupyterhub_config.d/workbook.py`` loaded as the hub's configuration loads
it, and the room's firewall (``workbook room firewall``) in the kernel.

Root only: the hub starts each attendee's server as that attendee's Linux user (as on TLJH), and
the firewall is the kernel's. What a test or the bench drives:

- :func:`environments`: the hub's environment, the attendees' and the proxy, built once into
  :data:`ROOM_DIR` (a stamp names what they were built from);
- :func:`make_linux_user`: an attendee's Linux user, as Debian's ``useradd`` makes it (a home
  others may read: the hook must close it);
- :class:`Hub`: a running hub and its REST API (with a service token);
- :func:`spawn_all`: every attendee's server started at once, through the REST API, while the
  API is asked every 50 ms how it is: its answers' times, and each server's ready time;
- :class:`Kernel`: a kernel of an attendee's server, driven over the Jupyter server's websocket
  through the hub's proxy;
- :func:`attendee_day`: deploy/README.md's step 5 in a kernel of her own, then notebooks cell by
  cell (the solutions, or the attendee's notebooks with their TODOs unwritten: up to the first
  error, as *Run All* goes);
- :func:`busy_machine`: busy processes at a higher priority, several per core, for as long as a
  block runs: what thirty attendees do to two cores;
- :func:`firewall`: the room's nftables rules for a block, removed after.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat

from helpers.course.student_notebooks import solution_notebooks, todo_numbers

ROOT = Path(__file__).resolve().parents[1]
UV = ROOT / ".venv" / "bin" / "uv"
#: Where the hub's and the attendees' environments are built (readable by every attendee).
ROOM_DIR = Path(os.environ.get("WORKBOOK_ROOM_DIR", "/opt/workbook-room-test"))
#: The Python the attendees' environment is made with: the system's, which every Linux user may
#: run (a Python under /root is not), with IDLE's manual (Debian: idle-python3.11).
SYSTEM_PYTHON = "/usr/bin/python3"
JUPYTERHUB = "jupyterhub==5.5.4"
CHP = "configurable-http-proxy@5.3.0"
#: A hang guard for each wait (never a speed goal: that is make bench).
GUARD_S = 1_800
#: How long a stopped hub may take to stop its servers and exit before it is killed (a hang
#: guard: idle, it exits in about a second).
STOP_S = 300
#: How often the hub's API is asked how it is while servers start, in seconds.
POLL_S = 0.05
#: JupyterHub's words when its event loop stood still (``jupyterhub/app.py``).
UNRESPONSIVE = "Event loop was unresponsive"


def run(*args: Any, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    """Run a command within :data:`GUARD_S`; its stdout.

    Raises:
        RuntimeError: it failed (its output's end in the message).
    """
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=GUARD_S
    )
    if done.returncode != 0:
        raise RuntimeError(f"{args[:4]}: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done.stdout


def free_port() -> int:
    """A TCP port free on loopback now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _inputs_digest() -> str:
    """What the environments are built from: the lock, the project's metadata, the workbook's
    code and data, the versions asked for."""
    digest = hashlib.sha256(f"{JUPYTERHUB} {CHP} {SYSTEM_PYTHON}".encode())
    for path in sorted(
        [ROOT / "requirements.lock", ROOT / "pyproject.toml"]
        + list((ROOT / "helpers").rglob("*.py"))
        + list((ROOT / "solutions").glob("*.ipynb"))
        + list((ROOT / "notebooks").glob("*.ipynb"))
        + [p for p in (ROOT / "data").rglob("*") if p.is_file()]
    ):
        digest.update(path.relative_to(ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def environments() -> dict[str, Path]:
    """The hub's environment (JupyterHub), the attendees' (the wheel, its locked dependencies,
    psycopg, and JupyterHub's single-user server, as TLJH's user environment has them), and the
    proxy; built when their inputs changed.

    Raises:
        RuntimeError: npm is missing, or a build step failed.
    """
    if shutil.which("npm") is None:
        raise RuntimeError("npm is missing: configurable-http-proxy comes from the npm registry")
    stamp = ROOM_DIR / ".built"
    digest = _inputs_digest()
    hub, user, proxy = ROOM_DIR / "hub", ROOM_DIR / "user", ROOM_DIR / "proxy"
    if not stamp.exists() or stamp.read_text() != digest:
        shutil.rmtree(ROOM_DIR, ignore_errors=True)
        ROOM_DIR.mkdir(parents=True)
        ROOM_DIR.chmod(0o755)
        dist = ROOM_DIR / "dist"
        run(UV, "build", "--wheel", "--quiet", "-o", dist, ROOT, cwd=ROOT)
        wheel = next(dist.glob("context_relay_workbook-*.whl"))
        run(UV, "venv", "--quiet", "--python", sys.executable, hub)
        run(UV, "pip", "install", "--quiet", "--python", hub / "bin" / "python", JUPYTERHUB)
        run(UV, "venv", "--quiet", "--python", SYSTEM_PYTHON, user)
        python = user / "bin" / "python"
        run(UV, "pip", "sync", "--quiet", "--require-hashes", "--python", python,
            ROOT / "requirements.lock")  # fmt: skip
        run(UV, "pip", "install", "--quiet", "--no-deps", "--python", python, wheel)
        run(UV, "pip", "install", "--quiet", "--python", python, "psycopg[binary]>=3.2",
            JUPYTERHUB)  # fmt: skip
        run("npm", "install", "--silent", "--prefix", proxy, CHP)
        run("chmod", "-R", "a+rX", ROOM_DIR)
        stamp.write_text(digest)
    return {"hub": hub, "user": user, "proxy": proxy / "node_modules" / ".bin"}


def make_linux_user(name: str) -> None:
    """A Linux user ``name`` with a fresh home, as Debian's ``useradd`` makes it (0755: the hook
    must close it)."""
    if subprocess.run(["id", name], capture_output=True).returncode == 0:
        run("userdel", "--remove", name)
    run("useradd", "--create-home", "--shell", "/bin/bash", name)


class Hub:
    """A running JupyterHub: its URL, a service token for its REST API, its process."""

    def __init__(self, folder: Path, envs: dict[str, Path], room_url: str, extra: str = "") -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.port, self.hub_port, self.api_port = free_port(), free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = secrets.token_hex(32)
        self.folder = folder
        config = folder / "jupyterhub_config.py"
        user_bin = envs["user"] / "bin"
        config.write_text(
            f"""
c = get_config()  # noqa: F821
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {self.port}
c.JupyterHub.hub_port = {self.hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{self.api_port}"
c.ConfigurableHTTPProxy.command = [{str(envs["proxy"] / "configurable-http-proxy")!r}]
c.JupyterHub.db_url = "sqlite:///{folder / "jupyterhub.sqlite"}"
c.JupyterHub.cookie_secret_file = "{folder / "cookie_secret"}"
c.JupyterHub.pid_file = "{folder / "jupyterhub.pid"}"
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = {secrets.token_hex(16)!r}
c.Authenticator.allow_all = True
c.JupyterHub.services = [{{"name": "room-test", "api_token": {self.token!r}}}]
c.JupyterHub.load_roles = [{{
    "name": "room-test",
    "scopes": ["admin:users", "admin:servers", "tokens", "list:users", "read:users"],
    "services": ["room-test"],
}}]
c.Spawner.cmd = [{str(user_bin / "jupyterhub-singleuser")!r}]
c.Spawner.default_url = "/lab"
# as TLJH loads every file of jupyterhub_config.d
exec(open({str(ROOT / "deploy" / "jupyterhub_config.d" / "workbook.py")!r}).read())
{extra}
"""
        )
        env = {
            "PATH": f"{user_bin}:{envs['hub'] / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(folder),
            "WORKBOOK_CLI": str(user_bin / "workbook"),
            "WORKBOOK_ROOM_URL": room_url,
            "LANG": "C.UTF-8",
        }
        self.log = (folder / "jupyterhub.log").open("wb")
        self.process = subprocess.Popen(
            [envs["hub"] / "bin" / "jupyterhub", "-f", config],
            cwd=folder,
            env=env,
            stdout=self.log,
            stderr=self.log,
            start_new_session=True,  # its signals and its servers' stay in its own group
        )
        deadline = time.monotonic() + GUARD_S
        while time.monotonic() < deadline:
            try:
                self.api("GET", "/hub/api/")
                return
            except OSError:
                if self.process.poll() is not None:
                    raise RuntimeError("the hub stopped: " + self.tail()) from None
                time.sleep(0.3)
        raise RuntimeError("the hub did not start: " + self.tail())

    def tail(self, chars: int = 4000) -> str:
        """The end of the hub's log."""
        return (self.folder / "jupyterhub.log").read_text(errors="replace")[-chars:]

    def unresponsive(self) -> list[float]:
        """The seconds of each time the hub's event loop stood still, from its log."""
        seconds = []
        for line in (self.folder / "jupyterhub.log").read_text(errors="replace").splitlines():
            if UNRESPONSIVE in line:
                words = line.split(UNRESPONSIVE, 1)[1].split()
                with contextlib.suppress(IndexError, ValueError):
                    seconds.append(float(words[1].rstrip("s!")))
        return seconds

    def api(self, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
        """``method path`` on the hub (through its proxy), as JSON, with ``token`` (the
        service's unless told).

        Raises:
            urllib.error.HTTPError: the hub answered with an error.
            OSError: it did not answer.
        """
        request = urllib.request.Request(
            self.url + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {token or self.token}"},
        )
        with urllib.request.urlopen(request, timeout=GUARD_S) as response:
            text = response.read()
        return json.loads(text) if text else None

    def add_attendee(self, name: str, *, linux_user: bool = True) -> str:
        """Make ``name`` a hub user (her Linux user too, unless told) and give her a token;
        returns it."""
        if linux_user:
            make_linux_user(name)
        self.api("POST", f"/hub/api/users/{name}")
        return str(self.api("POST", f"/hub/api/users/{name}/tokens", {"note": "room"})["token"])

    def spawn(self, name: str) -> int:
        """Ask the hub to start ``name``'s server, as her browser would: a "too many spawns"
        answer (429, the hub's ``concurrent_spawn_limit``) is asked again after the seconds it
        names. Returns how many times she was told to wait."""
        waits = 0
        while True:
            try:
                self.api("POST", f"/hub/api/users/{name}/server")
                return waits
            except urllib.error.HTTPError as exc:
                if exc.code != 429:
                    raise
                waits += 1
                time.sleep(float(exc.headers.get("Retry-After") or 1))

    def stop(self) -> None:
        """Stop the hub and its servers."""
        self.process.terminate()
        try:
            self.process.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


def spawn_all(hub: Hub, names: list[str]) -> dict[str, Any]:
    """Start every attendee's server at once, asking the hub's API how it is every
    :data:`POLL_S` until all are ready.

    Returns:
        ``ready_s`` (name → seconds until her server was ready), ``api_s`` (each answer's
        seconds), ``waits`` (429 answers in all), ``wall_s``.

    Raises:
        RuntimeError: a spawn failed, or the room was not ready within :data:`GUARD_S`.
    """
    answers: list[float] = []
    ready: dict[str, float] = {}
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(len(names)) as pool:
        spawns = {n: pool.submit(hub.spawn, n) for n in names}
        while len(ready) < len(names):
            if time.monotonic() - started > GUARD_S:
                raise RuntimeError("the room was not ready in time: " + hub.tail())
            asked = time.monotonic()
            users = {u["name"]: u for u in hub.api("GET", "/hub/api/users")}
            answers.append(time.monotonic() - asked)
            for name in names:
                if name not in ready and users[name]["servers"].get("", {}).get("ready"):
                    ready[name] = time.monotonic() - started
            failed = [(n, s) for n, s in spawns.items() if s.done() and s.exception() is not None]
            if failed:
                raise RuntimeError(f"{failed[0][0]}'s spawn failed: {failed[0][1].exception()}")
            time.sleep(POLL_S)
        waits = sum(s.result() for s in spawns.values())
    return {
        "ready_s": ready,
        "api_s": answers,
        "waits": waits,
        "wall_s": time.monotonic() - started,
    }


class Kernel:
    """A kernel of an attendee's server, driven over the Jupyter server's websocket (the
    messaging protocol's ``execute_request``), through the hub's proxy."""

    def __init__(self, hub: Hub, name: str, token: str, path: str = "") -> None:
        import websocket

        self.base = f"/user/{name}/api/kernels"
        self.hub, self.token = hub, token
        self.id = hub.api("POST", self.base, {"name": "python3", "path": path}, token)["id"]
        url = f"ws://127.0.0.1:{hub.port}{self.base}/{self.id}/channels"
        self.socket = websocket.create_connection(
            url, header=[f"Authorization: token {token}"], timeout=GUARD_S
        )
        self.session = uuid.uuid4().hex

    def run(self, code: str) -> dict[str, Any] | None:
        """Run ``code``; ``None`` when it ran, else the error (``ename``, ``evalue``)."""
        msg_id = uuid.uuid4().hex
        header = {
            "msg_id": msg_id,
            "session": self.session,
            "username": "room-test",
            "msg_type": "execute_request",
            "version": "5.3",
        }
        content = {
            "code": code,
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": True,
        }
        self.socket.send(
            json.dumps(
                {
                    "header": header,
                    "parent_header": {},
                    "metadata": {},
                    "content": content,
                    "channel": "shell",
                    "buffers": [],
                }
            )
        )
        error = None
        while True:
            message = json.loads(self.socket.recv())
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = message["header"]["msg_type"]
            if kind == "error":
                error = {k: message["content"][k] for k in ("ename", "evalue")}
            if kind == "status" and message["content"]["execution_state"] == "idle":
                return error

    def close(self) -> None:
        """Close the websocket and shut the kernel down."""
        self.socket.close()
        self.hub.api("DELETE", f"{self.base}/{self.id}", token=self.token)


#: Deploy/README.md's step 5, as an attendee types it in a terminal: here in a kernel.
STEP_5 = (
    "import subprocess\n"
    "subprocess.run(['workbook', 'copy-notebooks'], check=True)\n"
    "subprocess.run(['workbook', 'build-data'], cwd='workbook', check=True)\n"
)


def attendee_day(
    hub: Hub, name: str, token: str, notebooks: tuple[str, ...], *, written: bool = True
) -> dict[str, float]:
    """Step 5 in a kernel of the attendee's own server, then ``notebooks`` cell by cell, each in
    a kernel started in her ``workbook/`` folder: the solutions (``written``), or her own
    notebooks with their TODOs unwritten, up to the first error (as *Run All* goes). Returns the
    seconds each notebook took.

    Raises:
        RuntimeError: step 5 or a solution's cell failed (its error and source in the message).
    """
    setup = Kernel(hub, name, token)
    error = setup.run(STEP_5)
    setup.close()
    if error is not None:
        raise RuntimeError(f"{name}: step 5 failed: {error}")
    seconds = {}
    for path in solution_notebooks():
        if path.name[:2] not in notebooks:
            continue
        source = path if written else ROOT / "notebooks" / path.name
        started = time.monotonic()
        kernel = Kernel(hub, name, token, path="workbook")
        for cell in nbformat.read(source, as_version=4).cells:
            if cell.cell_type != "code":
                continue
            error = kernel.run(cell.source)
            if error is not None and written:
                raise RuntimeError(f"{name}, {path.name}: {error}\n{cell.source[:300]}")
            if error is not None:
                break
        kernel.close()
        seconds[path.name[:2]] = time.monotonic() - started
    return seconds


def expected_passes(notebooks: tuple[str, ...]) -> list[str]:
    """The ``"NN.T"`` TODOs whose checkpoints the solution notebooks ``notebooks`` pass."""
    return sorted(
        f"{path.name[:2]}.{todo}"
        for path in solution_notebooks()
        if path.name[:2] in notebooks
        for todo in todo_numbers(nbformat.read(path, as_version=4))
    )


def progress(room_url: str) -> tuple[dict[str, dict[str, Any]], float, float]:
    """``workbook room progress --json`` as the instructor runs it: ``{schema: row}``, and its
    wall and CPU seconds.

    Raises:
        RuntimeError: it failed.
    """
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    out = run(
        sys.executable,
        "-m",
        "helpers.cli",
        "room",
        "progress",
        "--json",
        env={**os.environ, "WORKBOOK_ROOM_URL": room_url},
    )
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rows = {row["schema"]: row for row in json.loads(out)["attendees"]}
    return rows, wall, cpu


@contextlib.contextmanager
def busy_machine(per_core: int, nice: int = -5) -> Iterator[int]:
    """``per_core`` busy processes per core at ``nice`` (a higher priority than the attendees'
    0; root may lower it) for as long as the block runs: what a room does to a small hub.
    Yields how many run."""
    count = per_core * (os.cpu_count() or 1)
    hogs = [
        subprocess.Popen(
            ["nice", "-n", str(nice), "sh", "-c", "while :; do :; done"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for _ in range(count)
    ]
    try:
        yield count
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


@contextlib.contextmanager
def firewall(port: int) -> Iterator[None]:
    """The room's nftables rules (``workbook room firewall --port PORT | nft -f -``) and its
    connection-tracking settings (deploy/README.md, step 3) for as long as the block runs, then
    their table removed and the settings as they were.

    Raises:
        RuntimeError: nft is missing or refused them.
    """
    from helpers.course.room_firewall import CONNTRACK_SYSCTL, NFT_TABLE

    rules = run(sys.executable, "-m", "helpers.cli", "room", "firewall", "--port", port)
    done = subprocess.run(["nft", "-f", "-"], input=rules, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"nft refused the room's rules: {done.stderr.strip()}")
    settings = [line.split(" = ") for line in CONNTRACK_SYSCTL.splitlines()]
    files = [Path("/proc/sys", name.replace(".", "/")) for name, _ in settings]
    before = [file.read_text() for file in files]
    try:
        for file, (_, value) in zip(files, settings, strict=True):
            file.write_text(value)
        yield
    finally:
        for file, value in zip(files, before, strict=True):
            file.write_text(value)
        subprocess.run(["nft", "delete", "table", "inet", NFT_TABLE], capture_output=True)


def remove_linux_user(name: str) -> None:
    """Remove the Linux user ``name`` and her home, if she exists."""
    if subprocess.run(["id", name], capture_output=True).returncode == 0:
        subprocess.run(["userdel", "--remove", name], capture_output=True)


#: The attendees of make bench's room.
BENCH_ATTENDEES = 30
#: The notebooks each attendee of make bench's room runs after step 5 (the day's first burst).
BENCH_NOTEBOOKS = ("02",)
#: A tighter ``concurrent_spawn_limit`` than the room's, measured beside it.
TIGHT_SPAWN_LIMIT = 10
#: How many times the bench reads the room's progress (the median is reported).
PROGRESS_READS = 5


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


def _spawn_figures(hub: Hub, spawned: dict[str, Any], stalls_before: int) -> dict[str, Any]:
    ready = sorted(spawned["ready_s"].values())
    stalls = hub.unresponsive()[stalls_before:]
    return {
        "ready_s": ready[-1],
        "ready_median_s": ready[len(ready) // 2],
        "api_p95_s": _percentile(spawned["api_s"], 0.95),
        "api_max_s": max(spawned["api_s"]),
        "waits": spawned["waits"],
        "stalls": len(stalls),
        "stall_max_s": max(stalls, default=0.0),
    }


def _stop_servers(hub: Hub, names: list[str]) -> None:
    for name in names:
        hub.api("DELETE", f"/hub/api/users/{name}/server")
    deadline = time.monotonic() + GUARD_S
    while time.monotonic() < deadline:
        users = {u["name"]: u for u in hub.api("GET", "/hub/api/users")}
        if not any(users[n]["servers"] for n in names):
            return
        time.sleep(0.5)


def measure_room(room_url: str, folder: Path, attendees: int = BENCH_ATTENDEES) -> dict[str, Any]:
    """A room of ``attendees`` on a real hub, measured for make bench (root only): their servers
    started at once under a tighter spawn limit and then under the room's (each
    time: the last server's ready time, the hub API's answers while they start, 429s, the
    hub's event-loop stalls), the day's first burst (every attendee's step 5 and notebook 02 at
    once: its wall time, the attendees whose kernels or cells failed), and ``workbook room
    progress`` on the idle machine afterwards (wall and CPU seconds, median of
    :data:`PROGRESS_READS`; whether every line was right).

    Raises:
        RuntimeError: the hub or the room could not be set up.
    """
    from helpers.course.room import attendee_schema

    envs = environments()
    stamp = time.strftime("%H%M%S")
    names = [f"wb{stamp}n{k + 1:02d}" for k in range(attendees)]
    result: dict[str, Any] = {"attendees": attendees}
    port = urllib.parse.urlsplit(room_url).port or 5432
    try:
        with firewall(port):
            limits = {
                "tight": f"c.JupyterHub.concurrent_spawn_limit = {TIGHT_SPAWN_LIMIT}",
                "room": "",
            }
            for name in names:
                make_linux_user(name)
            for label, extra in limits.items():
                hub = Hub(folder / label, envs, room_url, extra=extra)
                try:
                    tokens = {n: hub.add_attendee(n, linux_user=False) for n in names}
                    before = len(hub.unresponsive())
                    result[f"spawn_{label}"] = _spawn_figures(hub, spawn_all(hub, names), before)
                    if label == "room":
                        result |= _burst(hub, names, tokens)
                        result |= _progress_figures(room_url, names, attendee_schema)
                    else:
                        _stop_servers(hub, names)
                finally:
                    hub.stop()
    finally:
        for name in names:
            remove_linux_user(name)
    return result


def _burst(hub: Hub, names: list[str], tokens: dict[str, str]) -> dict[str, Any]:
    started = time.monotonic()
    failed: list[str] = []
    with concurrent.futures.ThreadPoolExecutor(len(names)) as pool:
        days = {n: pool.submit(attendee_day, hub, n, tokens[n], BENCH_NOTEBOOKS) for n in names}
        for name, day in days.items():
            try:
                day.result()
            except Exception as exc:  # measured, never fatal: the room goes on
                failed.append(f"{name}: {' '.join(str(exc).split())[:200]}")
    return {
        "burst_s": time.monotonic() - started,
        "burst_failed": failed,
        "kernel_starts": len(names) * (1 + len(BENCH_NOTEBOOKS)),
        "address_in_use": sum("Address already in use" in f for f in failed)
        + hub.tail(10**9).count("Address already in use"),
    }


def _progress_figures(room_url: str, names: list[str], schema_of: Any) -> dict[str, Any]:
    expected = expected_passes(BENCH_NOTEBOOKS)
    walls, cpus, right = [], [], True
    for _ in range(PROGRESS_READS):
        rows, wall, cpu = progress(room_url)
        walls.append(wall)
        cpus.append(cpu)
        right = right and all(rows[schema_of(n)]["passed"] == expected for n in names)
    return {
        "progress_wall_s": sorted(walls)[len(walls) // 2],
        "progress_cpu_s": sorted(cpus)[len(cpus) // 2],
        "progress_right": right,
    }


def spawn_markdown(result: dict[str, Any], machine: dict[str, Any]) -> str:
    """make bench's sentence on the spawns: the hub's default limit beside the room's."""

    def said(figures: dict[str, Any]) -> str:
        return (
            f"the last server was ready in {figures['ready_s']:.0f} s (median "
            f"{figures['ready_median_s']:.0f} s), the hub's API answered in "
            f"{figures['api_p95_s']:.2f} s at the 95th percentile and {figures['api_max_s']:.2f} s "
            f"at most, and its event loop stood still {figures['stalls']} times (longest "
            f"{figures['stall_max_s']:.1f} s)"
        )

    room, tight = result["spawn_room"], result["spawn_tight"]
    return (
        f"{result['attendees']} attendees' servers started at once on a real JupyterHub "
        f"(`make bench`, {machine['cpu']}, {machine['cores']} cores, {machine['date']}): with "
        f"the room's `concurrent_spawn_limit` of {hub_configuration().CONCURRENT_SPAWN_LIMIT}, "
        f"{said(room)}, and {room['waits']} logins were told to try again; with a tighter "
        f"{TIGHT_SPAWN_LIMIT}, {said(tight)}, and {tight['waits']} logins were told to try "
        "again (each a page saying so, in the browser)."
    )


def day_markdown(result: dict[str, Any]) -> str:
    """make bench's sentence on the day's first burst and the kernels' starts."""
    failed = len(result["burst_failed"])
    return (
        f"Then all {result['attendees']} at once copied the notebooks, built the data and ran "
        f"notebook 02 in kernels of their own servers: {result['burst_s']:.0f} s for the room; "
        f"{failed} of {result['attendees']} attendees met a failure, and "
        f'{result["address_in_use"]} of {result["kernel_starts"]} kernel starts met "Address '
        f'already in use" (kernels on Unix sockets).'
    )


def progress_markdown(result: dict[str, Any]) -> str:
    """make bench's sentence on the instructor's view."""
    right = "every line right" if result["progress_right"] else "**a line wrong**"
    return (
        f"`workbook room progress` then read all {result['attendees']} in "
        f"{result['progress_wall_s']:.1f} s of wall clock and {result['progress_cpu_s']:.1f} s of "
        f"CPU (median of {PROGRESS_READS}, the machine idle; goals < 5 s and < 3 s), {right}."
    )


def hub_configuration() -> Any:
    """``deploy/jupyterhub_config.d/workbook.py`` as a module (its functions and constants; the
    part only JupyterHub runs is left out)."""
    import importlib.util

    path = ROOT / "deploy" / "jupyterhub_config.d" / "workbook.py"
    spec = importlib.util.spec_from_file_location("workbook_hub_config", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
