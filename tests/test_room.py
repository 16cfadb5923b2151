"""A room on one PostgreSQL database: each attendee a role owning a schema of its own (the same
thread id is two threads; another attendee's tables cannot even be read), every checkpoint run
recorded, the instructor's read-only view of the room ("nothing yet" a state, a few reader
processes for the whole room), the hub's configuration (its hook, homes closed), the firewall's
rules and their probe, and room check. The PostgreSQL tests run under ``make test-pg``."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import subprocess
import sys
import time
import typing
import uuid
from pathlib import Path

import pytest
from hang import HANG_GUARD_S
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.course.room import (
    SCHEMA_RE,
    attendee_schema,
    provision_attendee,
    record_checkpoint,
    room_progress,
)
from helpers.store.database import ensure_own_schema
from helpers.store.tool_outputs import ToolOutputStore

ROOT = Path(__file__).resolve().parent.parent
PG = os.environ.get("WORKBOOK_TEST_PG_URL")
#: A room's admin as deploy/README.md makes it (CREATEROLE, owning the room's database), over TCP
#: with a password; tests/with_postgres.sh makes one.
ROOM = os.environ.get("WORKBOOK_TEST_ROOM_URL") or PG
needs_pg = pytest.mark.skipif(not PG, reason="set WORKBOOK_TEST_PG_URL (make test-pg)")


def _hub_config():
    spec = importlib.util.spec_from_file_location(
        "hub_config", ROOT / "deploy" / "jupyterhub_config.d" / "workbook.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.text(min_size=1, max_size=120))
def test_an_attendees_role_is_a_safe_identifier(name: str) -> None:
    role = attendee_schema(name)
    assert SCHEMA_RE.match(role) and len(role.encode()) <= 63  # PostgreSQL's NAMEDATALEN - 1


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.text(min_size=1, max_size=40), st.text(min_size=1, max_size=40))
def test_two_names_never_share_a_role(first: str, second: str) -> None:
    if first != second:
        assert attendee_schema(first) != attendee_schema(second)


def test_a_chosen_name_cannot_land_on_anothers_role() -> None:
    ann = attendee_schema("ann.lee")
    assert attendee_schema(ann.removeprefix("attendee_")) != ann
    with pytest.raises(ValueError, match="name"):
        attendee_schema("")
    with pytest.raises(ValueError, match="PostgreSQL"):
        provision_attendee("sqlite:///x.sqlite", "ann")


def test_the_hub_gives_each_server_what_workbook_room_url_prints(
    tmp_path, monkeypatch, caplog
) -> None:
    import asyncio

    hub = _hub_config()
    fake = tmp_path / "workbook"
    fake.write_text(
        '#!/bin/sh\necho "postgresql+psycopg://x:pw@h/db?name=$4&room=$WORKBOOK_ROOM_URL"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("WORKBOOK_ROOM_URL", "postgresql://admin@h/db")
    monkeypatch.setattr(hub, "WORKBOOK_CLI", str(fake))

    class Spawner:
        environment: typing.ClassVar[dict] = {}

        class user:
            name = "-Ann Lee"  # read as a name, never as an option

    real = hub.attendee_environment
    monkeypatch.setattr(hub, "attendee_environment", lambda n: real(n, cli=str(fake)))
    asyncio.run(hub.pre_spawn_hook(Spawner))
    assert Spawner.environment["WORKBOOK_DB_URL"].endswith(
        "name=-Ann Lee&room=postgresql://admin@h/db"
    )
    assert Spawner.environment["WORKBOOK_PROFILE"] == "offline"
    fake.write_text("#!/bin/sh\necho 'refused: postgresql://admin:***@h/db' >&2\nexit 2\n")
    caplog.set_level(logging.ERROR, logger="JupyterHub")
    with pytest.raises(RuntimeError) as failed:  # what the attendee's spawn page shows
        asyncio.run(real("ann", cli=str(fake)))
    assert str(failed.value) == hub.SPAWN_FAILED_FOR_ATTENDEE
    assert "'ann' failed: 'refused: postgresql://admin:***@h/db'" in caplog.text  # the instructor's


def test_the_hub_answers_while_hooks_wait_and_runs_two_at_once(tmp_path) -> None:
    """The hook is awaited on the hub's event loop: while spawns' ``room url`` commands wait
    (here until a file exists, which the test makes only once the loop has gone on ticking), the
    loop goes on; at most ``ROOM_URL_AT_ONCE`` run at once, each holding one of the room's admin
    connections (:data:`helpers.course.room.HOOK_CONNECTIONS`), and the rest wait their turn.
    Counted, not timed: a blocked loop would never make the file, and the commands give up."""
    import asyncio

    from helpers.course.room import HOOK_CONNECTIONS

    hub = _hub_config()
    assert hub.ROOM_URL_AT_ONCE == HOOK_CONNECTIONS
    go, running = tmp_path / "go", tmp_path / "running"
    running.mkdir()
    slow = tmp_path / "workbook"
    slow.write_text(
        f'#!/bin/sh\ntouch "{running}/$4"\nn=0\nwhile [ ! -e "{go}" ]; do\n'
        f"  n=$((n + 1)); [ $n -gt 6000 ] && exit 1; sleep 0.05\ndone\n"
        f'rm "{running}/$4"\necho "postgresql+psycopg://x:pw@h/db?$4"\n'
    )
    slow.chmod(0o755)
    names = ("ann", "bob", "cyd", "dee", "eve")

    async def room() -> tuple[list, int, int]:
        ticks, peak = 0, 0

        async def heartbeat() -> None:
            nonlocal ticks, peak
            while True:
                await asyncio.sleep(0.01)
                ticks += 1
                peak = max(peak, len(list(running.iterdir())))
                if ticks == 50:
                    go.touch()

        beat = asyncio.ensure_future(heartbeat())
        spawns = await asyncio.gather(
            *(hub.attendee_environment(n, room_url="postgresql://a@h/d", cli=str(slow))
              for n in names)
        )  # fmt: skip
        beat.cancel()
        return spawns, ticks, peak

    spawns, ticks, peak = asyncio.run(room())
    assert [s["WORKBOOK_DB_URL"].rsplit("?", 1)[1] for s in spawns] == list(names)
    assert ticks >= 50 and peak == HOOK_CONNECTIONS, (ticks, peak)


def test_the_hook_closes_a_home_and_leaves_a_closed_one(tmp_path) -> None:
    hub = _hub_config()
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    home.chmod(0o755)
    assert hub.close_home(home) is True and (home.stat().st_mode & 0o777) == 0o700
    assert hub.close_home(home) is False


def test_room_check_finds_an_open_home(tmp_path) -> None:
    """An attendee's home others may enter is open; one only she may enter is not; a group
    home is open when another user shares the group."""
    import grp
    import pwd

    from helpers.course.room_homes import home_is_open, tljh_username

    home = tmp_path / "ann"
    home.mkdir()
    me = pwd.getpwuid(os.getuid())
    account = pwd.struct_passwd(("ann", "x", 4242, 4242, "", str(home), "/bin/sh"))
    for mode, opened in ((0o755, True), (0o711, True), (0o700, False)):
        home.chmod(mode)
        assert home_is_open(account) is opened, oct(mode)
    home.chmod(0o750)  # her group: open only if another user is in it
    shared = pwd.struct_passwd(("ann", "x", 4242, os.stat(home).st_gid, "", str(home), "/sh"))
    others = set(grp.getgrgid(os.stat(home).st_gid).gr_mem) | {
        u.pw_name for u in pwd.getpwall() if u.pw_gid == os.stat(home).st_gid
    }
    assert home_is_open(shared) is bool(others - {"ann"})
    assert home_is_open(pwd.struct_passwd(("x", "x", 1, 1, "", str(tmp_path / "no"), ""))) is False
    assert me.pw_name  # the test's own account exists
    # TLJH's rule (tljh/normalize.py): short names kept, long ones cut and hashed
    assert tljh_username("ann") == "jupyter-ann"
    long = tljh_username("a" * 40)
    assert len(long) == 32 and long.startswith("jupyter-" + "a" * 18 + "-")
    # room check counts only the homes there are: an attendee with no account yet is not "closed"
    from types import SimpleNamespace

    from helpers.course.room_check import _homes

    me_closed = os.stat(me.pw_dir).st_mode & 0o077 == 0
    room = SimpleNamespace(attendees=[("a", me.pw_name), ("b", "no-such-attendee-here")])
    finding = _homes(room)
    if me_closed:
        assert finding.ok and finding.line.startswith("1 of the 2 attendees' homes are closed")
        assert "1 has no Linux account yet" in finding.line
    assert _homes(SimpleNamespace(attendees=[])).line.startswith("no attendee yet")


def test_room_check_reads_the_kernels_connection_tracking(tmp_path) -> None:
    """The per-user cap counts open connections only: room check wants a table large enough
    and closed connections forgotten soon, and says the command that sets both."""
    from helpers.course.room_check import _conntrack
    from helpers.course.room_firewall import CONNTRACK_MIN_ENTRIES, CONNTRACK_TIME_WAIT_MAX_S

    proc = tmp_path / "netfilter"
    assert not _conntrack(str(proc)).ok  # not loaded: apply the firewall first
    proc.mkdir()
    for entries, time_wait_s, ok in (
        (65_536, 120, False),  # the kernel's defaults
        (CONNTRACK_MIN_ENTRIES, 120, False),
        (CONNTRACK_MIN_ENTRIES, CONNTRACK_TIME_WAIT_MAX_S, True),
        (4 * CONNTRACK_MIN_ENTRIES, 10, True),
    ):
        (proc / "nf_conntrack_max").write_text(f"{entries}\n")
        (proc / "nf_conntrack_tcp_timeout_time_wait").write_text(f"{time_wait_s}\n")
        finding = _conntrack(str(proc))
        assert finding.ok is ok, finding
        if not ok:
            assert "sysctl -p /etc/sysctl.d/60-workbook-room.conf" in finding.line


def test_the_firewall_rules_and_their_probe(tmp_path) -> None:
    """``workbook room firewall`` writes one table: a per-user cap on the port, loopback
    untracked but for it, a cap on each user's other tracked connections. The probe opens one
    connection more than the cap as an ordinary user: here no firewall, so all open and it
    proves no cap; a closed port proves none either (nothing opened, the first refused)."""
    import errno
    import socket

    from helpers.course.room import ATTENDEE_SOCKET_CAP
    from helpers.course.room_firewall import (
        NFT_TABLE,
        TRACKED_PER_USER,
        Probe,
        nft_ruleset,
        probe_cap,
    )

    rules = nft_ruleset(6543)
    assert f"table inet {NFT_TABLE}" in rules and "tcp dport 6543 meta skuid >= 1000" in rules
    assert f"ct count over {ATTENDEE_SOCKET_CAP}" in rules
    assert f"ct count over {TRACKED_PER_USER}" in rules
    for hook in ("oifname", "iifname"):  # loopback untracked, but for the port
        untracked = f'{hook} != "lo" accept\n    tcp dport 6543 accept\n    tcp sport 6543 accept\n'
        assert untracked + "    notrack\n" in rules
    for bad in ((0, 4), (70_000, 4), (5432, 0)):
        with pytest.raises(ValueError):
            nft_ruleset(*bad)
    assert Probe(ATTENDEE_SOCKET_CAP, errno.ECONNREFUSED, "x").capped_at(ATTENDEE_SOCKET_CAP)
    for opened, failed in ((0, errno.ECONNREFUSED), (ATTENDEE_SOCKET_CAP, errno.ETIMEDOUT),
                           (ATTENDEE_SOCKET_CAP + 1, 0)):  # fmt: skip
        assert not Probe(opened, failed, "x").capped_at(ATTENDEE_SOCKET_CAP)
    if os.geteuid() != 0 and os.geteuid() < 1000:
        assert probe_cap("127.0.0.1", 1) is None
        return
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        probed = probe_cap("127.0.0.1", listener.getsockname()[1])
        closed_port = listener.getsockname()[1]
    assert probed is not None and (probed.opened, probed.errno) == (ATTENDEE_SOCKET_CAP + 1, 0)
    closed = probe_cap("127.0.0.1", closed_port)
    assert closed is not None and closed.opened == 0 and not closed.capped_at(4), closed
    env = {**os.environ, "WORKBOOK_ROOM_URL": "postgresql+psycopg://a:b@127.0.0.1:6544/x"}
    done = subprocess.run(
        [sys.executable, "-m", "helpers.cli", "room", "firewall"],
        capture_output=True, text=True, env=env, timeout=HANG_GUARD_S, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout == nft_ruleset(6544)


def test_the_rooms_url_comes_from_a_file_only_root_reads(tmp_path) -> None:
    from helpers.cli.room import room_url_from_file
    from helpers.course.room_check import _secret

    env_file = tmp_path / "room.env"
    env_file.write_text("WORKBOOK_ROOM_URL=postgresql+psycopg://room:s3cret@127.0.0.1/workbook\n")
    env_file.chmod(0o600)
    assert (
        room_url_from_file(str(env_file)) == "postgresql+psycopg://room:s3cret@127.0.0.1/workbook"
    )
    assert room_url_from_file(str(tmp_path / "missing.env")) is None
    assert _secret(env_file).ok
    env_file.chmod(0o644)
    opened = _secret(env_file)
    assert not opened.ok and f"chmod 600 {env_file}" in opened.line and "s3cret" not in opened.line
    env = {k: v for k, v in os.environ.items() if k != "WORKBOOK_ROOM_URL"}
    done = subprocess.run(
        [sys.executable, "-m", "helpers.cli", "room", "progress"],
        capture_output=True, text=True, env=env, timeout=HANG_GUARD_S, cwd=ROOT,
    )  # fmt: skip
    if not os.access("/etc/workbook/room.env", os.R_OK):
        assert done.returncode == 2 and "/etc/workbook/room.env" in done.stderr


def test_the_hook_gives_each_server_a_short_runtime_folder_and_kills_a_cancelled_command(
    tmp_path,
) -> None:
    """A kernel's Unix sockets live in the server's run-time folder, and a socket's path holds
    at most 107 bytes: the hook puts that folder in the attendee's home, short, for TLJH's
    systemd spawner (its user name expanded as the server starts) and the local one alike. A
    spawn cancelled while ``room url`` runs ends that command (and its admin connection)."""
    import asyncio
    import pwd

    hub = _hub_config()
    me = pwd.getpwuid(os.getuid())

    class SystemdLike:
        username_template = me.pw_name

        def _expand_user_vars(self, template: str) -> str:
            return template

    assert hub.runtime_dir(SystemdLike()) == os.path.join(me.pw_dir, hub.RUNTIME_FOLDER)
    SystemdLike.username_template = "no-such-user-here"
    assert hub.runtime_dir(SystemdLike()) == ""
    longest = f"/home/{'j' * 32}/{hub.RUNTIME_FOLDER}/kernel-{'0' * 36}-ipc-99"
    assert len(longest.encode()) <= 107  # TLJH's longest user name (32 characters)
    pid_file = tmp_path / "pid"
    slow = tmp_path / "workbook"
    slow.write_text(f'#!/bin/sh\necho $$ > "{pid_file}"\nexec sleep 600\n')
    slow.chmod(0o755)

    async def cancelled() -> None:
        task = asyncio.ensure_future(
            hub.attendee_environment("ann", room_url="postgresql://a@h/d", cli=str(slow))
        )
        while not pid_file.exists() or not pid_file.read_text().strip():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancelled())
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


def test_a_reader_whose_attendee_cannot_be_ended_still_ends(monkeypatch) -> None:
    """Past an attendee's deadline her reader is killed, and her session ended with the admin's
    connection; when that fails too (no slot, a restart), her line says so and the room is read
    on: the reader is gone either way."""
    from helpers.course import room_reader

    class Stuck:
        killed = False

        class process:
            @staticmethod
            def poll() -> None:
                return None

        def ask(self, request) -> None:
            pass

        def next_line(self, deadline: float) -> dict:
            if not hasattr(self, "said"):
                self.said = True
                return {"pid": 4242}
            raise room_reader._Late

        def kill(self) -> None:
            Stuck.killed = True

    def refuses(pid: int) -> None:
        raise OSError("no slot")

    monkeypatch.setattr(room_reader, "PROGRESS_DEADLINE_S", 0.01)
    read = room_reader.Read("attendee_x", "pw")
    line, healthy = room_reader._read_with(Stuck(), "postgresql://h/d", read, refuses)
    assert not healthy and Stuck.killed
    assert "stopped, not read" in line["error"] and "could not be ended: OSError" in line["error"]


def test_a_reader_that_runs_out_of_memory_ends_after_her_line(monkeypatch) -> None:
    """Behind the catalog checks: a read that sends the reader more than its memory (an error
    of hundreds of megabytes) is her line only, and the reader asks to be replaced; any other
    failure is her line and the reader goes on."""
    from helpers.course import room_reader

    def floods(request, line) -> None:
        raise MemoryError

    monkeypatch.setattr(room_reader, "_read", floods)
    line, fatal = room_reader.read_one({"url": "u", "schema": "s", "password": "p"})
    assert fatal and line["error"].startswith("sent more than the view's 512 MiB")
    assert room_reader._fatal(line) and (line["passed"], line["runs"]) == ([], 0)

    def fails(request, line) -> None:
        line["runs"] = 3
        raise RuntimeError("  no\nsuch   table ")

    monkeypatch.setattr(room_reader, "_read", fails)
    line, fatal = room_reader.read_one({"url": "u", "schema": "s", "password": "p"})
    assert not fatal and line["error"] == "no such table" and line["runs"] == 0


def test_room_url_imports_neither_the_sdk_nor_the_loop() -> None:
    """What the hub runs before every spawn loads only what it needs (its CPU is make bench's)."""
    probe = (
        "import sys\n"
        "from helpers.cli import main\n"
        "code = main(['room', 'url', 'ann', '--room-url', 'sqlite:///nowhere.sqlite'])\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] == 'openai' "
        "or m.startswith(('helpers.loop', 'helpers.models')))\n"
        "print(code, heavy)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=HANG_GUARD_S,
        cwd=ROOT,
    )  # fmt: skip
    assert done.stdout.strip() == "2 []", done.stdout + done.stderr
    assert "PostgreSQL" in done.stderr


def test_every_checkpoint_run_is_recorded_for_the_room(tmp_path, monkeypatch) -> None:
    from helpers.course import room
    from helpers.course.checkpoint import Checkpoint, CheckpointFailed, Property, expect

    db = f"sqlite:///{tmp_path / 'store.sqlite'}"
    monkeypatch.setenv("WORKBOOK_DB_URL", db)
    monkeypatch.setenv("JUPYTERHUB_USER", "ann")
    monkeypatch.setattr(room, "_stores", {})
    assert ensure_own_schema(ToolOutputStore(db).engine) is None  # SQLite: nothing to make
    holds = Property("holds", st.just(1), lambda x: expect(x == 1, "1", x))
    fails = Property("fails", st.just(1), lambda x: expect(x == 2, "2", x))
    Checkpoint("04", 2, "f", [holds]).run()
    with pytest.raises(CheckpointFailed):
        Checkpoint("04", 3, "g", [fails]).run()
    record_checkpoint("05", 1, passed=True)
    progress = ToolOutputStore(db).checkpoint_progress()
    assert set(progress) == {"ann"} and progress["ann"]["passed"] == ["04.2", "05.1"]
    assert progress["ann"]["runs"] == 3


def test_a_store_that_cannot_be_written_never_stops_a_checkpoint(tmp_path, monkeypatch) -> None:
    from helpers.course import room

    monkeypatch.setenv("WORKBOOK_DB_URL", "postgresql+psycopg://nobody@127.0.0.1:1/none")
    monkeypatch.setattr(room, "_stores", {})
    monkeypatch.setattr(room, "_warned", False)
    with pytest.warns(UserWarning, match="not recorded"):
        record_checkpoint("04", 1, passed=True)


def _as(url: str):
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    return create_engine(url, poolclass=NullPool)


def _two_attendees(first: str, second: str) -> tuple[str, str, dict[str, str]]:
    """Two new attendees named after ``first`` and ``second``, each with one passed checkpoint
    (04.1) and one thread: their names and ``{name: store URL}``."""
    names = tuple(f"{prefix}-{uuid.uuid4().hex[:6]}" for prefix in (first, second))
    urls = {n: provision_attendee(ROOM, n) for n in names}
    for name, url in urls.items():
        store = ToolOutputStore(url)
        store.log_checkpoint(name, "04", 1, passed=True)
        store.ensure_thread("t")
        store.close()
    return names[0], names[1], urls


@needs_pg
def test_postgresql_attendees_are_kept_apart_by_postgresql() -> None:
    from sqlalchemy import text
    from sqlalchemy.exc import ProgrammingError

    names = [f"ann-{uuid.uuid4().hex[:6]}", f"bob-{uuid.uuid4().hex[:6]}"]
    urls = {n: provision_attendee(ROOM, n) for n in names}
    stores = {n: ToolOutputStore(u) for n, u in urls.items()}
    rows = {n: s.log_tool("demo", "call_1", "x", {}, f"{n}'s output") for n, s in stores.items()}
    for name, store in stores.items():
        store.ensure_thread("demo")
        other = next(n for n in names if n != name)
        assert store.get("demo", "call_1", with_content=True).content == f"{name}'s output"
        assert store.get_by_ref(rows[other].ref_id) is None  # another's reference: unknown
        assert store.list_threads() == ["demo"] and store.count() == 1
        store.log_checkpoint(name, "04", 1, passed=True)
        engine = _as(urls[name])
        for sql in (
            f'SELECT content FROM "{attendee_schema(other)}".tool_outputs',
            f'DROP SCHEMA "{attendee_schema(other)}" CASCADE',
            f'SET ROLE "{attendee_schema(other)}"',
        ):
            with (
                pytest.raises(ProgrammingError, match=r"permission denied|must be owner"),
                engine.begin() as db,
            ):
                db.execute(text(sql))
        engine.dispose()
    progress = room_progress(ROOM)
    for name in names:
        line = progress[attendee_schema(name)]
        assert (line.attendee, line.passed, line.threads, line.error) == (name, ["04.1"], 1, None)
    for store in stores.values():
        store.close()


@needs_pg
def test_postgresql_a_second_spawn_keeps_a_live_kernels_password() -> None:
    from sqlalchemy import text

    name = f"eve-{uuid.uuid4().hex[:6]}"
    first = provision_attendee(ROOM, name)
    store = ToolOutputStore(first)
    store.log_checkpoint(name, "02", 1, passed=True)
    assert provision_attendee(ROOM, name) == first  # named servers, a hook run again
    assert store.checkpoint_progress()[name]["passed"] == ["02.1"]  # its next connection works
    # a server restart (every connection of the role ended): the next call connects afresh
    with _as(ROOM).connect() as db:
        db.execute(
            text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = :r"),
            {"r": attendee_schema(name)},
        )
    assert store.count() == 0
    store.close()


@needs_pg
def test_postgresql_an_attendee_is_bounded() -> None:
    from sqlalchemy import text
    from sqlalchemy.exc import OperationalError

    from helpers.course.room import (
        ATTENDEE_CONNECTION_LIMIT,
        ATTENDEE_IDLE_IN_TRANSACTION_MS,
        ATTENDEE_STATEMENT_TIMEOUT_MS,
    )

    name = f"fay-{uuid.uuid4().hex[:6]}"
    url = provision_attendee(ROOM, name)
    role = attendee_schema(name)
    with _as(ROOM).connect() as db:
        limit, config = db.execute(
            text("SELECT rolconnlimit, rolconfig FROM pg_roles WHERE rolname = :r"), {"r": role}
        ).one()
    assert limit == ATTENDEE_CONNECTION_LIMIT
    assert f"statement_timeout={ATTENDEE_STATEMENT_TIMEOUT_MS}" in config
    assert f"idle_in_transaction_session_timeout={ATTENDEE_IDLE_IN_TRANSACTION_MS}" in config
    engine = _as(url)
    held = [engine.connect() for _ in range(ATTENDEE_CONNECTION_LIMIT)]
    with pytest.raises(OperationalError, match="too many connections for role"):
        engine.connect()
    for connection in held:
        connection.close()
    with engine.connect() as db:  # the role's settings hold in its sessions
        assert db.execute(text("SHOW statement_timeout")).scalar() == "30s"
    engine.dispose()


@needs_pg
def test_postgresql_the_instructors_view_runs_nothing_of_an_attendees() -> None:
    """Each route an attendee has to make the instructor's view run her code, or misreport the
    room, is refused on her own line; the function never runs (its sequence stays unused), and
    every other attendee's line is read."""
    from sqlalchemy import text

    honest, hostile, urls = _two_attendees("gus", "hal")
    schema = attendee_schema(hostile)
    routes = {
        "a view": (
            "ALTER TABLE checkpoint_results RENAME TO real_results",
            "CREATE VIEW checkpoint_results AS SELECT * FROM real_results WHERE spy() > 0",
        ),
        "a policy": (
            "ALTER TABLE checkpoint_results ENABLE ROW LEVEL SECURITY",
            "ALTER TABLE checkpoint_results FORCE ROW LEVEL SECURITY",
            "CREATE POLICY p ON checkpoint_results USING (spy() > 0)",
        ),
        "a type of her own": (
            "CREATE DOMAIN mine AS text",
            "ALTER TABLE checkpoint_results ALTER COLUMN notebook TYPE mine",
        ),
        "a slow view": (
            "ALTER TABLE threads RENAME TO real_threads",
            "CREATE VIEW threads AS SELECT real_threads.* FROM real_threads, pg_sleep(60) "
            "WHERE spy() > 0",
        ),
    }
    for route, statements in routes.items():
        engine = _as(urls[hostile])
        with engine.begin() as db:
            db.execute(text("DROP SCHEMA IF EXISTS scratch CASCADE"))
            db.execute(text("CREATE SEQUENCE IF NOT EXISTS ran"))
            db.execute(
                text(
                    "CREATE OR REPLACE FUNCTION spy() RETURNS int LANGUAGE sql AS "
                    "'SELECT nextval(''ran'')::int'"
                )
            )
            for sql in statements:
                db.execute(text(sql))
        progress = room_progress(ROOM)
        line = progress[schema]
        assert line.error, f"{route}: read as {line}"
        assert progress[attendee_schema(honest)].passed == ["04.1"], route
        with engine.connect() as db:
            assert db.execute(text("SELECT is_called FROM ran")).scalar() is False, route
        with engine.begin() as db:  # back to the store's own tables for the next route
            views = db.execute(
                text(
                    "SELECT relname FROM pg_class WHERE relkind = 'v' AND "
                    "relnamespace = current_schema()::regnamespace"
                )
            ).scalars()
            for view in list(views):
                db.execute(text(f'DROP VIEW "{view}"'))
            db.execute(text("DROP POLICY IF EXISTS p ON checkpoint_results"))
            db.execute(text("ALTER TABLE IF EXISTS checkpoint_results NO FORCE ROW LEVEL SECURITY"))
            db.execute(text("ALTER TABLE IF EXISTS checkpoint_results DISABLE ROW LEVEL SECURITY"))
            for old, new in (("real_results", "checkpoint_results"), ("real_threads", "threads")):
                db.execute(text(f"ALTER TABLE IF EXISTS {old} RENAME TO {new}"))
            db.execute(text("ALTER TABLE checkpoint_results ALTER COLUMN notebook TYPE text"))
            db.execute(text("DROP DOMAIN IF EXISTS mine"))
        engine.dispose()
    # rows she writes herself: another's name, a missing time, a pass without a TODO
    with _as(urls[hostile]).begin() as db:
        db.execute(text("ALTER TABLE checkpoint_results ALTER COLUMN created_at DROP NOT NULL"))
        db.execute(
            text(
                "INSERT INTO checkpoint_results (attendee, notebook, todo, passed, created_at) "
                "VALUES (:who, '07', 2, true, now()), (:me, '05', 1, true, NULL)"
            ),
            {"who": honest, "me": hostile},
        )
    progress = room_progress(ROOM)
    line = progress[schema]
    assert line.error is None and line.attendee == hostile
    assert line.passed == ["04.1", "05.1", "07.2"] and line.last is not None
    assert progress[attendee_schema(honest)].passed == ["04.1"]  # never another's runs
    assert [p.attendee for p in progress.values()].count(honest) == 1


@needs_pg
def test_postgresql_code_the_planner_would_run_is_never_planned() -> None:
    """A partial index's predicate or an index expression runs when a SELECT on the table is
    planned (an IMMUTABLE function of hers that is not: it resets the role and reads the
    room's passwords), and so may an extended statistics object: the view reads the catalogs
    and does not read such a table; her function never runs, and everyone else is read."""
    import select

    from sqlalchemy import text

    from helpers.course.room import libpq_url

    spy, honest, urls = _two_attendees("ivy", "jon")
    schema = attendee_schema(spy)
    with _as(urls[spy]).begin() as db:
        db.execute(
            text(
                "CREATE FUNCTION payload() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $f$ "
                "BEGIN RESET ROLE; PERFORM pg_notify('exfil', session_user || ':' || "
                "coalesce((SELECT string_agg(password, ',') FROM workbook_room.attendees), '')); "
                "RETURN true; EXCEPTION WHEN OTHERS THEN "
                "PERFORM pg_notify('exfil', 'denied:' || session_user); RETURN true; END $f$"
            )
        )
        db.execute(
            text(
                "CREATE FUNCTION looks_immutable() RETURNS boolean LANGUAGE plpgsql IMMUTABLE "
                f'AS $f$ BEGIN RETURN "{schema}".payload(); END $f$'
            )
        )
    routes = {
        "index with a predicate": (
            f'CREATE INDEX innocent ON checkpoint_results (id) WHERE "{schema}".looks_immutable()',
            "has an index on an expression or a predicate",
        ),
        "index on an expression": (
            f'CREATE INDEX innocent ON threads (("{schema}".looks_immutable()))',
            "has an index on an expression or a predicate",
        ),
        "extended statistics": (
            "CREATE STATISTICS innocent ON notebook, todo FROM checkpoint_results",
            "has extended statistics",
        ),
    }
    import psycopg

    listener = psycopg.connect(libpq_url(urls[spy]), autocommit=True)
    listener.execute("LISTEN exfil")

    def heard(seconds: float) -> list[str]:
        said, deadline = [], time.monotonic() + seconds
        while time.monotonic() < deadline:
            select.select([listener.fileno()], [], [], 0.2)
            said += [n.payload for n in listener.notifies(timeout=0.2, stop_after=10)]
        return said

    for route, (statement, said) in routes.items():
        with _as(urls[spy]).begin() as db:
            db.execute(text(statement))  # building the index runs it once, in her session
        heard(1.0)
        progress = room_progress(ROOM)
        assert said in (progress[schema].error or ""), (route, progress[schema])
        assert progress[attendee_schema(honest)].passed == ["04.1"], route
        assert heard(1.5) == [], route  # the view never planned it: not even as herself
        with _as(urls[spy]).begin() as db:
            db.execute(text("DROP INDEX IF EXISTS innocent"))
            db.execute(text("DROP STATISTICS IF EXISTS innocent"))
    listener.close()
    assert room_progress(ROOM)[schema].error is None  # the store's own tables again: read


@needs_pg
def test_postgresql_a_lock_she_holds_costs_her_line_not_the_view() -> None:
    """A transaction left open with her table locked (a hostile ``LOCK TABLE``, or a kernel
    stopped mid-migration): her line says so after the lock timeout, the others are read."""
    from helpers.course.room import libpq_url
    from helpers.course.room_reader import PROGRESS_LOCK_TIMEOUT_MS

    locker, honest, urls = _two_attendees("kim", "lou")
    import psycopg

    holder = psycopg.connect(libpq_url(urls[locker]))
    holder.execute("LOCK TABLE checkpoint_results IN ACCESS EXCLUSIVE MODE")
    try:
        progress = room_progress(ROOM)
    finally:
        holder.close()
    line = progress[attendee_schema(locker)]
    assert "stayed locked" in (line.error or "") and line.passed == [], line
    assert f"for {PROGRESS_LOCK_TIMEOUT_MS / 1000:g} s" in line.error
    assert progress[attendee_schema(honest)].passed == ["04.1"]
    assert room_progress(ROOM)[attendee_schema(locker)].error is None  # let go: read again


@needs_pg
def test_postgresql_an_attendees_huge_message_costs_only_her_line() -> None:
    """Her index predicate would raise an error of 700 MB when the view (a read-only session)
    planned its read: the table is not read (the reader process, capped at 512 MiB, would give
    up her line otherwise), the instructor's process does not grow, and the rest of the room is
    read as usual."""
    import resource

    from sqlalchemy import text

    from helpers.course.room_reader import READER_MEMORY_BYTES

    loud, honest, urls = _two_attendees("kai", "lea")
    schema = attendee_schema(loud)
    size = 700_000_000
    assert size > READER_MEMORY_BYTES
    with _as(urls[loud]).begin() as db:
        db.execute(
            text(
                "CREATE FUNCTION loud() RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $f$ "
                "BEGIN IF current_setting('default_transaction_read_only') = 'on' THEN "
                f"RAISE EXCEPTION '%', repeat('x', {size}); END IF; RETURN true; END $f$"
            )
        )
        db.execute(text(f'CREATE INDEX loud ON checkpoint_results (id) WHERE "{schema}".loud()'))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    progress = room_progress(ROOM)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    line = progress[schema]
    assert line.error and "not read" in line.error and line.passed == [], line
    assert len(line.error) <= 300
    assert progress[attendee_schema(honest)].passed == ["04.1"]
    assert grown < 100 * 2**20, f"the instructor's process grew {grown} bytes"


@needs_pg
def test_postgresql_the_room_is_read_without_a_change() -> None:
    from sqlalchemy import text

    odd = [f"attendee_list_{uuid.uuid4().hex[:6]}", f"attendee_y z{uuid.uuid4().hex[:4]}"]
    database = ROOM.rsplit("/", 1)[1]  # the superuser makes schemas no attendee could
    engine = _as(PG.rsplit("/", 1)[0] + "/" + database)
    with engine.begin() as db:
        for schema in odd:
            db.execute(text(f'CREATE SCHEMA "{schema}"'))
    progress = room_progress(ROOM)
    with engine.connect() as db:
        made = db.execute(
            text("SELECT count(*) FROM information_schema.tables WHERE table_schema = ANY(:s)"),
            {"s": odd},
        ).scalar()
    engine.dispose()
    assert made == 0 and not set(odd) & set(progress)


@needs_pg
def test_postgresql_room_check_names_each_setting_to_fix(tmp_path) -> None:
    from helpers.course.room import connection_budget
    from helpers.course.room_check import check_room

    hook = ROOT / "deploy" / "jupyterhub_config.d" / "workbook.py"
    found = {f.name: f for f in check_room(ROOM, 30, hub_config=hook)}
    assert found["version"].ok and found["tcp"].ok and found["hook"].ok
    assert found["password_encryption"].ok and found["public_schema"].ok
    # tests/with_postgres.sh sets what room check asks of thirty; the socket is closed to others
    assert found["max_connections"].ok, found["max_connections"].line
    assert found["unix_socket"].ok, found["unix_socket"].line
    # no firewall here: the probe holds more than an attendee may, and the fix is named
    if os.geteuid() == 0 or os.geteuid() >= 1000:
        assert not found["firewall"].ok and "workbook room firewall" in found["firewall"].line
    assert found["homes"].ok, found["homes"].line  # no attendee of this room has an account
    # a fresh cluster lets PUBLIC connect to postgres and template1: named, with the fix
    assert not found["other_databases"].ok
    assert 'REVOKE CONNECT ON DATABASE "postgres" FROM PUBLIC' in found["other_databases"].line
    assert not found["advisory_locks"].ok and "REVOKE EXECUTE" in found["advisory_locks"].line
    assert found["admin"].ok == (ROOM != PG), found["admin"].line
    larger = {f.name: f for f in check_room(ROOM, 40, hub_config=tmp_path / "none.py")}
    assert f"max_connections = {connection_budget(40) + 3}" in larger["max_connections"].line
    assert not larger["hook"].ok and "copy deploy/jupyterhub_config.d/workbook.py" in (
        larger["hook"].line
    )
    superuser = {f.name: f for f in check_room(PG, 1, hub_config=hook)}
    assert not superuser["admin"].ok and "superuser" in superuser["admin"].line


@needs_pg
def test_postgresql_the_room_commands_and_nothing_yet() -> None:
    """``room url`` and the hook make an attendee; one whose store holds no checkpoint run yet
    (no table, then a table with no row) is "nothing yet", never an error, in the table and in
    ``--json``."""
    import asyncio

    env = {**os.environ, "WORKBOOK_ROOM_URL": ROOM, "NO_COLOR": "1", "COLUMNS": "200"}
    carol = f"carol-{uuid.uuid4().hex[:6]}"
    url = subprocess.run(
        [sys.executable, "-m", "helpers.cli", "room", "url", carol],
        capture_output=True, text=True, env=env, timeout=HANG_GUARD_S,
    )  # fmt: skip
    assert url.returncode == 0 and attendee_schema(carol) in url.stdout, url.stderr
    hub = _hub_config()
    dave = f"dave-{uuid.uuid4().hex[:6]}"
    given = asyncio.run(
        hub.attendee_environment(
            dave, room_url=ROOM, cli=str(Path(sys.executable).parent / "workbook")
        )
    )
    assert ToolOutputStore(given["WORKBOOK_DB_URL"]).count() == 0  # a fresh store of dave's own
    checked = subprocess.run(
        [sys.executable, "-m", "helpers.cli", "room", "check", "--json"],
        capture_output=True, text=True, env=env, timeout=HANG_GUARD_S,
    )  # fmt: skip
    assert checked.returncode == 1  # the fresh cluster's other databases
    assert {f["check"] for f in json.loads(checked.stdout)["findings"]} >= {"other_databases"}
    listed = subprocess.run(
        [sys.executable, "-m", "helpers.cli", "room", "progress", "--json"],
        capture_output=True, text=True, env=env, timeout=HANG_GUARD_S,
    )  # fmt: skip
    rows = {r["attendee"]: r for r in json.loads(listed.stdout)["attendees"]}
    for name in (carol, dave):  # carol: no table yet; dave: the store's tables, no row
        assert (rows[name]["error"], rows[name]["passed"], rows[name]["state"]) == (
            None, [], "nothing yet",
        ), rows[name]  # fmt: skip
    shown = subprocess.run(
        [sys.executable, "-m", "helpers.cli", "room", "progress"],
        capture_output=True, text=True, env=env, timeout=HANG_GUARD_S,
    )  # fmt: skip
    line = next(text for text in shown.stdout.splitlines() if carol in text)
    assert "nothing passed yet" in line and "not read" not in line, shown.stdout


@needs_pg
def test_postgresql_the_view_reads_many_attendees_with_a_few_readers(monkeypatch) -> None:
    """The view reads every attendee with ``READERS`` processes in all (each reads one after
    another), and a reader that dies mid-attendee costs her line only: a new one reads the
    rest."""
    from helpers.course import room_reader

    # the victim's schema sorts first, so attendees are left for a new reader to read after her
    names = [f"many-{uuid.uuid4().hex[:6]}" for _ in range(5)] + [f"aaa-{uuid.uuid4().hex[:6]}"]
    for name in names:
        store = ToolOutputStore(provision_attendee(ROOM, name))
        store.log_checkpoint(name, "02", 1, passed=True)
        store.close()
    started: list[int] = []
    real = room_reader.ReaderProcess.__init__

    def counted(self) -> None:
        real(self)
        started.append(self.process.pid)

    monkeypatch.setattr(room_reader.ReaderProcess, "__init__", counted)
    progress = room_progress(ROOM)
    assert all(progress[attendee_schema(n)].passed == ["02.1"] for n in names)
    assert len(started) == room_reader.READERS
    # a reader killed while it reads one attendee: that line, and a new reader for the rest
    victim = attendee_schema(names[-1])
    ask = room_reader.ReaderProcess.ask

    def dies_on_the_victim(self, request) -> None:
        ask(self, request)
        if request["schema"] == victim:
            self.process.kill()

    monkeypatch.setattr(room_reader.ReaderProcess, "ask", dies_on_the_victim)
    started.clear()
    progress = room_progress(ROOM)
    assert "the reader stopped" in (progress[victim].error or ""), progress[victim]
    assert all(progress[attendee_schema(n)].passed == ["02.1"] for n in names[:-1])
    assert len(started) == room_reader.READERS + 1


def test_the_deploy_guide_states_the_rooms_own_settings() -> None:
    """deploy/README.md's connection budget, caps, timeouts and the hub's settings are the
    modules' constants."""
    from helpers.course.room import (
        ATTENDEE_CONNECTION_LIMIT,
        ATTENDEE_IDLE_IN_TRANSACTION_MS,
        ATTENDEE_SOCKET_CAP,
        ATTENDEE_STATEMENT_TIMEOUT_MS,
        HOOK_CONNECTIONS,
        PROGRESS_CONNECTIONS,
        ROOM_ADMIN_CONNECTIONS,
        connection_budget,
    )
    from helpers.course.room_firewall import CONNTRACK_SYSCTL, CONNTRACK_SYSCTL_FILE
    from helpers.course.room_reader import (
        PROGRESS_DEADLINE_S,
        PROGRESS_LOCK_TIMEOUT_MS,
        PROGRESS_STATEMENT_TIMEOUT_MS,
        READER_MEMORY_BYTES,
        READERS,
    )

    hub = _hub_config()
    guide = " ".join((ROOT / "deploy" / "README.md").read_text(encoding="utf-8").split())
    reserved = 3  # PostgreSQL's default superuser_reserved_connections
    for phrase in (
        f"resets the one past **{ATTENDEE_SOCKET_CAP} at once**",
        f"each attendee's role may hold **{ATTENDEE_CONNECTION_LIMIT} connections at once**",
        f"An attendee holds at most the cap ({ATTENDEE_SOCKET_CAP})",
        f"The room needs {ROOM_ADMIN_CONNECTIONS} more",
        f"runs at most {HOOK_CONNECTIONS} `room url` commands at once",
        f"the instructor's view holds at most {PROGRESS_CONNECTIONS} (its {READERS} reader",
        f"{ATTENDEE_SOCKET_CAP}·*N* + {ROOM_ADMIN_CONNECTIONS} + PostgreSQL's "
        f"`superuser_reserved_connections` ({reserved})",
        f"**thirty attendees need {connection_budget(30) + reserved}**",
        f"forty need {connection_budget(40) + reserved}",
        f"ALTER SYSTEM SET max_connections = {connection_budget(30) + reserved}",
        f"`statement_timeout = {ATTENDEE_STATEMENT_TIMEOUT_MS // 1000}s`",
        f"`idle_in_transaction_session_timeout = {ATTENDEE_IDLE_IN_TRANSACTION_MS // 1000}s`",
        f"by one of {READERS} reader processes",
        f"a {PROGRESS_STATEMENT_TIMEOUT_MS // 1000} s statement timeout",
        f"within a {PROGRESS_LOCK_TIMEOUT_MS // 1000} s lock timeout",
        f"printf '{CONNTRACK_SYSCTL}' \\ > {CONNTRACK_SYSCTL_FILE}".replace("\n", "\\n"),
        f"sysctl -p {CONNTRACK_SYSCTL_FILE}",
        f"a deadline of {PROGRESS_DEADLINE_S:g} s",
        f"each process's memory capped ({READER_MEMORY_BYTES // 2**20} MiB)",
        f"at most {hub.ROOM_URL_AT_ONCE} at once",
        f"at most **{hub.CONCURRENT_SPAWN_LIMIT} spawns at once**",
        f"up to {hub.SERVER_START_TIMEOUT_S} s for a server to start and "
        f"{hub.SERVER_HTTP_TIMEOUT_S} s for it to answer",
        "`--KernelManager.transport=ipc`",
        f"the folder `~/{hub.RUNTIME_FOLDER}`",
        "`unix_socket_permissions = 0770`",
    ):
        assert phrase in guide, phrase
    hook = (ROOT / "deploy" / "jupyterhub_config.d" / "workbook.py").read_text(encoding="utf-8")
    assert '"--KernelManager.transport=ipc"' in hook
