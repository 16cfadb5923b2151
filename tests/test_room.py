"""A room on one PostgreSQL database: each attendee's store in a schema of its own (the same
thread id is two threads; one attendee's reference means nothing in another's store), every
checkpoint run recorded, the instructor's view of the room, the hub's configuration, and a
simulated room of attendees at once. The PostgreSQL tests run under ``make test-pg``."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from hang import HANG_GUARD_S
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.course.room import (
    MAX_IDENTIFIER_BYTES,
    SCHEMA_PREFIX,
    attendee_db_url,
    attendee_schema,
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
def test_an_attendees_schema_is_a_safe_identifier_and_the_hub_agrees(name: str) -> None:
    schema = attendee_schema(name)
    assert schema.startswith(SCHEMA_PREFIX) and re.fullmatch(r"[a-z_][a-z0-9_]*", schema)
    assert len(schema.encode()) <= MAX_IDENTIFIER_BYTES
    assert _hub_config().attendee_schema(name) == schema  # written out twice, equal


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.text(min_size=1, max_size=40), st.text(min_size=1, max_size=40))
def test_two_names_never_share_a_schema(first: str, second: str) -> None:
    if first != second:
        assert attendee_schema(first) != attendee_schema(second)


def test_the_hub_gives_each_attendee_their_own_url(monkeypatch) -> None:
    hub = _hub_config()
    room = "postgresql+psycopg://room@db.example:5432/workbook?sslmode=require"
    monkeypatch.setenv("WORKBOOK_ROOM_URL", room)

    class Spawner:
        class user:
            name = "Ann.Lee"

    given_url = hub.workbook_environment(Spawner)
    assert given_url.replace("%3D", "=").endswith(f"search_path={attendee_schema('Ann.Lee')}")
    assert "sslmode=require" in given_url
    from sqlalchemy.engine import make_url

    assert make_url(given_url).query == make_url(attendee_db_url(room, "Ann.Lee")).query
    with pytest.raises(ValueError, match="PostgreSQL"):
        attendee_db_url("sqlite:///x.sqlite", "ann")
    with pytest.raises(ValueError, match="name"):
        attendee_schema("")


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
def test_postgresql_attendees_are_kept_apart_by_schema() -> None:
    names = [f"ann-{uuid.uuid4().hex[:6]}", f"bob-{uuid.uuid4().hex[:6]}"]
    stores = {n: ToolOutputStore(attendee_db_url(PG, n)) for n in names}
    rows = {n: s.log_tool("demo", "call_1", "x", {}, f"{n}'s output") for n, s in stores.items()}
    for store in stores.values():
        store.ensure_thread("demo")
    for name, store in stores.items():
        other = next(n for n in names if n != name)
        assert store.get("demo", "call_1", with_content=True).content == f"{name}'s output"
        assert store.get_by_ref(rows[other].ref_id) is None  # another's reference: unknown
        assert store.list_threads() == ["demo"] and store.count() == 1
        store.log_checkpoint(name, "04", 1, passed=True)
    progress = room_progress(PG)
    for name in names:
        room = progress[attendee_schema(name)]
        assert set(room["attendees"]) == {name} and room["threads"] == 1
    for store in stores.values():
        store.close()


@needs_pg
def test_postgresql_the_room_commands_and_a_simulated_room() -> None:
    env = {**os.environ, "WORKBOOK_ROOM_URL": PG, "NO_COLOR": "1"}
    url = subprocess.run(
        [sys.executable, "-m", "helpers.course.cli", "room", "url", "carol"],
        capture_output=True, text=True, env=env, timeout=HANG_GUARD_S,
    )  # fmt: skip
    assert url.returncode == 0 and "search_path" in url.stdout.replace("%3D", "=")
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
