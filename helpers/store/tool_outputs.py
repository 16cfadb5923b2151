"""The tool-output store: every tool dispatch, persisted through SQLAlchemy.

Tables:

- ``tool_outputs``: a row per tool call, keyed by ``(thread, tool_call_id)`` and also by
  ``ref_id``, the unguessable id that an opaque reference ``internal://<ref_id>`` names. The full
  output lives in ``content``; ``n_chars`` (characters, not bytes) and ``sha256`` (of the UTF-8
  bytes) describe it without loading it. ``provider_call_id`` keeps the id the provider gave the
  call (providers reuse ids; the client's own ``tool_call_id`` is the key).
- ``threads`` and ``thread_messages``: the conversation of each thread, message by message, so a
  later process can continue it (``workbook ask --thread ID``).

Lookups follow one pattern: ``get…`` returns one row or ``None`` (:meth:`~ToolOutputStore.get`
by thread and ``tool_call_id``, :meth:`~ToolOutputStore.get_by_ref` by reference id), ``list…``
returns a list (:meth:`~ToolOutputStore.list_thread`, :meth:`~ToolOutputStore.list_by_call_id`
across threads, :meth:`~ToolOutputStore.list_threads`), ``read…`` returns content
(:meth:`~ToolOutputStore.read_all`, :meth:`~ToolOutputStore.read_range`).

A thread id may be any text of any length: rows are found by ``thread_key``, the SHA-256 of the
thread id (64 hex characters), so indexes stay small on SQLite and PostgreSQL alike.

Reads of a part of a value (:meth:`ToolOutputStore.read_range`) never load the whole value: an
output of up to ``CHUNK_CHARS`` characters sits in ``content`` and is sliced with ``substr`` in
SQL; a longer one is stored in ``tool_output_chunks``, ``CHUNK_CHARS`` characters a row, and a
slice reads only the one or two chunks it touches. (SQLite's ``substr`` on one 50 MB value reads
all 50 MB; chunks keep a slice's cost independent of the value's size.)

The default database is a SQLite file in the run-time folder (``var/tool_outputs.sqlite``);
``WORKBOOK_DB_URL`` (or the ``url`` argument) takes any SQLAlchemy URL, PostgreSQL included.
SQLite runs in WAL mode with a busy timeout, so readers never block the writer and a second
writer waits instead of failing at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Boolean,
    DateTime,
    Engine,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    cast,
    create_engine,
    delete,
    event,
    func,
    insert,
    select,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, IntegrityError
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, sessionmaker

from helpers.base import ids
from helpers.base.paths import make_owner_only, private_dir, private_file, store_db_path
from helpers.store.checkpoint_rows import as_utc, checkpoint_summary
from helpers.store.migrations import migrate

#: Every row the agent writes has this ``kind``; other kinds may share the table later.
KIND_TOOL_OUTPUT = "tool_output"
#: How long a SQLite writer waits for another's lock before it raises (milliseconds): a hang
#: guard, not a limit. Another process's write of a large output holds the lock for its own
#: work, which a busy machine stretches (thirty attendees on two cores: tenfold and more), so a
#: correct write waits as long as it takes; only a lock nobody releases runs out this clock.
DEFAULT_BUSY_TIMEOUT_MS = 120_000
#: Bytes of randomness in a reference id (:func:`helpers.base.ids.argument_safe_token`): 16 URL-safe
#: characters, never starting with ``-``.
REF_ID_BYTES = 12
#: The longest ``tool_call_id`` the store takes, in characters (the client's own ids are 29).
MAX_TOOL_CALL_ID_CHARS = 255
#: Outputs longer than this many characters are stored in chunks of this many characters, so a
#: slice reads one or two chunks instead of the whole value.
CHUNK_CHARS = 16_384
#: The files SQLite keeps beside a database file (write-ahead log, shared memory, rollback
#: journal); they hold the same rows, so they get the same owner-only mode.
SQLITE_SIDE_FILE_SUFFIXES = ("-wal", "-shm", "-journal")


class DuplicateToolCallError(ValueError):
    """A ``tool_call_id`` was logged twice in the same thread (it must be unique per thread)."""


class StoreQuotaExceeded(ValueError):
    """A thread's calls and outputs would pass its quota of bytes (``max_thread_bytes`` of
    :meth:`ToolOutputStore.log_tool`); nothing of the call was stored."""


class Base(DeclarativeBase):
    """Declarative base of the store's tables."""


def thread_key(thread_id: str) -> str:
    """The key a thread's rows are stored under: SHA-256 (hex) of the thread id's UTF-8 bytes."""
    return ids.content_sha256(thread_id)


def _thread_key_default(context: Any) -> str:
    # an INSERT that sets only thread_id (e.g. a notebook's own ToolOutput(...)) gets its key
    return thread_key(context.get_current_parameters()["thread_id"])


class ToolOutput(Base):
    """One tool dispatch: who called what, with which arguments, and the full output."""

    __tablename__ = "tool_outputs"
    __table_args__ = (UniqueConstraint("thread_key", "tool_call_id", name="uq_thread_key_call"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    ref_id: Mapped[str] = mapped_column(String(64), unique=True, index=True)
    thread_id: Mapped[str] = mapped_column(Text)
    thread_key: Mapped[str] = mapped_column(String(64), index=True, default=_thread_key_default)
    tool_call_id: Mapped[str] = mapped_column(String(MAX_TOOL_CALL_ID_CHARS), index=True)
    provider_call_id: Mapped[str | None] = mapped_column(Text, nullable=True)
    tool_name: Mapped[str] = mapped_column(Text)
    tool_args: Mapped[str] = mapped_column(Text)  # JSON text, as the model sent it
    # the full output if it has at most CHUNK_CHARS characters; "" when it lives in chunks
    content: Mapped[str] = mapped_column(Text, deferred=True)
    n_chunks: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    n_chars: Mapped[int] = mapped_column(Integer)
    #: UTF-8 bytes of the output (``None`` for a row from before revision 0003 that the
    #: migration could not read)
    n_bytes: Mapped[int | None] = mapped_column(Integer, nullable=True)
    sha256: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(32), default=KIND_TOOL_OUTPUT, index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)


class ToolOutputChunk(Base):
    """A piece of a long output: ``CHUNK_CHARS`` characters (the last one may be shorter)."""

    __tablename__ = "tool_output_chunks"

    output_id: Mapped[int] = mapped_column(ForeignKey("tool_outputs.id"), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    content: Mapped[str] = mapped_column(Text)


class Thread(Base):
    """A conversation: its id (any text) and when it started."""

    __tablename__ = "threads"

    thread_key: Mapped[str] = mapped_column(String(64), primary_key=True)
    thread_id: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class ThreadMessage(Base):
    """One chat message of a thread, as sent to the model (JSON text), in order of ``id``."""

    __tablename__ = "thread_messages"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    thread_key: Mapped[str] = mapped_column(String(64), index=True)
    role: Mapped[str] = mapped_column(String(16))
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class CheckpointResult(Base):
    """One run of a hard-stop checkpoint: who ran it (``attendee``), which TODO, passed or not."""

    __tablename__ = "checkpoint_results"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    attendee: Mapped[str] = mapped_column(Text)
    notebook: Mapped[str] = mapped_column(String(8))
    todo: Mapped[int] = mapped_column(Integer)
    passed: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)


@dataclass(frozen=True)
class StoredOutput:
    """A row of ``tool_outputs`` as plain data. ``content`` is ``None`` when not loaded."""

    id: int
    ref_id: str
    thread_id: str
    tool_call_id: str
    tool_name: str
    tool_args: str
    n_chars: int
    sha256: str
    kind: str
    created_at: datetime
    content: str | None = None
    provider_call_id: str | None = None
    n_bytes: int | None = None  # UTF-8 bytes of the output

    @property
    def args(self) -> Any:
        """``tool_args`` parsed from JSON (the raw text if it is not valid JSON)."""
        try:
            return json.loads(self.tool_args)
        except ValueError:
            return self.tool_args


def _to_record(row: ToolOutput, content: str | None) -> StoredOutput:
    return StoredOutput(
        id=row.id,
        ref_id=row.ref_id,
        thread_id=row.thread_id,
        tool_call_id=row.tool_call_id,
        tool_name=row.tool_name,
        tool_args=row.tool_args,
        n_chars=row.n_chars,
        sha256=row.sha256,
        kind=row.kind,
        created_at=as_utc(row.created_at),
        content=content,
        provider_call_id=row.provider_call_id,
        n_bytes=row.n_bytes,
    )


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


def _chunks(text: str) -> list[str]:
    """``text`` in pieces of :data:`CHUNK_CHARS` characters when it is longer than one piece
    (stored in ``tool_output_chunks``), else ``[]`` (stored in the row itself)."""
    if len(text) <= CHUNK_CHARS:
        return []
    return [text[i : i + CHUNK_CHARS] for i in range(0, len(text), CHUNK_CHARS)]


class ToolOutputStore:
    """Persist tool outputs and read them back, whole or in character ranges.

    Args:
        url: a SQLAlchemy database URL; default :func:`default_db_url`. A SQLite file's folder is
            created if missing (mode 0700), the file itself with mode 0600; an existing file of
            the current user, and its ``-wal``/``-shm``/``-journal`` files, are made 0600.
        busy_timeout_ms: how long a SQLite writer waits for a lock before raising
            ``sqlalchemy.exc.OperationalError`` ("database is locked").

    The tables are created if they do not exist, so a store opened again on the same file (a
    kernel restart, a new process) sees every row written before; a database made by an earlier
    version is upgraded through Alembic (:mod:`helpers.store.migrations`), and ``migrated`` says what
    was done (``current``, ``created`` or ``upgraded from <revision>``).

    Raises:
        ValueError: a SQLite URL names a file that is not a SQLite database, or another
            application's database (it is left as it was, mode included:
            :func:`refuse_non_sqlite_file`).
    """

    def __init__(self, url: str | None = None, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS):
        self.url = url or default_db_url()
        db_file = sqlite_file(self.url)
        if db_file is not None:
            refuse_non_sqlite_file(db_file)
            _private_sqlite_files(db_file, create=True)
        self.engine = make_engine(self.url, busy_timeout_ms=busy_timeout_ms)
        ensure_own_schema(self.engine)
        # Alembic: create the tables, or upgrade a database from an earlier version
        self.migrated = migrate(self.engine, Base.metadata)
        if db_file is not None:
            _private_sqlite_files(db_file)  # the -wal/-shm files that WAL mode has just made
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    def __repr__(self) -> str:
        return f"ToolOutputStore({self.engine.url.render_as_string(hide_password=True)!r})"

    def close(self) -> None:
        """Release the connection pool (the data stays on disk)."""
        self.engine.dispose()

    # -- writing --------------------------------------------------------------------------------

    def log_tool(
        self,
        thread_id: str,
        tool_call_id: str,
        tool_name: str,
        tool_args: Mapping[str, Any] | str,
        tool_output: str,
        *,
        kind: str = KIND_TOOL_OUTPUT,
        provider_call_id: str | None = None,
        max_thread_bytes: int | None = None,
    ) -> StoredOutput:
        """Persist one dispatch and return its row (without ``content``).

        Args:
            thread_id: the conversation the call belongs to (any text, any length).
            tool_call_id: the id of the call (``call_…``); unique within the thread. The agent
                gives every call an id of its own (:func:`helpers.loop.records.new_tool_call_id`).
            tool_name: the tool that ran.
            tool_args: the arguments as the model sent them: a mapping (stored as JSON text) or
                JSON text already.
            tool_output: the full output, any length.
            provider_call_id: the id the provider gave the call, if any (kept for reference).
            max_thread_bytes: the thread's quota: the most UTF-8 bytes of arguments and output
                all its rows may hold, this one included (checked in the same transaction as
                the write);
                ``None``, no quota (:class:`helpers.base.limits.TurnLimits` gives the agent's).

        Raises:
            DuplicateToolCallError: ``tool_call_id`` is already logged in ``thread_id``.
            StoreQuotaExceeded: the arguments and output would pass ``max_thread_bytes``;
                nothing is stored.
            TypeError: ``tool_output`` is not a string.
            ValueError: ``tool_call_id`` is empty or longer than 255 characters, or the output
                holds a NUL character and the database is PostgreSQL.
        """
        self._check_loggable(tool_call_id, tool_output)
        args_text = (
            tool_args if isinstance(tool_args, str) else json.dumps(tool_args, ensure_ascii=False)
        )
        encoded = tool_output.encode("utf-8", "surrogatepass")
        chunks = _chunks(tool_output)
        row = ToolOutput(
            ref_id=ids.argument_safe_token(REF_ID_BYTES),
            thread_id=thread_id,
            thread_key=thread_key(thread_id),
            tool_call_id=tool_call_id,
            provider_call_id=provider_call_id,
            tool_name=tool_name,
            tool_args=args_text,
            content="" if chunks else tool_output,
            n_chunks=len(chunks),
            n_chars=len(tool_output),
            n_bytes=len(encoded),
            sha256=ids.content_sha256(tool_output),
            kind=kind,
            created_at=datetime.now(UTC),
        )
        try:
            with self._sessions.begin() as session:
                if max_thread_bytes is not None:
                    adding = len(encoded) + len(args_text.encode("utf-8", "surrogatepass"))
                    self._check_quota(session, thread_id, adding, max_thread_bytes)
                session.add(row)
                if chunks:
                    session.flush()  # assigns row.id
                    session.execute(
                        insert(ToolOutputChunk),
                        [
                            {"output_id": row.id, "seq": i, "content": c}
                            for i, c in enumerate(chunks)
                        ],
                    )
        except IntegrityError as exc:
            if self.get(thread_id, tool_call_id) is not None:
                raise DuplicateToolCallError(
                    f"tool_call_id {tool_call_id!r} is already logged in thread {thread_id!r}"
                ) from exc
            raise
        return _to_record(row, None)

    def _check_loggable(self, tool_call_id: str, tool_output: str) -> None:
        """Raise what :meth:`log_tool` raises for an output or id it cannot store."""
        if not isinstance(tool_output, str):
            raise TypeError(f"tool_output must be str, got {type(tool_output).__name__}")
        if not tool_call_id or len(tool_call_id) > MAX_TOOL_CALL_ID_CHARS:
            raise ValueError(
                f"tool_call_id must be 1-{MAX_TOOL_CALL_ID_CHARS} characters, "
                f"got {len(tool_call_id)}"
            )
        if "\x00" in tool_output and self.engine.dialect.name == "postgresql":
            raise ValueError(
                "PostgreSQL TEXT cannot hold NUL characters; this output has one "
                "(SQLite stores it fine)"
            )

    def _check_quota(self, session: Any, thread_id: str, adding: int, quota: int) -> None:
        """Raise :class:`StoreQuotaExceeded` if ``adding`` more bytes would pass the thread's
        ``quota`` (UTF-8 bytes of arguments and outputs), in the write's own transaction.

        The check and the write are one serialised step, so writers at once (six kernels on
        one thread) cannot each see room for their output and pass the quota together: on
        SQLite the transaction begins ``IMMEDIATE`` (it holds the database's write lock before
        it reads the total; sqlite.org/lang_transaction.html), on PostgreSQL it locks the
        store's ``tool_outputs`` table against other writers until it commits (``SHARE ROW
        EXCLUSIVE``; readers go on). Not an advisory lock: its key is open to every role of the
        database, so another attendee of a room could hold it."""
        connection = session.connection()
        if connection.dialect.name == "sqlite":
            if not connection.connection.dbapi_connection.in_transaction:
                connection.exec_driver_sql("BEGIN IMMEDIATE")
        elif connection.dialect.name == "postgresql":
            table = connection.dialect.identifier_preparer.format_table(ToolOutput.__table__)
            connection.exec_driver_sql(f"LOCK TABLE {table} IN SHARE ROW EXCLUSIVE MODE")

        held = self._bytes_held(session, thread_id)
        if held + adding > quota:
            raise StoreQuotaExceeded(
                f"the thread holds {held:,} bytes of tool calls and outputs; {adding:,} more "
                f"would pass its quota of {quota:,} bytes, so this call and its output were not "
                "stored"
            )

    @staticmethod
    def _bytes_held(session: Any, thread_id: str) -> int:
        if session.get_bind().dialect.name == "sqlite":  # length() of a BLOB counts bytes
            args_bytes = func.length(cast(ToolOutput.tool_args, LargeBinary))
        else:  # PostgreSQL (and SQL's standard name)
            args_bytes = func.octet_length(ToolOutput.tool_args)
        output_bytes = func.coalesce(ToolOutput.n_bytes, ToolOutput.n_chars)
        total = session.scalar(
            select(func.coalesce(func.sum(output_bytes + func.coalesce(args_bytes, 0)), 0)).where(
                ToolOutput.thread_key == thread_key(thread_id)
            )
        )
        return int(total or 0)

    def thread_bytes(self, thread_id: str) -> int:
        """UTF-8 bytes the thread holds: its calls' arguments and their outputs (the rows'
        ``n_bytes``; rows from before that column count their characters)."""
        with self._sessions() as session:
            return self._bytes_held(session, thread_id)

    # -- looking up -----------------------------------------------------------------------------

    def get(
        self, thread_id: str, tool_call_id: str, *, with_content: bool = False
    ) -> StoredOutput | None:
        """The row of ``tool_call_id`` in ``thread_id``, or ``None``."""
        stmt = select(ToolOutput).where(
            ToolOutput.thread_key == thread_key(thread_id), ToolOutput.tool_call_id == tool_call_id
        )
        return self._one(stmt, with_content)

    def list_by_call_id(
        self, tool_call_id: str, *, with_content: bool = False
    ) -> list[StoredOutput]:
        """Every row with ``tool_call_id``, in any thread (ids are unique per thread only)."""
        with self._sessions() as session:
            rows = session.scalars(
                select(ToolOutput).where(ToolOutput.tool_call_id == tool_call_id)
            ).all()
            return [
                _to_record(r, self._content(session, r) if with_content else None) for r in rows
            ]

    def get_by_ref(self, ref_id: str, *, with_content: bool = False) -> StoredOutput | None:
        """The row an opaque reference ``internal://<ref_id>`` names, or ``None``."""
        return self._one(select(ToolOutput).where(ToolOutput.ref_id == ref_id), with_content)

    def _one(self, stmt: Any, with_content: bool) -> StoredOutput | None:
        with self._sessions() as session:
            row = session.scalars(stmt).first()
            if row is None:
                return None
            return _to_record(row, self._content(session, row) if with_content else None)

    def list_thread(self, thread_id: str) -> list[StoredOutput]:
        """The rows of a thread in the order they were written (without ``content``)."""
        with self._sessions() as session:
            rows = session.scalars(
                select(ToolOutput)
                .where(ToolOutput.thread_key == thread_key(thread_id))
                .order_by(ToolOutput.id)
            ).all()
            return [_to_record(r, None) for r in rows]

    def ref_ids(self, thread_id: str) -> list[str]:
        """The reference ids of every output of a thread (what ``internal://<id>`` may name)."""
        with self._sessions() as session:
            return list(
                session.scalars(
                    select(ToolOutput.ref_id).where(ToolOutput.thread_key == thread_key(thread_id))
                ).all()
            )

    def count(self, thread_id: str | None = None) -> int:
        """Number of rows, in one thread or in all."""
        stmt = select(func.count(ToolOutput.id))
        if thread_id is not None:
            stmt = stmt.where(ToolOutput.thread_key == thread_key(thread_id))
        with self._sessions() as session:
            return int(session.scalar(stmt) or 0)

    # -- reading values -------------------------------------------------------------------------

    @staticmethod
    def _content(session: Any, row: ToolOutput) -> str:
        if not row.n_chunks:
            return row.content
        pieces = session.scalars(
            select(ToolOutputChunk.content)
            .where(ToolOutputChunk.output_id == row.id)
            .order_by(ToolOutputChunk.seq)
        ).all()
        return "".join(pieces)

    def read_all(self, row_id: int) -> str:
        """The full output of row ``row_id``. Raises ``KeyError`` if there is no such row."""
        with self._sessions() as session:
            row = session.get(ToolOutput, row_id)
            if row is None:
                raise KeyError(f"no tool output with id {row_id}")
            return self._content(session, row)

    def read_range(self, row_id: int, start: int, length: int) -> str:
        """Characters ``[start, start + length)`` of row ``row_id``'s output, read in SQL.

        ``start`` is zero-based and must already be non-negative (callers turn a negative start
        into ``n_chars + start``); a range past the end is cut, as Python slicing does. Units are
        characters, not bytes, on SQLite and PostgreSQL alike. A value with a NUL character is
        sliced in Python (SQLite's ``substr`` stops at NUL).

        Raises:
            ValueError: ``start`` or ``length`` is negative.
            KeyError: there is no such row.
        """
        if start < 0 or length < 0:
            raise ValueError(f"start and length must be >= 0, got start={start}, length={length}")
        with self._sessions() as session:
            meta = session.execute(
                select(ToolOutput.n_chars, ToolOutput.n_chunks).where(ToolOutput.id == row_id)
            ).first()
            if meta is None:
                raise KeyError(f"no tool output with id {row_id}")
            n_chars, n_chunks = meta
            end = min(start + length, n_chars)
            if start >= end:
                return ""
            if n_chunks:
                first, last = start // CHUNK_CHARS, (end - 1) // CHUNK_CHARS
                pieces = session.scalars(
                    select(ToolOutputChunk.content)
                    .where(
                        ToolOutputChunk.output_id == row_id,
                        ToolOutputChunk.seq.between(first, last),
                    )
                    .order_by(ToolOutputChunk.seq)
                ).all()
                offset = start - first * CHUNK_CHARS
                return "".join(pieces)[offset : offset + (end - start)]
            value = session.scalar(
                select(func.substr(ToolOutput.content, start + 1, length)).where(
                    ToolOutput.id == row_id
                )
            )
        if len(value or "") != end - start:
            # SQLite's substr() stops at an embedded NUL character; such values are rare, and
            # for them we slice in Python instead.
            value = self.read_all(row_id)[start:end]
        return value or ""

    # -- housekeeping ---------------------------------------------------------------------------

    def prune(
        self,
        *,
        older_than: timedelta | datetime | None = None,
        thread_id: str | None = None,
        dry_run: bool = False,
    ) -> int:
        """Delete rows older than an age (or a moment) and/or of one thread; return how many.

        Args:
            older_than: a ``timedelta`` (rows created longer ago than that) or an aware
                ``datetime`` (rows created before it).
            thread_id: only rows of this thread.
            dry_run: count the rows that would go, and delete nothing.

        Raises:
            ValueError: neither filter was given (pruning everything must be explicit:
                use ``older_than=timedelta(0)``).
        """
        if older_than is None and thread_id is None:
            raise ValueError("prune needs older_than and/or thread_id")
        doomed = select(ToolOutput.id)
        if older_than is not None:
            cutoff = (
                datetime.now(UTC) - older_than if isinstance(older_than, timedelta) else older_than
            )
            if self.engine.dialect.name == "sqlite":
                cutoff = cutoff.astimezone(UTC).replace(tzinfo=None)
            doomed = doomed.where(ToolOutput.created_at < cutoff)
        if thread_id is not None:
            doomed = doomed.where(ToolOutput.thread_key == thread_key(thread_id))
        if dry_run:
            with self._sessions() as session:
                return int(session.scalar(select(func.count()).select_from(doomed.subquery())) or 0)
        with self._sessions.begin() as session:
            session.execute(delete(ToolOutputChunk).where(ToolOutputChunk.output_id.in_(doomed)))
            result = session.execute(delete(ToolOutput).where(ToolOutput.id.in_(doomed)))
            if thread_id is not None and older_than is None:  # the whole thread is forgotten
                key = thread_key(thread_id)
                session.execute(delete(ThreadMessage).where(ThreadMessage.thread_key == key))
                session.execute(delete(Thread).where(Thread.thread_key == key))
            return int(result.rowcount or 0)

    def disk_bytes(self) -> int | None:
        """Bytes the store takes on disk: a SQLite database file and its ``-wal`` file together;
        ``None`` for another database (a server's files are its own)."""
        db_file = sqlite_file(self.url)
        if db_file is None:
            return None
        files = (db_file, db_file.with_name(db_file.name + "-wal"))
        return sum(f.stat().st_size for f in files if f.exists())

    def reclaim_disk(self) -> None:
        """Give the space of deleted rows back to the file system (measure it with
        :meth:`disk_bytes` before :meth:`prune` and after this).

        Deleting rows frees pages inside the database, not on disk: a SQLite file keeps its size
        and its write-ahead log grows with the deletion itself. On SQLite this runs ``VACUUM``
        (the file is rewritten without its free pages) and ``PRAGMA wal_checkpoint(TRUNCATE)``
        (the log is copied in and cut to zero bytes) (https://sqlite.org/lang_vacuum.html,
        https://sqlite.org/pragma.html#pragma_wal_checkpoint). Elsewhere (PostgreSQL) it does
        nothing: the server reuses freed space itself (autovacuum), and only ``VACUUM FULL``, a
        table lock the workbook does not take, would shrink its files.

        Raises:
            sqlalchemy.exc.OperationalError: another connection holds a transaction open.
        """
        if sqlite_file(self.url) is None:
            return
        with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.exec_driver_sql("VACUUM")
            connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")

    # -- threads and their messages ---------------------------------------------------------

    def thread_exists(self, thread_id: str) -> bool:
        """Whether anything was stored under ``thread_id``: the thread itself (its messages) or,
        in a database from before threads were stored, a tool output."""
        key = thread_key(thread_id)
        with self._sessions() as session:
            if session.get(Thread, key) is not None:
                return True
            found = session.scalar(select(ToolOutput.id).where(ToolOutput.thread_key == key))
            return found is not None

    def ensure_thread(self, thread_id: str) -> bool:
        """Record ``thread_id`` as a thread if it is not one yet; return whether it was new."""
        key = thread_key(thread_id)
        with self._sessions() as session:
            if session.get(Thread, key) is not None:
                return False
        try:
            with self._sessions.begin() as session:
                session.add(Thread(thread_key=key, thread_id=thread_id, created_at=_now()))
        except IntegrityError:  # another process started it a moment ago
            return False
        return True

    def append_message(self, thread_id: str, message: Mapping[str, Any]) -> None:
        """Add one chat message (any JSON-serialisable mapping) to the end of a thread."""
        body = json.dumps(dict(message), ensure_ascii=True, default=str)
        with self._sessions.begin() as session:
            session.add(
                ThreadMessage(
                    thread_key=thread_key(thread_id),
                    role=str(message.get("role", ""))[:16],
                    body=body,
                    created_at=_now(),
                )
            )

    def thread_messages(self, thread_id: str) -> list[dict[str, Any]]:
        """Every message of a thread, in the order it was added (empty for an unknown thread)."""
        with self._sessions() as session:
            bodies = session.scalars(
                select(ThreadMessage.body)
                .where(ThreadMessage.thread_key == thread_key(thread_id))
                .order_by(ThreadMessage.id)
            ).all()
        return [json.loads(body) for body in bodies]

    def thread_summaries(self, limit: int = 50) -> list[dict[str, Any]]:
        """The threads with logged outputs, most recent first: ``thread_id``, ``outputs``,
        ``chars`` and ``bytes`` (summed) and ``last`` (when the latest output was logged)."""
        stmt = (
            select(
                ToolOutput.thread_key,
                func.min(ToolOutput.thread_id),
                func.count(ToolOutput.id),
                func.sum(ToolOutput.n_chars),
                func.sum(ToolOutput.n_bytes),
                func.max(ToolOutput.created_at),
            )
            .group_by(ToolOutput.thread_key)
            .order_by(func.max(ToolOutput.created_at).desc())
            .limit(limit)
        )
        with self._sessions() as session:
            return [
                {
                    "thread_id": thread_id,
                    "outputs": outputs,
                    "chars": chars or 0,
                    "bytes": n_bytes or 0,
                    "last": as_utc(last) if last else None,
                }
                for _key, thread_id, outputs, chars, n_bytes, last in session.execute(stmt).all()
            ]

    def last_thread(self) -> str | None:
        """The id of the thread that was written to last (its newest message is the newest of
        all), or ``None`` when no thread holds a message."""
        with self._sessions() as session:
            return session.scalar(
                select(Thread.thread_id)
                .join(ThreadMessage, ThreadMessage.thread_key == Thread.thread_key)
                .order_by(ThreadMessage.id.desc())
                .limit(1)
            )

    def list_threads(self, limit: int = 20) -> list[str]:
        """The ids of the most recently started threads, newest first."""
        with self._sessions() as session:
            return list(
                session.scalars(
                    select(Thread.thread_id).order_by(Thread.created_at.desc()).limit(limit)
                ).all()
            )

    # -- checkpoints ----------------------------------------------------------------------------

    def log_checkpoint(self, attendee: str, notebook: str, todo: int, *, passed: bool) -> None:
        """Record one checkpoint run of ``attendee`` (any text) on TODO ``todo`` of notebook
        ``notebook`` (``"04"``)."""
        with self._sessions.begin() as session:
            session.add(
                CheckpointResult(
                    attendee=attendee,
                    notebook=notebook,
                    todo=todo,
                    passed=passed,
                    created_at=_now(),
                )
            )

    def checkpoint_progress(self) -> dict[str, dict[str, Any]]:
        """Per attendee: ``passed`` (the ``"NN.T"`` TODOs whose checkpoint passed at least
        once, sorted), ``runs`` (checkpoint runs in all) and ``last`` (the newest run's time)."""
        with self._sessions() as session:
            rows = session.execute(
                select(
                    CheckpointResult.attendee,
                    CheckpointResult.notebook,
                    CheckpointResult.todo,
                    CheckpointResult.passed,
                    CheckpointResult.created_at,
                ).order_by(CheckpointResult.id)
            )
            return checkpoint_summary(rows)


def _now() -> datetime:
    return datetime.now(UTC)
