"""A room on one PostgreSQL database: each attendee a role owning a schema of its own (the same
thread id is two threads; another attendee's tables cannot even be read), every checkpoint run
recorded, the instructor's read-only view of the room, the hub's configuration, and a simulated
room of attendees at once. The PostgreSQL tests run under ``make test-pg``."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
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
from helpers.tooling.store import ToolOutputStore, ensure_own_schema

ROOT = Path(__file__).resolve().parent.parent
PG = os.environ.get("WORKBOOK_TEST_PG_URL")
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


def test_the_hub_gives_each_server_what_workbook_room_url_prints(tmp_path, monkeypatch) -> None:
    hub = _hub_config()
    fake = tmp_path / "workbook"
    fake.write_text(
        '#!/bin/sh\necho "postgresql+psycopg://x:pw@h/db?name=$3&room=$WORKBOOK_ROOM_URL"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("WORKBOOK_ROOM_URL", "postgresql://admin@h/db")

    class Spawner:
        environment: typing.ClassVar[dict] = {}

        class user:
            name = "Ann Lee"

    monkeypatch.setattr(
        hub, "attendee_environment", lambda n: hub.__dict__["_real"](n, cli=str(fake))
    )
    hub._real = _hub_config().attendee_environment
    hub.pre_spawn_hook(Spawner)
    assert Spawner.environment["WORKBOOK_DB_URL"].endswith(
        "name=Ann Lee&room=postgresql://admin@h/db"
    )
    assert Spawner.environment["WORKBOOK_PROFILE"] == "offline"
    fake.write_text("#!/bin/sh\necho refused >&2\nexit 2\n")
    with pytest.raises(RuntimeError, match="refused"):
        hub._real("ann", cli=str(fake))


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


@needs_pg
def test_postgresql_attendees_are_kept_apart_by_postgresql() -> None:
    from sqlalchemy import create_engine, text
    from sqlalchemy.exc import ProgrammingError

    names = [f"ann-{uuid.uuid4().hex[:6]}", f"bob-{uuid.uuid4().hex[:6]}"]
    urls = {n: provision_attendee(PG, n) for n in names}
    stores = {n: ToolOutputStore(u) for n, u in urls.items()}
    rows = {n: s.log_tool("demo", "call_1", "x", {}, f"{n}'s output") for n, s in stores.items()}
    for name, store in stores.items():
        store.ensure_thread("demo")
        other = next(n for n in names if n != name)
        assert store.get("demo", "call_1", with_content=True).content == f"{name}'s output"
        assert store.get_by_ref(rows[other].ref_id) is None  # another's reference: unknown
        assert store.list_threads() == ["demo"] and store.count() == 1
        store.log_checkpoint(name, "04", 1, passed=True)
        engine = create_engine(urls[name])
        for sql in (
            f'SELECT content FROM "{attendee_schema(other)}".tool_outputs',
            f'DROP SCHEMA "{attendee_schema(other)}" CASCADE',
        ):
            with (
                pytest.raises(ProgrammingError, match=r"permission denied|must be owner"),
                engine.begin() as db,
            ):
                db.execute(text(sql))
        engine.dispose()
    again = provision_attendee(PG, names[0])  # a new spawn: a new password, the same store
    assert again != urls[names[0]] and ToolOutputStore(again).count() == 1
    progress = room_progress(PG)
    for name in names:
        room = progress[attendee_schema(name)]
        assert set(room["attendees"]) == {name} and room["threads"] == 1
    for store in stores.values():
        store.close()


@needs_pg
def test_postgresql_the_room_is_read_without_a_change() -> None:
    from sqlalchemy import create_engine, text

    odd = [f"attendee_list_{uuid.uuid4().hex[:6]}", f"attendee_y z{uuid.uuid4().hex[:4]}"]
    engine = create_engine(PG)
    with engine.begin() as db:
        for schema in odd:
            db.execute(text(f'CREATE SCHEMA "{schema}"'))
    progress = room_progress(PG)
    with engine.connect() as db:
        made = db.execute(
            text("SELECT count(*) FROM information_schema.tables WHERE table_schema = ANY(:s)"),
            {"s": odd},
        ).scalar()
    engine.dispose()
    assert made == 0 and not set(odd) & set(progress)


@needs_pg
def test_postgresql_the_room_commands_and_a_simulated_room() -> None:
    env = {**os.environ, "WORKBOOK_ROOM_URL": PG, "NO_COLOR": "1"}
    url = subprocess.run(
        [sys.executable, "-m", "helpers.course.cli", "room", "url", "carol"],
        capture_output=True, text=True, env=env, timeout=HANG_GUARD_S,
    )  # fmt: skip
    assert url.returncode == 0 and attendee_schema("carol") in url.stdout, url.stderr
    hub = _hub_config()
    given = hub.attendee_environment(
        "dave", room_url=PG, cli=str(Path(sys.executable).parent / "workbook")
    )
    assert ToolOutputStore(given["WORKBOOK_DB_URL"]).count() == 0  # a fresh store of dave's own
    from helpers.course.room_simulation import simulate_room

    result = simulate_room(PG, attendees=2, notebooks=("03",))
    assert result["cross_talk"] == [], result["cross_talk"]
    assert all(a["total_s"] > 0 for a in result["attendees"].values())
    listed = subprocess.run(
        [sys.executable, "-m", "helpers.course.cli", "room", "progress", "--json"],
        capture_output=True, text=True, env=env, timeout=HANG_GUARD_S,
    )  # fmt: skip
    rows = json.loads(listed.stdout)["attendees"]
    for name in result["attendees"]:
        row = next(r for r in rows if r["attendee"] == name)
        assert row["passed"] == ["03.1", "03.2"] and row["threads"] > 0
