"""A busy room for real (issue 47): JupyterHub from PyPI, configurable-http-proxy from npm, a
local-process spawner with one Linux user per attendee, PostgreSQL with scram-sha-256 passwords
over TCP, the workbook's wheel in the attendees' environment, the hub configured by
``deploy/jupyterhub_config.d/workbook.py`` and the room's firewall in the kernel
(:mod:`devtools.real_room` drives them all), while busy processes at a higher priority, several
per core, hold the machine as thirty attendees hold a small hub.

Run by ``make test-room`` (which ``.ci/run`` calls), under ``tests/with_postgres.sh``, as root.
:data:`ATTENDEES` attendees (``WORKBOOK_ROOM_ATTENDEES``, default 8) are made users through the
hub's REST API and their servers started at once. Each then copies the notebooks and builds the
data in a kernel of her own server (deploy/README.md's step 5); all but :data:`IDLE` run the
solutions of notebooks 02 and 08 cell by cell (every correct answer must pass its checkpoint on
the starved machine), the last :data:`IDLE` run their own notebook 02 with its TODOs unwritten,
as *Run All* does. Then the instructor's ``workbook room progress`` must show exactly each
attendee's TODOs ("nothing yet" for the idle ones, never an error), ``workbook room check``
finds the firewall, the socket and the homes closed, and an attendee's attacks from her own
kernel are held: another's home is closed to her; a hundred connections stalled before and at
the password exchange (and over Multipath TCP) leave the others' stores, a new attendee's spawn,
the instructor's view and the superuser working; hundreds of connections to a listener of her
own leave the kernel's connection table as it was; her view in place of her table is reported
on her line and never run. The first attendee's name is 30 characters long: her kernels' Unix
sockets still fit their 107 bytes.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from devtools.real_room import (
    GUARD_S,
    ROOT,
    Hub,
    Kernel,
    attendee_day,
    busy_machine,
    environments,
    expected_passes,
    firewall,
    progress,
    spawn_all,
)
from helpers.course.room import ATTENDEE_CONNECTION_LIMIT, ATTENDEE_SOCKET_CAP, attendee_schema

ROOM_URL = os.environ.get("WORKBOOK_TEST_ROOM_URL")
SUPERUSER_URL = os.environ.get("WORKBOOK_TEST_PG_URL")
ATTENDEES = int(os.environ.get("WORKBOOK_ROOM_ATTENDEES", "8"))
#: The attendees who run their own notebook 02 with its TODOs unwritten: nothing passed yet.
IDLE = 2
#: The notebooks the other attendees run, solutions: every correct answer must pass.
NOTEBOOKS = ("02", "08")
#: Busy processes per core, at nice -5 (the attendees run at 0).
HOGS_PER_CORE = int(os.environ.get("WORKBOOK_ROOM_HOGS", "3"))
#: Connections the attacker tries to open at once, each way.
FLOOD = 100
#: A Linux user name of 30 characters: Jupyter's own run-time folder would put her kernels'
#: sockets past the 107 bytes a Unix socket's path may hold.
LONG_NAME = "wbroom-a-long-name-for-sockets"
#: Connection pairs the attacker opens to a listener of her own, on loopback.
LOOPBACK_FLOOD = 400

pytestmark = [
    pytest.mark.skipif(not ROOM_URL, reason="run under tests/with_postgres.sh (make test-room)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="the hub starts servers as other users: root"),
]


def test_a_busy_room_on_a_real_hub(tmp_path) -> None:
    assert ROOM_URL is not None
    envs = environments()
    # the first has a name as long as Linux allows, nearly: her kernels' socket paths must fit
    names = [LONG_NAME] + [f"wbroom{k + 1}" for k in range(1, ATTENDEES)]
    working, idle = names[:-IDLE], names[-IDLE:]
    with firewall(urlsplit(ROOM_URL).port or 5432), busy_machine(HOGS_PER_CORE):
        hub = Hub(tmp_path, envs, ROOM_URL)
        try:
            tokens = {name: hub.add_attendee(name) for name in names}
            spawned = spawn_all(hub, names)
            print(f"ready in {max(spawned['ready_s'].values()):.0f} s, the hub's API at most "
                  f"{max(spawned['api_s']):.2f} s")  # fmt: skip
            with concurrent.futures.ThreadPoolExecutor(len(names)) as pool:
                days = [
                    pool.submit(attendee_day, hub, n, tokens[n], NOTEBOOKS, written=n in working)
                    for n in names
                ]
                for day in days:
                    day.result()
            rows, _, _ = progress(ROOM_URL)
            for name in working:
                row = rows[attendee_schema(name)]
                assert (row["attendee"], row["passed"], row["error"], row["state"]) == (
                    name, expected_passes(NOTEBOOKS), None, "passed",
                )  # fmt: skip
                assert row["threads"] > 0
            for name in idle:
                row = rows[attendee_schema(name)]
                assert (row["attendee"], row["passed"], row["error"], row["state"]) == (
                    name, [], None, "nothing yet",
                )  # fmt: skip
            _room_check_finds_the_room_closed()
            _neighbours_stay_out(hub, names[0], tokens[names[0]], names[1])
            _a_stalled_flood_takes_nothing_down(hub, names[0], tokens[names[0]], names[1], tokens)
            _the_view_runs_nothing_of_hers(hub, names[0], tokens[names[0]], names[1])
        finally:
            hub.stop()


def _room_check_finds_the_room_closed() -> None:
    """``workbook room check`` as root: the firewall (probed as ``nobody``) and the kernel's
    connection tracking, the socket, the homes and the budget hold (the fresh cluster's other databases and advisory locks are
    test_room.py's)."""
    done = subprocess.run(
        [sys.executable, "-m", "helpers.cli", "room", "check", "--json", "--hub-config",
         str(ROOT / "deploy" / "jupyterhub_config.d" / "workbook.py")],
        capture_output=True, text=True, timeout=GUARD_S,
        env={**os.environ, "WORKBOOK_ROOM_URL": str(ROOM_URL)},
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    found = {f["check"]: f for f in json.loads(done.stdout)["findings"]}
    for check in ("firewall", "conntrack", "unix_socket", "homes", "hook", "max_connections"):
        assert found[check]["ok"], found[check]


def _neighbours_stay_out(hub: Hub, name: str, token: str, other: str) -> None:
    """From her kernel, another attendee's home (her notebooks, their outputs, her .env) is
    closed: it cannot be listed, and a file in it cannot be read by its path."""
    kernel = Kernel(hub, name, token)
    probe = f"""
import os
home = os.path.expanduser("~{other}")
for attempt in (lambda: os.listdir(home),
                lambda: open(os.path.join(home, "workbook", "02_persist_tool_outputs.ipynb")).read()):
    try:
        attempt()
        raise AssertionError("another attendee's home is open")
    except PermissionError:
        pass
assert os.stat(os.path.expanduser("~")).st_mode & 0o077 == 0, "her own home is open"
"""
    assert kernel.run(probe) is None, "a neighbour's home was readable"
    kernel.close()


#: From her kernel: connections to PostgreSQL's port that never send a startup packet, then
#: connections that send one and stop at the password exchange (the server's SCRAM challenge
#: read, never answered); each flood held open while the room is checked.
FLOOD_CELLS = {
    "raw": """
import os, socket, struct
from urllib.parse import urlsplit
_url = urlsplit(os.environ["WORKBOOK_DB_URL"])
held, refused = [], 0
for _ in range({flood}):
    try:
        held.append(socket.create_connection((_url.hostname, _url.port or 5432), timeout=60))
    except OSError:
        refused += 1
assert len(held) <= {cap} and refused >= {flood} - {cap}, (len(held), refused)
""",
    "mptcp": """
import os, socket
from urllib.parse import urlsplit
for s in held:
    s.close()
_url = urlsplit(os.environ["WORKBOOK_DB_URL"])
held, refused = [], 0
for _ in range({flood}):
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)  # IPPROTO_MPTCP
    except OSError:
        break  # a kernel without Multipath TCP
    try:
        s.settimeout(60)
        s.connect((_url.hostname, _url.port or 5432))
        held.append(s)
    except OSError:
        s.close()
        refused += 1
assert len(held) <= {cap}, (len(held), refused)
""",
    "stalled": """
import os, socket, struct
from urllib.parse import urlsplit, unquote
for s in held:
    s.close()
_url = urlsplit(os.environ["WORKBOOK_DB_URL"])
_params = b"user\\0" + unquote(_url.username).encode() + b"\\0database\\0" + _url.path[1:].encode() + b"\\0\\0"
held, refused = [], 0
for _ in range({flood}):
    try:
        s = socket.create_connection((_url.hostname, _url.port or 5432), timeout=60)
        s.sendall(struct.pack("!ii", 8 + len(_params), 196608) + _params)
        assert s.recv(1) == b"R", "no authentication request"  # the server waits for her now
        held.append(s)
    except OSError:
        refused += 1
assert len(held) <= {cap} and refused >= {flood} - {cap}, (len(held), refused)
""",
}


def _a_stalled_flood_takes_nothing_down(
    hub: Hub, name: str, token: str, other: str, tokens: dict[str, str]
) -> None:
    """While she holds each flood: another attendee's store works from her kernel, a new
    attendee's server starts (the hook's ``room url`` connects), the instructor's view reads
    everyone, and the superuser connects."""
    import psycopg

    attacker, neighbour = Kernel(hub, name, token), Kernel(hub, other, tokens[other])
    for kind, cell in FLOOD_CELLS.items():
        assert attacker.run(cell.format(flood=FLOOD, cap=ATTENDEE_SOCKET_CAP)) is None, kind
        store = "from helpers import ToolOutputStore\nToolOutputStore().count()\n"
        assert neighbour.run(store) is None, f"{kind}: the neighbour's store failed"
        newcomer = f"wbnew{kind}"
        tokens[newcomer] = hub.add_attendee(newcomer)
        spawn_all(hub, [newcomer])
        rows, _, _ = progress(str(ROOM_URL))
        assert rows[attendee_schema(other)]["error"] is None, kind
        assert rows[attendee_schema(newcomer)]["state"] == "nothing yet", kind
        with psycopg.connect(str(SUPERUSER_URL).replace("postgresql+psycopg", "postgresql")) as db:
            assert db.execute("SELECT 1").fetchone() == (1,), kind
    assert attacker.run("for s in held:\n    s.close()\n") is None
    # her own listener on loopback: connections the kernel does not track (the table holds
    # every tracked connection of the machine, and full it drops new ones)
    tracked = Path("/proc/sys/net/netfilter/nf_conntrack_count")
    before = int(tracked.read_text())
    flood = (
        "import socket\n"
        "mine = socket.socket(); mine.bind(('127.0.0.1', 0)); mine.listen(1024)\n"
        f"pairs = [socket.create_connection(mine.getsockname()) for _ in range({LOOPBACK_FLOOD})]\n"
        "accepted = [mine.accept()[0] for _ in pairs]\n"
    )
    assert attacker.run(flood) is None, "her loopback flood failed"
    grown = int(tracked.read_text()) - before
    assert attacker.run("for s in pairs + accepted:\n    s.close()\n") is None
    assert grown < LOOPBACK_FLOOD // 4, f"{grown} tracked connections for {LOOPBACK_FLOOD}"
    attacker.close()
    neighbour.close()


def _the_view_runs_nothing_of_hers(hub: Hub, name: str, token: str, other: str) -> None:
    """From her own kernel, with only what her server has (its WORKBOOK_DB_URL): another's
    schema is closed to her; a view with a function in place of her table is reported on her
    line and never run (its sequence unused); she cannot hold more connections than her role's
    limit (past it: the role's refusal, or the firewall's just behind it while the flood's
    closed connections are still being torn down)."""
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
except Exception as exc:  # her role's limit, or the firewall's cap behind it
    assert len(held) <= {ATTENDEE_CONNECTION_LIMIT}, len(held)
    assert "too many connections for role" in str(exc) or "refused" in str(exc), exc
finally:
    for connection in held:
        connection.close()
import time
for pause in (0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, None):  # the store's own retry, longer:
    try:  # the cap counts her closed connections until their server processes end
        engine.connect().close()
        break
    except Exception as exc:
        if pause is None or "refused" not in str(exc):
            raise
        time.sleep(pause)
with engine.begin() as db:
    db.execute(text("CREATE SEQUENCE ran"))
    db.execute(text("CREATE FUNCTION spy() RETURNS int LANGUAGE sql AS 'SELECT nextval(''ran'')::int'"))
    db.execute(text("ALTER TABLE checkpoint_results RENAME TO real_results"))
    db.execute(text("CREATE VIEW checkpoint_results AS SELECT * FROM real_results WHERE spy() > 0"))
"""
    assert kernel.run(attack) is None, "the attack cell failed"
    rows, _, _ = progress(str(ROOM_URL))
    assert (
        rows[attendee_schema(name)]["error"]
        and "not a table" in rows[attendee_schema(name)]["error"]
    )
    assert rows[other_schema]["error"] is None
    check = (
        "with engine.connect() as db:\n"
        "    assert db.execute(text('SELECT is_called FROM ran')).scalar() is False\n"
    )
    assert kernel.run(check) is None, "the attendee's function ran in the instructor's view"
    kernel.close()
