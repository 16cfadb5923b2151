"""A room for real: JupyterHub from PyPI, configurable-http-proxy from npm, a local-process
spawner with one Linux user per attendee, PostgreSQL with scram-sha-256 passwords over TCP, and
the workbook's wheel in the attendees' environment with ``deploy/jupyterhub_config.d/workbook.py``
loaded as the hub's configuration loads it.

Run by ``make test-room`` (which ``.ci/run`` calls), under ``tests/with_postgres.sh``, as root
(the hub runs as root to start each attendee's server as that attendee's Linux user, as on
TLJH). :data:`ATTENDEES` attendees (``WORKBOOK_ROOM_ATTENDEES``, default 4) are made users
through the hub's REST API, each given a token by it, and their servers are started at once
while the hub's API is asked every 50 ms how it is (each answer within
:data:`HUB_ANSWER_S`). Each attendee then, in a kernel of their own server, copies the notebooks
and builds the data (deploy/README.md's step 4), and runs solution notebooks 02, 03 and 04 cell by
cell in kernels started in that folder (over the Jupyter server's kernel websocket, through the
hub's proxy). Then the instructor's ``workbook room progress`` must show exactly each attendee's
TODOs, and an attendee's attacks from her own kernel (a view in place of her table, a function
that would run as the instructor, more connections than her limit) are refused.

The environments are built once into ``build/room/`` (kept between runs: a stamp names what
they were built from).
"""

from __future__ import annotations

import concurrent.futures
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
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import nbformat
import pytest

from devtools.room_simulation import expected_passes
from helpers.course.room import attendee_schema
from helpers.course.student_notebooks import solution_notebooks

ROOT = Path(__file__).resolve().parents[2]
UV = ROOT / ".venv" / "bin" / "uv"
#: Where the hub's and the attendees' environments are built (readable by every attendee).
ROOM_DIR = Path(os.environ.get("WORKBOOK_ROOM_DIR", "/opt/workbook-room-test"))
#: The Python the attendees' environment is made with: the system's, which every Linux user may
#: run (a Python under /root is not), with IDLE's manual (Debian: idle-python3.11).
SYSTEM_PYTHON = "/usr/bin/python3"
JUPYTERHUB = "jupyterhub==5.5.4"
CHP = "configurable-http-proxy@5.3.0"
ATTENDEES = int(os.environ.get("WORKBOOK_ROOM_ATTENDEES", "4"))
#: The notebooks each attendee runs.
NOTEBOOKS = ("02", "03", "04")
#: The longest the hub's API may take to answer while the servers start (the issue's bar: a
#: blocking hook held the hub 1-6 s per spawn).
HUB_ANSWER_S = 1.0
#: A hang guard for each wait (never a speed goal: that is make bench).
GUARD_S = 900
#: How long a stopped hub may take to stop its servers and exit before it is killed (a hang
#: guard: idle, it exits in about a second).
STOP_S = 300
ROOM_URL = os.environ.get("WORKBOOK_TEST_ROOM_URL")

pytestmark = [
    pytest.mark.skipif(not ROOM_URL, reason="run under tests/with_postgres.sh (make test-room)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="the hub starts servers as other users: root"),
]


def _run(*args: Any, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=GUARD_S,
    )
    assert done.returncode == 0, f"{args[:4]}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _inputs_digest() -> str:
    """What the environments are built from: the lock, the project's metadata, the workbook's
    code and data, the versions asked for."""
    digest = hashlib.sha256(f"{JUPYTERHUB} {CHP} {SYSTEM_PYTHON}".encode())
    for path in sorted(
        [ROOT / "requirements.lock", ROOT / "pyproject.toml"]
        + [p for p in (ROOT / "helpers").rglob("*.py")]
        + [p for p in (ROOT / "solutions").glob("*.ipynb")]
        + [p for p in (ROOT / "data").rglob("*") if p.is_file()]
    ):
        digest.update(path.relative_to(ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def environments() -> dict[str, Path]:
    """The hub's environment (JupyterHub), the attendees' (the wheel, its locked dependencies,
    psycopg, and JupyterHub's single-user server, as TLJH's user environment has them), and the
    proxy; built when their inputs changed."""
    if shutil.which("npm") is None:
        pytest.fail("npm is missing: configurable-http-proxy comes from the npm registry")
    stamp = ROOM_DIR / ".built"
    digest = _inputs_digest()
    hub, user, proxy = ROOM_DIR / "hub", ROOM_DIR / "user", ROOM_DIR / "proxy"
    if not stamp.exists() or stamp.read_text() != digest:
        shutil.rmtree(ROOM_DIR, ignore_errors=True)
        ROOM_DIR.mkdir(parents=True)
        ROOM_DIR.chmod(0o755)
        dist = ROOM_DIR / "dist"
        _run(UV, "build", "--wheel", "--quiet", "-o", dist, ROOT, cwd=ROOT)
        wheel = next(dist.glob("context_relay_workbook-*.whl"))
        _run(UV, "venv", "--quiet", "--python", sys.executable, hub)
        _run(UV, "pip", "install", "--quiet", "--python", hub / "bin" / "python", JUPYTERHUB)
        _run(UV, "venv", "--quiet", "--python", SYSTEM_PYTHON, user)
        python = user / "bin" / "python"
        _run(UV, "pip", "sync", "--quiet", "--require-hashes", "--python", python,
             ROOT / "requirements.lock")  # fmt: skip
        _run(UV, "pip", "install", "--quiet", "--no-deps", "--python", python, wheel)
        _run(UV, "pip", "install", "--quiet", "--python", python, "psycopg[binary]>=3.2",
             JUPYTERHUB)  # fmt: skip
        _run("npm", "install", "--silent", "--prefix", proxy, CHP)
        _run("chmod", "-R", "a+rX", ROOM_DIR)
        stamp.write_text(digest)
    return {"hub": hub, "user": user, "proxy": proxy / "node_modules" / ".bin"}


def _linux_user(name: str) -> None:
    """A Linux user ``name`` with a fresh home, as the hub's spawner needs (TLJH makes them)."""
    if subprocess.run(["id", name], capture_output=True).returncode == 0:
        _run("userdel", "--remove", name)
    _run("useradd", "--create-home", "--shell", "/bin/bash", name)


class Hub:
    """A running JupyterHub: its URL, an admin token for its REST API, its process."""

    def __init__(self, folder: Path, environments: dict[str, Path]) -> None:
        self.port, self.hub_port, self.api_port = _free_port(), _free_port(), _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = secrets.token_hex(32)
        config = folder / "jupyterhub_config.py"
        user_bin = environments["user"] / "bin"
        config.write_text(
            f"""
c = get_config()  # noqa: F821
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {self.port}
c.JupyterHub.hub_port = {self.hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{self.api_port}"
c.ConfigurableHTTPProxy.command = [{str(environments["proxy"] / "configurable-http-proxy")!r}]
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
c.Spawner.start_timeout = {GUARD_S}
c.Spawner.http_timeout = {GUARD_S}
# as TLJH loads every file of jupyterhub_config.d
exec(open({str(ROOT / "deploy" / "jupyterhub_config.d" / "workbook.py")!r}).read())
"""
        )
        env = {
            "PATH": f"{user_bin}:{environments['hub'] / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(folder),
            "WORKBOOK_CLI": str(user_bin / "workbook"),
            "WORKBOOK_ROOM_URL": str(ROOM_URL),
            "LANG": "C.UTF-8",
        }
        self.log = (folder / "jupyterhub.log").open("wb")
        self.process = subprocess.Popen(
            [environments["hub"] / "bin" / "jupyterhub", "-f", config],
            cwd=folder,
            env=env,
            stdout=self.log,
            stderr=self.log,
            start_new_session=True,  # its signals and its servers' stay in its own group
        )
        self.folder = folder
        deadline = time.monotonic() + GUARD_S
        while time.monotonic() < deadline:
            try:
                self.api("GET", "/hub/api/")
                return
            except OSError:
                assert self.process.poll() is None, self.tail()
                time.sleep(0.3)
        pytest.fail("the hub did not start: " + self.tail())

    def tail(self) -> str:
        return (self.folder / "jupyterhub.log").read_text(errors="replace")[-4000:]

    def api(self, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
        """``method path`` on the hub (through its proxy), as JSON, with ``token`` (the admin's
        unless told)."""
        request = urllib.request.Request(
            self.url + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {token or self.token}"},
        )
        with urllib.request.urlopen(request, timeout=GUARD_S) as response:
            text = response.read()
        return json.loads(text) if text else None

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


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
        self.socket.send(
            json.dumps(
                {
                    "header": {
                        "msg_id": msg_id,
                        "session": self.session,
                        "username": "room-test",
                        "msg_type": "execute_request",
                        "version": "5.3",
                    },
                    "parent_header": {},
                    "metadata": {},
                    "content": {
                        "code": code,
                        "silent": False,
                        "store_history": True,
                        "user_expressions": {},
                        "allow_stdin": False,
                        "stop_on_error": True,
                    },
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
        self.socket.close()
        self.hub.api("DELETE", f"{self.base}/{self.id}", token=self.token)


def _attendee_day(hub: Hub, name: str, token: str) -> dict[str, float]:
    """Step 4 in a kernel of the attendee's own server, then notebooks 02-04 cell by cell:
    the seconds each took."""
    setup = Kernel(hub, name, token)
    error = setup.run(
        "import subprocess\n"
        "subprocess.run(['workbook', 'copy-notebooks'], check=True)\n"
        "subprocess.run(['workbook', 'build-data'], cwd='workbook', check=True)\n"
    )
    setup.close()
    assert error is None, f"{name}: step 4 failed: {error}"
    seconds = {}
    for path in solution_notebooks():
        if path.name[:2] not in NOTEBOOKS:
            continue
        started = time.monotonic()
        kernel = Kernel(hub, name, token, path="workbook")
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                error = kernel.run(cell.source)
                assert error is None, f"{name}, {path.name}: {error}\n{cell.source[:300]}"
        kernel.close()
        seconds[path.name[:2]] = time.monotonic() - started
    return seconds


def _progress() -> dict[str, dict[str, Any]]:
    done = _run(
        sys.executable, "-m", "helpers.course.cli", "room", "progress", "--json",
        env={**os.environ, "WORKBOOK_ROOM_URL": str(ROOM_URL)},
    )  # fmt: skip
    return {row["schema"]: row for row in json.loads(done)["attendees"]}


def test_a_room_on_a_real_hub(environments, tmp_path) -> None:
    names = [f"wbroom{k + 1}" for k in range(ATTENDEES)]
    for name in names:
        _linux_user(name)
    hub = Hub(tmp_path, environments)
    try:
        tokens = {}
        for name in names:  # made users, and each given a token, through the hub's REST API
            hub.api("POST", f"/hub/api/users/{name}")
            tokens[name] = hub.api("POST", f"/hub/api/users/{name}/tokens", {"note": "room"})[
                "token"
            ]
        # every server started at once, while the hub's API is asked how it is
        answers: list[float] = []
        with concurrent.futures.ThreadPoolExecutor(ATTENDEES) as pool:
            spawns = [pool.submit(hub.api, "POST", f"/hub/api/users/{n}/server") for n in names]
            deadline = time.monotonic() + GUARD_S
            while time.monotonic() < deadline:
                asked = time.monotonic()
                users = {u["name"]: u for u in hub.api("GET", "/hub/api/users")}
                answers.append(time.monotonic() - asked)
                if all(users[n]["servers"].get("", {}).get("ready") for n in names):
                    break
                failed = [s for s in spawns if s.done() and s.exception() is not None]
                assert not failed, f"a spawn failed: {failed[0].exception()}\n{hub.tail()}"
                time.sleep(0.05)
            for spawn in spawns:
                spawn.result()
        assert all(users[n]["servers"][""]["ready"] for n in names), hub.tail()
        assert max(answers) < HUB_ANSWER_S, f"the hub took {max(answers):.2f} s to answer"
        # each attendee's day, all at once, each in their own server's kernels
        with concurrent.futures.ThreadPoolExecutor(ATTENDEES) as pool:
            days = {n: pool.submit(_attendee_day, hub, n, tokens[n]) for n in names}
            seconds = {n: day.result() for n, day in days.items()}
        progress = _progress()
        expected = expected_passes(NOTEBOOKS)
        for name in names:
            row = progress[attendee_schema(name)]
            assert (row["attendee"], row["passed"], row["error"]) == (name, expected, None)
            assert row["threads"] > 0 and set(seconds[name]) == set(NOTEBOOKS)
        _attacks(hub, names[0], tokens[names[0]], names[1])
    finally:
        hub.stop()


def _attacks(hub: Hub, name: str, token: str, other: str) -> None:
    """From her own kernel, with only what her server has (its WORKBOOK_DB_URL): another's
    schema is closed to her; a view with a function in place of her table is reported on her
    line and never run (its sequence unused); she cannot hold more connections than her limit;
    her rows naming another attendee are hers."""
    kernel = Kernel(hub, name, token)
    other_schema = attendee_schema(other)
    attack = f"""
import os
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool
engine = create_engine(os.environ["WORKBOOK_DB_URL"], poolclass=NullPool)
for sql in ('SELECT * FROM "{other_schema}".tool_outputs', 'SET ROLE "{other_schema}"'):
    try:
        with engine.begin() as db:
            db.execute(text(sql))
        raise AssertionError(f"allowed: {{sql}}")
    except Exception as exc:
        assert "permission denied" in str(exc), exc
held = []
try:
    for _ in range(10):
        held.append(engine.connect())
    raise AssertionError("ten connections were allowed")
except Exception as exc:
    assert "too many connections for role" in str(exc), exc
finally:
    for connection in held:
        connection.close()
with engine.begin() as db:
    db.execute(text("CREATE SEQUENCE ran"))
    db.execute(text("CREATE FUNCTION spy() RETURNS int LANGUAGE sql AS 'SELECT nextval(''ran'')::int'"))
    db.execute(text("ALTER TABLE checkpoint_results RENAME TO real_results"))
    db.execute(text("CREATE VIEW checkpoint_results AS SELECT * FROM real_results WHERE spy() > 0"))
"""
    assert kernel.run(attack) is None, "the attack cell failed"
    row = _progress()[attendee_schema(name)]
    assert row["error"] and "not a table" in row["error"]
    assert _progress()[other_schema]["error"] is None
    check = (
        "with engine.connect() as db:\n"
        "    assert db.execute(text('SELECT is_called FROM ran')).scalar() is False\n"
    )
    assert kernel.run(check) is None, "the attendee's function ran in the instructor's view"
    kernel.close()
