"""The tool-output store on a real SQLite file."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hang import HANG_GUARD_S
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.store.quotas import StoreQuotaExceeded
from helpers.store.tool_outputs import ToolOutputStore
from helpers.store.writing import DuplicateToolCallError


def test_log_and_read_back_the_whole_row(store: ToolOutputStore) -> None:
    output = "résumé 🧪 " * 100
    row = store.log_tool("t1", "call_1", "yt_transcribe", {"video_id": "123"}, output)
    got = store.get("t1", "call_1", with_content=True)
    assert got is not None
    assert (got.tool_name, got.kind, got.content) == ("yt_transcribe", "tool_output", output)
    assert json.loads(got.tool_args) == {"video_id": "123"}
    assert got.n_chars == len(output)
    assert got.sha256 == hashlib.sha256(output.encode()).hexdigest()
    assert got.ref_id == row.ref_id and len(row.ref_id) >= 16
    assert got.created_at.tzinfo is not None


def test_tool_call_id_is_unique_per_thread_only(store: ToolOutputStore) -> None:
    store.log_tool("t1", "call_1", "x", {}, "a")
    store.log_tool("t2", "call_1", "x", {}, "b")  # another thread may reuse the id
    with pytest.raises(DuplicateToolCallError, match="already logged"):
        store.log_tool("t1", "call_1", "x", {}, "c")
    assert len(store.list_by_call_id("call_1")) == 2


def test_rows_survive_a_restart(db_url: str) -> None:
    first = ToolOutputStore(db_url)
    row = first.log_tool("t1", "call_9", "get_page", '{"url": "u"}', "<html>" * 50)
    first.close()
    again = ToolOutputStore(db_url)
    assert again.get_by_ref(row.ref_id).tool_call_id == "call_9"
    assert again.read_all(row.id) == "<html>" * 50


def test_sqlite_runs_in_wal_mode(store: ToolOutputStore, db_url: str) -> None:
    store.log_tool("t", "c", "x", {}, "v")
    path = db_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_read_range_is_in_characters_and_cut_at_the_end(store: ToolOutputStore) -> None:
    value = "αβγδε" + "x" * 10 + "🧪end"
    row = store.log_tool("t", "c", "x", {}, value)
    assert store.read_range(row.id, 0, 5) == "αβγδε"
    assert store.read_range(row.id, len(value) - 4, 100) == "🧪end"
    assert store.read_range(row.id, 1000, 5) == ""
    assert store.read_range(row.id, 3, 0) == ""
    with pytest.raises(ValueError):
        store.read_range(row.id, -1, 5)
    with pytest.raises(KeyError):
        store.read_range(row.id + 999, 0, 5)


def test_slice_of_a_large_value(store: ToolOutputStore) -> None:
    big = "".join(f"{i:08d}\n" for i in range(1_000_000))  # 9,000,000 characters
    row = store.log_tool("t", "big", "x", {}, big)
    assert store.read_range(row.id, 9 * 123_456, 9) == "00123456\n"
    assert store.read_range(row.id, len(big) - 9, 9) == "00999999\n"
    assert store.get("t", "big").n_chars == 9_000_000


def test_prune_by_thread_and_by_age(store: ToolOutputStore) -> None:
    for i in range(3):
        store.log_tool("keep", f"k{i}", "x", {}, "v")
        store.log_tool("drop", f"d{i}", "x", {}, "v")
    assert store.prune(thread_id="drop") == 3
    assert store.count("drop") == 0 and store.count("keep") == 3
    assert store.prune(older_than=timedelta(hours=1)) == 0  # all are fresh
    assert store.prune(older_than=datetime.now(UTC) + timedelta(seconds=1)) == 3
    assert store.count() == 0
    with pytest.raises(ValueError, match="older_than and/or thread_id"):
        store.prune()


@pytest.mark.skipif(not os.environ.get("WORKBOOK_TEST_PG_URL"), reason="set WORKBOOK_TEST_PG_URL")
def test_the_same_store_on_postgresql() -> None:
    """Any SQLAlchemy URL works; run with WORKBOOK_TEST_PG_URL=postgresql+psycopg://… ."""
    pg = ToolOutputStore(os.environ["WORKBOOK_TEST_PG_URL"])
    thread = f"pg-{uuid.uuid4().hex}"
    value = "αβγ🧪" + "x" * 100_000 + "END"
    row = pg.log_tool(thread, "c1", "x", {"a": 1}, value)
    assert pg.read_range(row.id, 0, 4) == "αβγ🧪"
    assert pg.read_range(row.id, len(value) - 3, 10) == "END"
    assert pg.get(thread, "c1", with_content=True).content == value
    with pytest.raises(DuplicateToolCallError):
        pg.log_tool(thread, "c1", "x", {}, "again")
    twin = pg.log_tool(thread + "-twin", "c1", "x", {}, value)  # the same chunks, held once
    assert pg.prune(thread_id=thread) == 1
    assert pg.read_all(twin.id) == value and pg.read_range(twin.id, 50_000, 5) == "xxxxx"
    assert pg.prune(thread_id=thread + "-twin") == 1
    long_thread = thread + "-" + "é" * 5_000  # ids of any length
    pg.log_tool(long_thread, "c1", "x", {}, "v", provider_call_id="0" * 300)
    pg.append_message(long_thread, {"role": "user", "content": "hi\u0000there"})
    assert pg.get(long_thread, "c1").provider_call_id == "0" * 300
    assert pg.thread_messages(long_thread) == [{"role": "user", "content": "hi\u0000there"}]
    assert pg.prune(thread_id=long_thread) == 1 and not pg.thread_exists(long_thread)
    # the quota counts bytes of arguments and output (octet_length on PostgreSQL)
    pg.log_tool(thread, "q1", "x", '{"t": "é"}', "ok", max_thread_bytes=15)  # 11 + 2 bytes
    assert pg.thread_bytes(thread) == 13
    with pytest.raises(StoreQuotaExceeded):
        pg.log_tool(thread, "q2", "x", "{}", "ok", max_thread_bytes=15)  # 4 more
    assert pg.prune(thread_id=thread) == 1
    pg.close()


@pytest.mark.skipif(not os.environ.get("WORKBOOK_TEST_PG_URL"), reason="set WORKBOOK_TEST_PG_URL")
def test_a_postgresql_table_from_the_first_schema_is_migrated() -> None:
    from sqlalchemy import create_engine, text

    url = os.environ["WORKBOOK_TEST_PG_URL"]
    schema = f"old_{uuid.uuid4().hex[:8]}"
    engine = create_engine(url)
    with engine.begin() as db:
        db.execute(text(f"CREATE SCHEMA {schema}"))
        db.execute(
            text(
                f"CREATE TABLE {schema}.tool_outputs (id SERIAL PRIMARY KEY, "
                "ref_id VARCHAR(64) UNIQUE, thread_id VARCHAR(128), tool_call_id VARCHAR(128), "
                "tool_name VARCHAR(128), tool_args TEXT, content TEXT NOT NULL, n_chars INTEGER, "
                "sha256 VARCHAR(64), kind VARCHAR(32), created_at TIMESTAMPTZ, "
                "CONSTRAINT uq_thread_call UNIQUE (thread_id, tool_call_id))"
            )
        )
        db.execute(
            text(
                f"INSERT INTO {schema}.tool_outputs (ref_id, thread_id, tool_call_id, tool_name, "
                "tool_args, content, n_chars, sha256, kind, created_at) VALUES ('oldrefoldref1234', "
                "'t', 'c0', 'x', '{}', 'old value', 9, 'h', 'tool_output', now())"
            )
        )
    try:
        sep = "&" if "?" in url else "?"
        store = ToolOutputStore(f"{url}{sep}options=-csearch_path%3D{schema}")
        assert store.migrated == "upgraded from 0001"  # through Alembic
        assert store.get("t", "c0", with_content=True).content == "old value"
        store.log_tool("t" * 3_000, "c1", "x", {}, "v")  # a long thread id fits now
        assert store.count("t" * 3_000) == 1
        store.close()
    finally:
        with engine.begin() as db:
            db.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        engine.dispose()


def test_long_values_are_chunked_and_sliced_across_boundaries(store: ToolOutputStore) -> None:
    from helpers.store.schema import CHUNK_CHARS

    unit = "ab\x00🧪é\r\n"
    value = (unit * (CHUNK_CHARS * 7 // 2 // len(unit) + 1))[: CHUNK_CHARS * 7 // 2]
    row = store.log_tool("t", "chunky", "x", {}, value)
    with sqlite3.connect(store.url.removeprefix("sqlite:///")) as db:
        n_chunks = db.execute(
            "SELECT n_chunks FROM tool_outputs WHERE id = ?", (row.id,)
        ).fetchone()[0]
        assert n_chunks == 4
        assert (
            db.execute(
                "SELECT count(*) FROM tool_output_chunks WHERE output_id = ?", (row.id,)
            ).fetchone()[0]
            == 4
        )
    assert store.read_all(row.id) == value
    assert store.get("t", "chunky", with_content=True).content == value
    for start in (
        0,
        1,
        CHUNK_CHARS - 3,
        CHUNK_CHARS,
        2 * CHUNK_CHARS - 1,
        len(value) - 5,
        len(value),
    ):
        for length in (0, 1, 7, CHUNK_CHARS + 10, 3 * CHUNK_CHARS):
            assert store.read_range(row.id, start, length) == value[start : start + length], (
                start,
                length,
            )
    assert store.prune(thread_id="t") == 1
    with sqlite3.connect(store.url.removeprefix("sqlite:///")) as db:
        assert db.execute("SELECT count(*) FROM tool_output_chunks").fetchone()[0] == 0


def _chunk_contents(store: ToolOutputStore) -> int:
    with sqlite3.connect(store.url.removeprefix("sqlite:///")) as db:
        return db.execute("SELECT count(*) FROM chunk_contents").fetchone()[0]


def _distinct_chunks(outputs) -> int:
    from helpers.store.schema import CHUNK_CHARS

    return len(
        {
            text[i : i + CHUNK_CHARS]
            for text in outputs
            if len(text) > CHUNK_CHARS
            for i in range(0, len(text), CHUNK_CHARS)
        }
    )


#: Long outputs that share chunks: a page, the same page again, a page that ends otherwise.
_PAGE = "".join(chr(0x4E00 + (i * 7919) % 20_000) for i in range(3 * 16_384 + 100))
_PAGES = (_PAGE, _PAGE[:-50] + "x" * 50, "é" * 40_000, "short")


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    picks=st.lists(st.tuples(st.sampled_from(_PAGES), st.sampled_from("abc")), max_size=6),
    pruned=st.sets(st.sampled_from("abc")),
)
def test_each_distinct_chunk_is_stored_once_and_pruning_keeps_what_another_output_holds(
    tmp_path_factory, picks, pruned
) -> None:
    """Outputs logged in threads a, b, c, many of them alike: each reads back whole and in
    slices, the store holds each distinct chunk once, and after pruning some threads the rest
    still read back and the store holds exactly the chunks they hold."""
    store = ToolOutputStore(f"sqlite:///{tmp_path_factory.mktemp('s') / 'store.sqlite'}")
    try:
        rows = [
            (thread, store.log_tool(thread, f"c{n}", "get_page", {}, text).id, text)
            for n, (text, thread) in enumerate(picks)
        ]
        assert _chunk_contents(store) == _distinct_chunks(text for _, _, text in rows)
        for thread in pruned:
            store.prune(thread_id=thread)
        kept = [(row_id, text) for thread, row_id, text in rows if thread not in pruned]
        for row_id, text in kept:
            assert store.read_all(row_id) == text
            assert store.read_range(row_id, 16_380, 10) == text[16_380:16_390]
        assert _chunk_contents(store) == _distinct_chunks(text for _, text in kept)
    finally:
        store.close()


def test_a_store_at_0004_has_its_chunks_kept_once_by_the_upgrade_and_back_by_the_downgrade(
    tmp_path,
) -> None:
    """Revision 0005 on a store written by 0004 (each chunk's characters in its own row): every
    output reads back the same, each distinct chunk is held once; the downgrade puts each
    chunk's characters back in its row."""
    from alembic import command
    from sqlalchemy import create_engine

    from helpers.store.migrations import alembic_config
    from helpers.store.schema import CHUNK_CHARS

    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    engine = create_engine(url)
    with engine.begin() as connection:
        command.upgrade(alembic_config(connection), "0004")
    outputs = [_PAGE, _PAGE, _PAGES[1], _PAGES[2]]
    with sqlite3.connect(tmp_path / "old.sqlite") as db:
        for n, text in enumerate(outputs, start=1):
            pieces = [text[i : i + CHUNK_CHARS] for i in range(0, len(text), CHUNK_CHARS)]
            db.execute(
                "INSERT INTO tool_outputs (id, ref_id, thread_id, thread_key, tool_call_id, "
                "tool_name, tool_args, content, n_chunks, n_chars, n_bytes, sha256, kind, "
                "created_at) VALUES (?, ?, 't', ?, ?, 'get_page', '{}', '', ?, ?, ?, ?, "
                "'tool_output', '2026-11-01 10:00:00')",
                (n, f"ref{n:013d}", "k" * 64, f"c{n}", len(pieces), len(text),
                 len(text.encode()), hashlib.sha256(text.encode()).hexdigest()),
            )  # fmt: skip
            db.executemany(
                "INSERT INTO tool_output_chunks (output_id, seq, content) VALUES (?, ?, ?)",
                [(n, seq, piece) for seq, piece in enumerate(pieces)],
            )
    store = ToolOutputStore(url)
    assert store.migrated == "upgraded from 0004"
    assert [store.read_all(n) for n in range(1, 5)] == outputs
    assert store.read_range(2, CHUNK_CHARS - 3, 6) == _PAGE[CHUNK_CHARS - 3 : CHUNK_CHARS + 3]
    assert _chunk_contents(store) == _distinct_chunks(outputs)
    store.close()
    with engine.begin() as connection:
        command.downgrade(alembic_config(connection), "0004")
    engine.dispose()
    with sqlite3.connect(tmp_path / "old.sqlite") as db:
        back = [
            "".join(
                piece
                for (piece,) in db.execute(
                    "SELECT content FROM tool_output_chunks WHERE output_id = ? ORDER BY seq",
                    (n,),
                )
            )
            for n in range(1, 5)
        ]
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
    assert back == outputs and "chunk_contents" not in tables


def test_a_store_made_at_the_current_schema_goes_down_to_0004_and_up_again(tmp_path) -> None:
    """Revision 0005's downgrade on a store made new (``create_all``, the constraint names the
    model gives) and its upgrade again: the long output reads back the same after both."""
    from alembic import command

    from helpers.store.migrations import alembic_config

    store = ToolOutputStore(f"sqlite:///{tmp_path / 'new.sqlite'}")
    row = store.log_tool("t", "c1", "get_page", {}, _PAGE)
    with store.engine.begin() as connection:
        command.downgrade(alembic_config(connection), "0004")
    with sqlite3.connect(tmp_path / "new.sqlite") as db:
        pieces = db.execute("SELECT content FROM tool_output_chunks ORDER BY seq").fetchall()
    assert "".join(p for (p,) in pieces) == _PAGE
    store.close()
    again = ToolOutputStore(f"sqlite:///{tmp_path / 'new.sqlite'}")
    assert again.migrated == "upgraded from 0004" and again.read_all(row.id) == _PAGE
    again.close()


def _first_release_store(path, thread: str):
    """A SQLite file with the first release's table and one row (``c0`` in ``thread``)."""
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE tool_outputs (id INTEGER PRIMARY KEY, ref_id VARCHAR(64) UNIQUE, "
            "thread_id VARCHAR(128), tool_call_id VARCHAR(128), tool_name VARCHAR(128), "
            "tool_args TEXT, content TEXT NOT NULL, n_chars INTEGER, sha256 VARCHAR(64), "
            "kind VARCHAR(32), created_at DATETIME, UNIQUE (thread_id, tool_call_id))"
        )
        db.execute(
            "INSERT INTO tool_outputs VALUES (1, 'oldrefoldref1234', ?, 'c0', 'x', '{}', "
            "'old value', 9, 'h', 'tool_output', '2026-11-01 10:00:00')",
            (thread,),
        )
    return path


def test_a_database_from_the_earlier_schema_is_migrated(tmp_path) -> None:
    path = _first_release_store(tmp_path / "old.sqlite", "t")
    store = ToolOutputStore(f"sqlite:///{path}")
    assert store.read_all(1) == "old value" and store.read_range(1, 4, 5) == "value"
    row = store.log_tool("t", "c1", "x", {}, "n" * 40_000, provider_call_id="0")
    assert store.read_range(row.id, 39_990, 100) == "n" * 10
    # the old row is found by its thread (through the new thread key) and the thread exists
    assert store.get("t", "c0").ref_id == "oldrefoldref1234" and store.thread_exists("t")
    assert store.get("t", "c1").provider_call_id == "0"
    with pytest.raises(DuplicateToolCallError):
        store.log_tool("t", "c0", "x", {}, "again")
    store.close()
    assert ToolOutputStore(f"sqlite:///{path}").count("t") == 2  # a second open is a no-op


def _schema(url: str) -> dict[str, tuple[set[str], set[str], set[str | None]]]:
    """Columns, index names and foreign-key names of every table (Alembic's own left out)."""
    from sqlalchemy import create_engine, inspect

    engine = create_engine(url)
    try:
        inspector = inspect(engine)
        return {
            table: (
                {c["name"] for c in inspector.get_columns(table)},
                {i["name"] for i in inspector.get_indexes(table)},
                {f["name"] for f in inspector.get_foreign_keys(table)},
            )
            for table in inspector.get_table_names()
            if table != "alembic_version"
        }
    finally:
        engine.dispose()


def test_the_migrations_build_the_schema_the_code_declares(tmp_path) -> None:
    """Upgrading an empty database through every revision gives the tables, columns and
    indexes that a new store creates at once: the migrations are complete."""
    from alembic import command
    from sqlalchemy import create_engine

    from helpers.store.migrations import HEAD, alembic_config, current_revision

    fresh = ToolOutputStore(f"sqlite:///{tmp_path / 'fresh.sqlite'}")
    assert fresh.migrated == "created" and current_revision(fresh.engine) == HEAD
    fresh.close()
    engine = create_engine(f"sqlite:///{tmp_path / 'walked.sqlite'}")
    with engine.begin() as connection:
        command.upgrade(alembic_config(connection), "head")
    assert current_revision(engine) == HEAD
    engine.dispose()
    declared = _schema(f"sqlite:///{tmp_path / 'fresh.sqlite'}")
    walked = _schema(f"sqlite:///{tmp_path / 'walked.sqlite'}")
    assert set(walked) == set(declared)
    for table, (columns, indexes, foreign_keys) in declared.items():
        assert walked[table][0] == columns, table
        assert indexes <= walked[table][1] | {"uq_thread_key_call"}, table
        assert walked[table][2] == foreign_keys, table  # a downgrade drops them by name
    again = ToolOutputStore(f"sqlite:///{tmp_path / 'walked.sqlite'}")
    assert again.migrated == "current"
    row = again.log_tool("t", "c1", "x", {}, "v" * 50_000)
    assert again.read_range(row.id, 49_990, 100) == "v" * 10
    again.close()


def test_an_old_store_is_upgraded_through_alembic_on_open(tmp_path) -> None:
    from helpers.store.migrations import HEAD, current_revision

    path = _first_release_store(tmp_path / "v1.sqlite", "T-7")
    store = ToolOutputStore(f"sqlite:///{path}")
    assert store.migrated == "upgraded from 0001" and current_revision(store.engine) == HEAD
    assert store.get("T-7", "c0", with_content=True).content == "old value"
    assert store.get("T-7", "c0").n_bytes == 9  # measured by revision 0003
    store.log_tool("T-7", "c1", "x", {}, "new", provider_call_id="p")
    assert [r.tool_call_id for r in store.list_thread("T-7")] == ["c0", "c1"]
    store.close()
    assert ToolOutputStore(f"sqlite:///{path}").migrated == "current"


def test_the_alembic_command_migrates_the_configured_store(tmp_path) -> None:
    import subprocess
    import sys

    from helpers.store.migrations import FOLDER

    url = f"sqlite:///{tmp_path / 'cli.sqlite'}"
    done = subprocess.run(
        [sys.executable, "-m", "alembic", "-c", str(FOLDER / "alembic.ini"), "upgrade", "head"],
        capture_output=True,
        text=True,
        env={**os.environ, "WORKBOOK_DB_URL": url},
        timeout=HANG_GUARD_S,
    )
    assert done.returncode == 0, done.stderr
    assert "-> 0003" in done.stderr and ToolOutputStore(url).migrated == "current"


def test_a_reference_id_can_be_typed_as_an_argument(tmp_path) -> None:
    """A ref_id never starts with '-' (argparse would read it as an option: `workbook outputs
    show -Xy…` failed once in 64 rows); 2,000 rows would hold about 31 such ids otherwise."""
    store = ToolOutputStore(f"sqlite:///{tmp_path / 'ids.sqlite'}")
    rows = [store.log_tool("t", f"call_{i}", "deep_check", "{}", "x") for i in range(2000)]
    store.close()
    assert not [r.ref_id for r in rows if r.ref_id.startswith("-")]
    assert len({r.ref_id for r in rows}) == 2000 and all(len(r.ref_id) == 16 for r in rows)


def test_a_store_at_head_opens_without_importing_alembic(tmp_path) -> None:
    """Alembic is loaded only to upgrade a database: a new one is created and stamped, and
    reopening one at HEAD reads ``alembic_version``, with SQLAlchemy alone (0.1 s less at every
    ``workbook`` start; that the stamp is Alembic's own is
    :func:`test_a_new_store_is_what_alembic_would_make_of_it`)."""
    import subprocess
    import sys

    url = f"sqlite:///{tmp_path / 'head.sqlite'}"
    code = (
        "import sys\n"
        "from helpers.store.tool_outputs import ToolOutputStore\n"
        f"store = ToolOutputStore({url!r})\n"
        "print(store.migrated, 'alembic' in sys.modules)\n"
    )
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    again = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert first.stdout.split() == ["created", "False"], first.stderr
    assert again.stdout.split() == ["current", "False"], again.stderr


def _everything_inspected(url: str) -> dict[str, object]:
    """Every table of the database at ``url`` as SQLAlchemy's inspector reports it (columns with
    their types, nullability, defaults and keys; primary key, foreign keys, indexes and unique
    constraints with their names), Alembic's table included, and the rows of
    ``alembic_version``; on SQLite also the DDL SQLite stored for each table and index."""
    from sqlalchemy import create_engine, inspect

    engine = create_engine(url)
    try:
        inspector = inspect(engine)
        found: dict[str, object] = {
            table: {
                "columns": [
                    {k: str(v) if k == "type" else v for k, v in sorted(column.items())}
                    for column in inspector.get_columns(table)
                ],
                "primary_key": inspector.get_pk_constraint(table),
                "foreign_keys": inspector.get_foreign_keys(table),
                "indexes": sorted(inspector.get_indexes(table), key=lambda i: str(i["name"])),
                "unique": sorted(
                    inspector.get_unique_constraints(table), key=lambda u: str(u["name"])
                ),
            }
            for table in sorted(inspector.get_table_names())
        }
        with engine.connect() as connection:
            found["alembic_version rows"] = connection.exec_driver_sql(
                "SELECT version_num FROM alembic_version"
            ).all()
            if engine.dialect.name == "sqlite":
                found["sqlite_master"] = connection.exec_driver_sql(
                    "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name"
                ).all()
        return found
    finally:
        engine.dispose()


def _created_through_alembic(url: str) -> None:
    """A new store as it was created before stamping went without Alembic: the declared tables
    (``create_all``), then Alembic's own ``stamp`` at head, in one transaction."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory
    from sqlalchemy import create_engine

    from helpers.store.migrations import HEAD, alembic_config
    from helpers.store.schema import Base

    engine = create_engine(url)
    with engine.begin() as connection:
        Base.metadata.create_all(connection)
        script = ScriptDirectory.from_config(alembic_config())
        MigrationContext.configure(connection).stamp(script, HEAD)
    engine.dispose()


#: A revision after the last one, for :func:`_upgrade_past_head` only.
_NEXT_REVISION = """
import sqlalchemy as sa
from alembic import op

revision = "9999"
down_revision = "{head}"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("checkpoint_results", sa.Column("probe", sa.Integer, nullable=True))


def downgrade() -> None:
    op.drop_column("checkpoint_results", "probe")
"""


def _upgrade_past_head(url: str, folder) -> None:
    """Alembic's ``upgrade head`` on the store at ``url``, first with the store's migrations (at
    head already: nothing to do), then with a copy of them in ``folder`` that has one revision
    more: Alembic reads the stamp, runs only the new revision and moves the stamp."""
    import shutil

    from alembic import command
    from alembic.runtime.migration import MigrationContext
    from sqlalchemy import create_engine, inspect

    from helpers.store.migrations import FOLDER, HEAD, alembic_config

    shutil.copytree(FOLDER, folder, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "versions" / "9999_next.py").write_text(_NEXT_REVISION.format(head=HEAD))
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            command.upgrade(alembic_config(connection), "head")
            assert MigrationContext.configure(connection).get_current_heads() == (HEAD,)
        with engine.begin() as connection:
            config = alembic_config(connection)
            config.set_main_option("script_location", str(folder))
            command.upgrade(config, "head")
            assert MigrationContext.configure(connection).get_current_heads() == ("9999",)
        columns = {c["name"] for c in inspect(engine).get_columns("checkpoint_results")}
        assert "probe" in columns
    finally:
        engine.dispose()


def test_a_new_store_is_what_alembic_would_make_of_it(tmp_path) -> None:
    """A new store is stamped without Alembic (:func:`helpers.store.migrations.stamp_head`):
    its tables, columns, indexes and constraints, Alembic's version table and its row, and the
    DDL SQLite keeps, are exactly those of the same store stamped by Alembic itself; and
    Alembic upgrades it later as one of its own."""
    from helpers.store.migrations import HEAD, current_revision

    ours_url = f"sqlite:///{tmp_path / 'ours.sqlite'}"
    theirs_url = f"sqlite:///{tmp_path / 'alembic.sqlite'}"
    store = ToolOutputStore(ours_url)
    assert store.migrated == "created" and current_revision(store.engine) == HEAD
    store.close()
    _created_through_alembic(theirs_url)
    ours = _everything_inspected(ours_url)
    assert ours == _everything_inspected(theirs_url)
    assert ours["alembic_version rows"] == [(HEAD,)]
    assert ToolOutputStore(ours_url).migrated == "current"
    _upgrade_past_head(ours_url, tmp_path / "migrations")


@pytest.mark.skipif(not os.environ.get("WORKBOOK_TEST_PG_URL"), reason="set WORKBOOK_TEST_PG_URL")
def test_a_new_store_is_what_alembic_would_make_of_it_on_postgresql(tmp_path) -> None:
    """The same on PostgreSQL, each store in a schema of its own (as a room's attendee has)."""
    from sqlalchemy import create_engine, text

    from helpers.store.migrations import HEAD

    url = os.environ["WORKBOOK_TEST_PG_URL"]
    sep = "&" if "?" in url else "?"
    schemas = {name: f"{name}_{uuid.uuid4().hex[:8]}" for name in ("ours", "alembic")}
    urls = {name: f"{url}{sep}options=-csearch_path%3D{s}" for name, s in schemas.items()}
    admin = create_engine(url)
    with admin.begin() as db:
        db.execute(text(f"CREATE SCHEMA {schemas['alembic']}"))
    try:
        store = ToolOutputStore(urls["ours"])  # creates its schema, as in a room
        assert store.migrated == "created"
        store.close()
        _created_through_alembic(urls["alembic"])
        ours = _everything_inspected(urls["ours"])
        assert ours == _everything_inspected(urls["alembic"])
        assert ours["alembic_version rows"] == [(HEAD,)]
        assert ToolOutputStore(urls["ours"]).migrated == "current"
        _upgrade_past_head(urls["ours"], tmp_path / "migrations")
    finally:
        with admin.begin() as db:
            for schema in schemas.values():
                db.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
        admin.dispose()


#: One of several processes opening the same new stores at the same moment (after the file
#: ``go`` appears), one store after another: prints what each open did.
_FIRST_OPENER = """
import os, sys, time
from helpers.store.tool_outputs import ToolOutputStore
go, urls = sys.argv[1], sys.argv[2:]
while not os.path.exists(go):
    time.sleep(0.002)
for url in urls:
    store = ToolOutputStore(url)
    print(store.migrated, store.count(), flush=True)
    store.close()
"""


def _first_opens(urls: list[str], tmp_path) -> list[list[str]]:
    """Four processes opening each of ``urls`` (new stores) at once: each one's lines."""
    import subprocess
    import sys

    go = tmp_path / f"go-{uuid.uuid4().hex[:6]}"
    command = [sys.executable, "-c", _FIRST_OPENER, str(go), *urls]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    openers = [subprocess.Popen(command, **pipes) for _ in range(4)]
    go.touch()
    said = [opener.communicate(timeout=HANG_GUARD_S) for opener in openers]
    for opener, (_, err) in zip(openers, said, strict=True):
        assert opener.returncode == 0, err[-2_000:]
    return [out.splitlines() for out, _ in said]


def _each_made_once(lines: list[list[str]], stores: int) -> None:
    for k in range(stores):  # one process made each store; the others found it current
        done = sorted(out[k] for out in lines)
        assert done == ["created 0", "current 0", "current 0", "current 0"], done


def test_processes_opening_a_new_store_at_once_all_get_it(tmp_path) -> None:
    """Two kernels, or a kernel and ``workbook ask``, opening a new store at the same moment:
    every one of them opens it (the loser of the creation reads it again), none fails."""
    urls = [f"sqlite:///{tmp_path / f'new-{k}.sqlite'}" for k in range(8)]
    _each_made_once(_first_opens(urls, tmp_path), len(urls))


@pytest.mark.skipif(not os.environ.get("WORKBOOK_TEST_PG_URL"), reason="set WORKBOOK_TEST_PG_URL")
def test_processes_opening_a_new_store_at_once_all_get_it_on_postgresql(tmp_path) -> None:
    from sqlalchemy import create_engine, text

    url = os.environ["WORKBOOK_TEST_PG_URL"]
    schemas = [f"new_{uuid.uuid4().hex[:8]}" for _ in range(8)]
    engine = create_engine(url)
    with engine.begin() as db:
        for schema in schemas:
            db.execute(text(f"CREATE SCHEMA {schema}"))
    sep = "&" if "?" in url else "?"
    try:
        urls = [f"{url}{sep}options=-csearch_path%3D{schema}" for schema in schemas]
        _each_made_once(_first_opens(urls, tmp_path), len(urls))
    finally:
        with engine.begin() as db:
            for schema in schemas:
                db.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        engine.dispose()


#: One writer of the quota test: logs outputs of 100 bytes on one thread until the quota
#: refuses, starting when the file ``go`` appears (so all writers start at once).
_QUOTA_WRITER = """
import os, sys, time
from helpers.store.quotas import StoreQuotaExceeded
from helpers.store.tool_outputs import ToolOutputStore
url, thread, me, go = sys.argv[1:5]
store = ToolOutputStore(url)
while not os.path.exists(go):
    time.sleep(0.005)
for k in range(400):
    try:
        store.log_tool(thread, f"{me}-{k}", "x", "{}", "o" * 98, max_thread_bytes=20_000)
    except StoreQuotaExceeded:
        break
store.close()
"""


def _quota_race(url: str, tmp_path) -> tuple[int, int]:
    """Six processes writing one thread at once under a quota of 20,000 bytes: the thread's
    bytes after, and how many outputs were stored."""
    import subprocess
    import sys

    thread = f"race-{uuid.uuid4().hex[:8]}"
    ToolOutputStore(url).close()  # the tables exist before the race
    go = tmp_path / "go"
    writers = [
        subprocess.Popen([sys.executable, "-c", _QUOTA_WRITER, url, thread, f"w{n}", str(go)])
        for n in range(6)
    ]
    go.touch()
    for writer in writers:
        assert writer.wait(timeout=HANG_GUARD_S) == 0
    store = ToolOutputStore(url)
    held, count = store.thread_bytes(thread), len(store.list_thread(thread))
    store.close()
    return held, count


def test_six_writers_at_once_never_pass_a_threads_quota(tmp_path) -> None:
    held, count = _quota_race(f"sqlite:///{tmp_path / 'race.sqlite'}", tmp_path)
    assert held <= 20_000 and count == 200, (held, count)  # 100 bytes each (98 + "{}")


@pytest.mark.skipif(not os.environ.get("WORKBOOK_TEST_PG_URL"), reason="set WORKBOOK_TEST_PG_URL")
def test_six_writers_at_once_never_pass_a_threads_quota_on_postgresql(tmp_path) -> None:
    held, count = _quota_race(os.environ["WORKBOOK_TEST_PG_URL"], tmp_path)
    assert held <= 20_000 and count == 200, (held, count)


def test_a_connection_refused_for_a_moment_is_tried_again(monkeypatch) -> None:
    """A room's cap refuses an attendee's connection while the ones she has just closed are
    still ending: the store tries again after short pauses; another failure, or a refusal that
    lasts past the pauses, is raised as it came."""
    import psycopg
    from sqlalchemy import event

    from helpers.store import database

    monkeypatch.setattr(database, "CONNECT_REFUSED_PAUSES_S", (0.0, 0.0, 0.0))

    class Dialect:
        loaded_dbapi = psycopg

        def __init__(self, answers: list[str]) -> None:
            self.answers, self.tries = answers, 0

        def connect(self, *args, **kwargs) -> str:
            self.tries += 1
            answer = self.answers.pop(0)
            if answer != "ok":
                raise psycopg.OperationalError(f'connection to server at "h" failed: {answer}')
            return "connection"

    twice = Dialect(["Connection refused", "Connection refused", "ok"])
    assert database._connect_through_refusals(twice, None, (), {}) == "connection"
    assert twice.tries == 3
    other = Dialect(["password authentication failed", "ok"])
    with pytest.raises(psycopg.OperationalError, match="password authentication"):
        database._connect_through_refusals(other, None, (), {})
    assert other.tries == 1
    down = Dialect(["Connection refused"] * 5)
    with pytest.raises(psycopg.OperationalError, match="Connection refused"):
        database._connect_through_refusals(down, None, (), {})
    assert down.tries == 4  # the first try and one after each pause
    engine = database.make_engine("postgresql+psycopg://u:p@127.0.0.1:1/x")
    assert event.contains(engine, "do_connect", database._connect_through_refusals)
    engine.dispose()
