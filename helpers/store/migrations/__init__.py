"""Schema migrations of the tool-output store, with Alembic.

The history is linear: ``0001`` is the first release's schema (one ``tool_outputs`` table),
``0002`` brings it to the schema of the first Alembic release (chunked values, provider call
ids, thread keys, threads and their messages), ``0003`` adds each output's size in bytes,
``0004`` the checkpoint results, ``0005`` keeps each distinct chunk's characters once.
:func:`migrate` runs on every store open:

- a database with no tables is created at the current schema (``create_all``) and stamped head,
  as Alembic stamps it (its version table, :data:`ALEMBIC_VERSION`, made and the head written),
  without importing Alembic (0.1 s of CPU: ``workbook ask --db sqlite://`` creates a store at
  every run);
- a database from before migrations (tables, no ``alembic_version``) is stamped ``0001`` and
  upgraded: ``0002`` looks at what is there and adds only what is missing, so a store from any
  earlier version (first release, or one with some columns already added) ends up current;
- a versioned database is upgraded to head (nothing to do when it is there already).

Two processes may open a new store at the same moment (two kernels of one attendee, a notebook
and ``workbook ask``). On SQLite the migration takes the file's write lock first (``BEGIN
IMMEDIATE``: Python's sqlite3 opens no transaction before DDL by itself, so without it each
``CREATE TABLE`` was committed alone and another process saw tables with no version); the
others wait for it (the busy timeout) and find the store current. On PostgreSQL, whose DDL is
transactional, the loser's creation fails when the winner commits (a duplicate table, type or
``alembic_version`` row) having changed nothing, and :func:`migrate` reads the database again.
No lock is taken there: PostgreSQL's advisory locks are one namespace for every role of a
database, so in a room an attendee could hold another's.

``alembic`` itself works too, for a database named by ``WORKBOOK_DB_URL``::

    alembic -c helpers/store/migrations/alembic.ini upgrade head
"""

from __future__ import annotations

import time
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import (
    Column,
    Connection,
    Engine,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    inspect,
)
from sqlalchemy.exc import DBAPIError

if TYPE_CHECKING:  # Alembic is imported only to upgrade a database (it costs 0.1 s)
    from alembic.config import Config
    from alembic.script import ScriptDirectory

#: The revision of the current schema (the last file in ``versions/``).
HEAD = "0005"
#: The revision a database from before migrations is taken to be at.
FIRST_RELEASE = "0001"
FOLDER = Path(__file__).parent
#: Times :func:`migrate` tries when another process is migrating the same database at once.
MIGRATE_ATTEMPTS = 5
#: Seconds between two tries (times the try's number): the other process's DDL commits in
#: milliseconds, or its lock holds until then.
MIGRATE_RETRY_S = 0.05
#: SQLSTATEs of PostgreSQL's answers to a concurrent creation (unique_violation, duplicate_table,
#: duplicate_object; PostgreSQL's docs, Appendix A) and to a lost race (serialization_failure,
#: deadlock_detected).
_RACE_SQLSTATES = frozenset({"23505", "42P07", "42710", "40001", "40P01"})


#: Alembic's own version table, made as Alembic makes it (``alembic.ddl.impl.DefaultImpl.
#: version_table_impl``: ``version_num VARCHAR(32) NOT NULL``, primary key
#: ``alembic_version_pkc``), so a new store is stamped without importing Alembic
#: (:func:`stamp_head`); tests/test_store.py checks that the two stamps are the same.
ALEMBIC_VERSION = Table(
    "alembic_version",
    MetaData(),
    Column("version_num", String(32), nullable=False),
    PrimaryKeyConstraint("version_num", name="alembic_version_pkc"),
)


@lru_cache(maxsize=1)
def _script() -> ScriptDirectory:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config())


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic ``Config`` for the store's migrations (``connection``: the one to use)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(FOLDER))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def current_revision(engine: Engine) -> str | None:
    """The revision a database is stamped at (``None``: not versioned)."""
    with engine.connect() as connection:
        return _stamped(connection)


def _stamped(connection: Connection) -> str | None:
    """The revision in ``alembic_version`` (Alembic's own table, read without Alembic)."""
    if not inspect(connection).has_table("alembic_version"):
        return None
    return connection.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()


def stamp_head(connection: Connection) -> None:
    """Stamp an unversioned database at :data:`HEAD` as Alembic's ``stamp`` does on one with no
    version: :data:`ALEMBIC_VERSION` created if missing, the head written as its one row. Runs
    in the caller's transaction.

    Raises:
        sqlalchemy.exc.SQLAlchemyError: the table cannot be created or written.
    """
    ALEMBIC_VERSION.create(connection, checkfirst=True)
    connection.execute(ALEMBIC_VERSION.insert().values(version_num=HEAD))


def _lost_a_race(exc: DBAPIError) -> bool:
    """Whether ``exc`` is a database's answer to two processes migrating it at once."""
    return getattr(exc.orig, "sqlstate", None) in _RACE_SQLSTATES


def migrate(engine: Engine, metadata: MetaData) -> str:
    """Bring the database behind ``engine`` to :data:`HEAD` (see the module docstring);
    ``metadata`` holds the current schema's tables. Returns what was done: ``"current"``,
    ``"created"`` or ``"upgraded from <revision>"``; when another process did it at the same
    moment, what was there after it (``"current"``).

    Raises:
        sqlalchemy.exc.SQLAlchemyError: the database cannot be read or changed (a concurrent
            migration's conflict only after :data:`MIGRATE_ATTEMPTS` tries).
    """
    attempt = 1
    while True:
        try:
            return _migrate_once(engine, metadata)
        except DBAPIError as exc:
            if attempt >= MIGRATE_ATTEMPTS or not _lost_a_race(exc):
                raise
            time.sleep(MIGRATE_RETRY_S * attempt)
            attempt += 1


def _migrate_once(engine: Engine, metadata: MetaData) -> str:
    with engine.connect() as connection:  # nearly always: read, and nothing to do
        if _stamped(connection) == HEAD:
            return "current"
    with engine.connect() as connection:
        if connection.dialect.name == "postgresql":  # one snapshot for every read below
            connection = connection.execution_options(isolation_level="REPEATABLE READ")
        with connection.begin():
            return _migrate_in(connection, metadata)


def _migrate_in(connection: Connection, metadata: MetaData) -> str:
    if connection.dialect.name == "sqlite":
        connection.exec_driver_sql("BEGIN IMMEDIATE")  # the write lock, until the commit
    revision = _stamped(connection)
    if revision == HEAD:
        return "current"
    if revision is None and not inspect(connection).has_table("tool_outputs"):
        metadata.create_all(connection)
        stamp_head(connection)
        return "created"
    from alembic import command
    from alembic.runtime.migration import MigrationContext

    if revision is None:
        MigrationContext.configure(connection).stamp(_script(), FIRST_RELEASE)
        revision = FIRST_RELEASE
    command.upgrade(alembic_config(connection), "head")
    return f"upgraded from {revision}"
