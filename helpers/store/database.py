"""Opening the store's database safely: the URL, the engine, and the checks on a SQLite file.

The default database is a SQLite file in the run-time folder (``var/tool_outputs.sqlite``);
``WORKBOOK_DB_URL`` (or the ``url`` argument) takes any SQLAlchemy URL, PostgreSQL included.
SQLite runs in WAL mode with a busy timeout, so readers never block the writer and a second
writer waits instead of failing at once. A SQLite file is checked before anything touches it
(a file that is not a store is refused, unchanged) and kept owner-only, with its side files;
:func:`open_engine` does all of it, then creates the tables or migrates them
(:mod:`helpers.store.migrations`).
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import time
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from helpers.base.paths import make_owner_only, private_dir, private_file, store_db_path
from helpers.store.migrations import migrate
from helpers.store.schema import Base

#: How long a SQLite writer waits for another's lock before it raises (milliseconds): a hang
#: guard, not a limit. Another process's write of a large output holds the lock for its own
#: work, which a busy machine stretches (thirty attendees on two cores: tenfold and more), so a
#: correct write waits as long as it takes; only a lock nobody releases runs out this clock.
DEFAULT_BUSY_TIMEOUT_MS = 120_000
#: The files SQLite keeps beside a database file (write-ahead log, shared memory, rollback
#: journal); they hold the same rows, so they get the same owner-only mode.
SQLITE_SIDE_FILE_SUFFIXES = ("-wal", "-shm", "-journal")


def default_db_url() -> str:
    """``$WORKBOOK_DB_URL``, else a SQLite file in the run-time folder."""
    return os.environ.get("WORKBOOK_DB_URL") or f"sqlite:///{store_db_path()}"


#: Pauses, in seconds, before each new try of a connection PostgreSQL's port refused at once (a
#: TCP reset). In a room the kernel caps each attendee's connections in any state
#: (:mod:`helpers.course.room_firewall`), and a connection she has just closed still counts
#: until its server process has ended, which a busy machine slows: her next operation may be
#: refused for a moment though she holds nothing. About 3 s in all; a server that is down is
#: said after them.
CONNECT_REFUSED_PAUSES_S = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)


def _connect_through_refusals(dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
    """SQLAlchemy's ``do_connect`` hook: the driver's connect, tried again after each pause of
    :data:`CONNECT_REFUSED_PAUSES_S` while the answer is "Connection refused"."""
    pauses = iter(CONNECT_REFUSED_PAUSES_S)
    while True:
        try:
            return dialect.connect(*cargs, **cparams)
        except dialect.loaded_dbapi.OperationalError as exc:
            pause_s = next(pauses, None)
            if pause_s is None or "Connection refused" not in str(exc):
                raise
            time.sleep(pause_s)


def make_engine(url: str, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> Engine:
    """An engine for ``url``; SQLite files get WAL mode and a busy timeout on every connection.

    A PostgreSQL engine holds no idle connection (``NullPool``: one per operation): a room's
    kernels cost the server nothing while idle (the room's budget counts only what an attendee
    may hold at once: :func:`helpers.course.room.connection_budget`), and
    a server restarted between two cells costs no failed cell (the next operation connects
    afresh); a connection refused at once is tried again for a few seconds
    (:data:`CONNECT_REFUSED_PAUSES_S`)."""
    is_sqlite = url.startswith("sqlite")
    connect_args: dict[str, Any] = {"timeout": busy_timeout_ms / 1000} if is_sqlite else {}
    pooling: dict[str, Any] = {}
    if make_url(url).get_backend_name() == "postgresql":
        from sqlalchemy.pool import NullPool

        pooling["poolclass"] = NullPool
    engine = create_engine(url, connect_args=connect_args, **pooling)
    if pooling:
        event.listen(engine, "do_connect", _connect_through_refusals)
    if is_sqlite:

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
            if ":memory:" not in url and url not in ("sqlite://", "sqlite:///"):
                cursor.execute("PRAGMA journal_mode=WAL")
                cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

    return engine


#: ``search_path`` in a PostgreSQL URL's ``options`` (``?options=-csearch_path=attendee_ann``).
_SEARCH_PATH_RE = re.compile(r"(?:^|\s)-c\s*search_path=([a-z_][a-z0-9_]{0,62})(?:\s|$)")


def ensure_own_schema(engine: Engine) -> str | None:
    """For a PostgreSQL URL whose ``options`` set ``search_path`` to one schema (a room
    attendee's store, :mod:`helpers.course.room`), create that schema if missing, so the tables
    are made in it; returns its name (``None``: no such option, or not PostgreSQL).

    Raises:
        sqlalchemy.exc.SQLAlchemyError: the schema cannot be created (no CREATE privilege).
    """
    if engine.url.get_backend_name() != "postgresql":
        return None
    match = _SEARCH_PATH_RE.search(str(engine.url.query.get("options") or ""))
    if match is None:
        return None
    from sqlalchemy import text

    with engine.begin() as connection:
        found = connection.execute(
            text("SELECT 1 FROM pg_namespace WHERE nspname = :name"), {"name": match[1]}
        ).first()
        if found is None:  # CREATE SCHEMA checks the CREATE privilege even when it exists
            connection.execute(text(f'CREATE SCHEMA "{match[1]}"'))
    return match[1]


def sqlite_file(url: str) -> Path | None:
    """The database file a SQLite URL names (relative to the working folder as SQLite resolves
    it), or ``None`` for another database, an in-memory one, a ``file:`` URI
    (``?uri=true``) or text that is not a SQLAlchemy URL."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return None
    if parsed.get_backend_name() != "sqlite" or parsed.query.get("uri"):
        return None
    if not parsed.database or parsed.database == ":memory:":
        return None
    return Path(parsed.database)


#: The first 16 bytes of every SQLite database file (sqlite.org/fileformat.html, 1.3).
SQLITE_HEADER = b"SQLite format 3\x00"


def refuse_non_sqlite_file(db_file: Path) -> None:
    """Refuse, before anything touches it, a file that is not a SQLite database: a missing or
    empty file is fine (SQLite makes it one), any other must start with :data:`SQLITE_HEADER`.
    Nothing is changed, not even the file's mode.

    A SQLite database with tables that is not a store (:func:`_foreign_reason`) is another
    application's: refused too, so a mistyped ``--db`` never adds a table to it or changes its
    journal mode.

    Raises:
        ValueError: the file is not a SQLite database (its first bytes are shown, escaped), or is
            another application's (its first table names are shown).
        IsADirectoryError: it is a folder.
    """
    try:
        with open(db_file, "rb") as handle:
            head = handle.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return
    if head and head != SQLITE_HEADER:
        raise ValueError(
            f"{db_file} is not a SQLite database (it starts {head[:8]!r}); nothing was changed"
        )
    if head:
        reason = _foreign_reason(db_file)
        if reason:
            raise ValueError(
                f"{db_file} is a SQLite database of something else ({reason}), not a tool-output "
                "store; nothing was changed"
            )


#: The columns every version of the store's ``tool_outputs`` table has had (the first release's
#: table, before Alembic, is known by them).
STORE_KEY_COLUMNS = frozenset({"thread_id", "tool_call_id", "tool_name"})


def _foreign_reason(db_file: Path) -> str | None:
    """Why the SQLite file ``db_file`` belongs to something else, in words, or ``None`` when it
    is empty or a store: stamped with one of the store's Alembic revisions, or unstamped with a
    ``tool_outputs`` table of the store's shape (:data:`STORE_KEY_COLUMNS`). Read through an
    immutable read-only connection: no lock, no ``-wal``/``-shm`` file, nothing written."""
    from helpers.store.migrations import FOLDER

    try:
        db = sqlite3.connect(f"{db_file.absolute().as_uri()}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error:
        return None  # SQLite's own error comes when the store opens it
    try:
        tables = {n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "alembic_version" in tables:
            stamped = {str(v) for (v,) in db.execute("SELECT version_num FROM alembic_version")}
            ours = {p.name.split("_", 1)[0] for p in (FOLDER / "versions").glob("[0-9]*_*.py")}
            return None if stamped <= ours else f"Alembic revision {', '.join(sorted(stamped))}"
        if "tool_outputs" in tables:
            columns = {row[1] for row in db.execute("PRAGMA table_info(tool_outputs)")}
            return None if columns >= STORE_KEY_COLUMNS else "a tool_outputs table of its own"
    except sqlite3.Error:
        return None
    finally:
        db.close()
    shown = ", ".join(sorted(tables)[:5]) + (", …" if len(tables) > 5 else "")
    return f"tables: {shown}" if tables else None


def _private_sqlite_files(db_file: Path, *, create: bool = False) -> None:
    """Make a SQLite store owner-only: with ``create``, its missing folder is made with mode
    :data:`helpers.base.paths.PRIVATE_DIR_MODE` and a missing file is made empty with mode
    :data:`helpers.base.paths.PRIVATE_FILE_MODE` before SQLite opens it (SQLite gives the
    ``-wal``/``-shm``/``-journal`` files the mode of the database file); an existing file and its
    existing side files of the current user lose their group and other bits. An existing folder
    is left as it is (it may be a shared one, such as ``/tmp``).

    Raises:
        OSError: the folder or the file cannot be created.
    """
    if create:
        folder = db_file.absolute().parent
        if not folder.exists():
            private_dir(folder)
        private_file(db_file)
    for path in (
        db_file,
        *(db_file.with_name(db_file.name + s) for s in SQLITE_SIDE_FILE_SUFFIXES),
    ):
        with contextlib.suppress(FileNotFoundError):  # SQLite deletes side files as it goes
            make_owner_only(path)


def open_engine(url: str, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> tuple[Engine, str]:
    """Open the store's database at ``url``: a SQLite file is checked
    (:func:`refuse_non_sqlite_file`) and made owner-only, its folder and the file created if
    missing; the engine is made (:func:`make_engine`), a room attendee's schema created
    (:func:`ensure_own_schema`), and the tables created and stamped at the current revision, or
    upgraded through Alembic (:func:`helpers.store.migrations.migrate`).

    Returns:
        The engine and what the migration did (``current``, ``created`` or
        ``upgraded from <revision>``).

    Raises:
        ValueError: a SQLite URL names a file that is not a SQLite database, or another
            application's database (it is left as it was, mode included).
    """
    db_file = sqlite_file(url)
    if db_file is not None:
        refuse_non_sqlite_file(db_file)
        _private_sqlite_files(db_file, create=True)
    engine = make_engine(url, busy_timeout_ms=busy_timeout_ms)
    ensure_own_schema(engine)
    # create the tables (stamped as Alembic stamps), or upgrade an earlier version with Alembic
    migrated = migrate(engine, Base.metadata)
    if db_file is not None:
        _private_sqlite_files(db_file)  # the -wal/-shm files that WAL mode has just made
    return engine, migrated


class StoreDatabase:
    """The open database each job of the store works through (the writing, reading and quota
    classes of :class:`~helpers.store.tool_outputs.ToolOutputStore` stand on it): its URL and
    its engine, set when the store opens (:func:`open_engine`). The jobs speak SQLAlchemy Core
    through the engine's connections (``engine.connect()`` to read, ``engine.begin()`` to write
    one transaction) on the tables :mod:`helpers.store.schema` maps; no ORM session."""

    url: str
    engine: Engine
