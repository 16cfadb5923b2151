"""A room: thirty attendees on one server (a JupyterHub), one PostgreSQL database for all.

Each attendee gets a PostgreSQL *role* of their own, owning a *schema* of the same name in the
room's database (:func:`provision_attendee`): their store lives there (the URL puts it first on
``search_path``), and PostgreSQL itself keeps attendees apart, because a role has no privilege on
a schema it does not own: another attendee's tables cannot be read, changed or dropped, whatever
SQL their kernel sends. The hub runs ``workbook room url NAME`` (with the room's admin URL) before
it starts each attendee's server and gives the printed URL to that server as ``WORKBOOK_DB_URL``
(``deploy/jupyterhub_config.d/workbook.py``).

Each attendee is bounded (:func:`provision_attendee`): a connection limit, a statement timeout
and an idle-in-transaction timeout on the role, so one attendee can neither hold the server's
connections nor a lock for long; the room's :func:`connection_budget` is what PostgreSQL's
``max_connections`` must cover (``workbook room check`` says so before the day). The admin role is
a member of every attendee role, but the instructor's view runs none of an attendee's objects:
:func:`room_progress` reads each schema *as its attendee* (``SET LOCAL ROLE``), from real tables
only, with a statement timeout and a row cap, and attributes every row to the schema's owner.

Every checkpoint run is recorded in the attendee's store (:func:`record_checkpoint`, called by
:meth:`helpers.course.checkpoint.Checkpoint.run`), and :func:`room_progress` reads every
attendee schema of the room for the instructor (``workbook room progress``), without changing
anything: which TODOs each attendee has passed.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import re
import secrets
import warnings
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.engine import make_url

#: The prefix of every attendee's role and schema in the room's database.
SCHEMA_PREFIX = "attendee_"
#: Hex characters of SHA-256 in every attendee's role and schema name (64 bits: no user name
#: can be picked to land on another's).
NAME_HASH_HEX = 16
#: Characters of the user name kept, readable, before the hash.
NAME_KEPT_CHARS = 30
#: An attendee's role and schema name, exactly: what :func:`attendee_schema` makes.
SCHEMA_RE = re.compile(
    rf"^{SCHEMA_PREFIX}[a-z0-9_]{{0,{NAME_KEPT_CHARS}}}_[0-9a-f]{{{NAME_HASH_HEX}}}$"
)
_UNSAFE = re.compile(r"[^a-z0-9_]")
#: The admin-only schema of the room's own bookkeeping: each attendee's hub name and password.
ROOM_SCHEMA = "workbook_room"
#: Connections one attendee's role may hold at once (``CONNECTION LIMIT``). The store holds no
#: idle connection on PostgreSQL (one per operation, :func:`helpers.tooling.store.make_engine`),
#: so this bounds what an attendee's kernels and terminal do *at once*, not how many are open.
ATTENDEE_CONNECTION_LIMIT = 3
#: Longest statement an attendee's role may run, in milliseconds (``statement_timeout``).
ATTENDEE_STATEMENT_TIMEOUT_MS = 30_000
#: Longest an attendee's session may sit idle inside a transaction, in milliseconds
#: (``idle_in_transaction_session_timeout``): a kernel stopped mid-transaction frees its locks.
ATTENDEE_IDLE_IN_TRANSACTION_MS = 60_000
#: Connections the room needs beside its attendees: the hub's ``room url`` calls (one at a time
#: per spawn, a few at once at the start) and the instructor's ``room progress``.
ROOM_ADMIN_CONNECTIONS = 5
#: Longest statement of the instructor's view of one attendee, in milliseconds.
PROGRESS_STATEMENT_TIMEOUT_MS = 5_000
#: The most checkpoint rows and threads read of one attendee (more are reported as capped).
PROGRESS_ROW_CAP = 50_000
#: Characters of a notebook name read back (the store writes two: ``"04"``).
PROGRESS_NOTEBOOK_CHARS = 8
#: The types the view reads each column as; a column of another type (an attendee's own type,
#: whose casts and operators would be theirs) makes the table unread.
_PROGRESS_COLUMNS = {
    "checkpoint_results": {
        "notebook": ("text", "character varying"),
        "todo": ("integer", "bigint", "smallint"),
        "passed": ("boolean",),
        "created_at": ("timestamp with time zone", "timestamp without time zone"),
    },
    "threads": {},
}


def connection_budget(attendees: int) -> int:
    """Connections a room of ``attendees`` may open at once: each attendee's
    :data:`ATTENDEE_CONNECTION_LIMIT` plus :data:`ROOM_ADMIN_CONNECTIONS`. PostgreSQL's
    ``max_connections`` must be at least this plus its ``superuser_reserved_connections``
    (``workbook room check`` compares them): 30 attendees need 95 + 3, within the default 100.

    Raises:
        ValueError: fewer than one attendee.
    """
    if attendees < 1:
        raise ValueError(f"a room needs at least one attendee, got {attendees}")
    return attendees * ATTENDEE_CONNECTION_LIMIT + ROOM_ADMIN_CONNECTIONS


_stores: dict[str, Any] = {}
_warned = False


def attendee_name() -> str:
    """Who runs this kernel: ``JUPYTERHUB_USER`` on a hub, else the login name."""
    return os.environ.get("JUPYTERHUB_USER") or getpass.getuser()


def attendee_schema(name: str) -> str:
    """The role and schema of attendee ``name`` (any text): ``attendee_``, the name's first
    characters in lower-case letters, digits and ``_``, and 16 hex characters of the SHA-256 of
    the whole name (so two names never share one, however chosen). Matches :data:`SCHEMA_RE`.

    Raises:
        ValueError: an empty name.
    """
    if not name:
        raise ValueError("an attendee needs a name")
    kept = _UNSAFE.sub("_", name.lower())[:NAME_KEPT_CHARS]
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:NAME_HASH_HEX]
    return f"{SCHEMA_PREFIX}{kept}_{digest}"


def _postgresql(room_url: str) -> Any:
    url = make_url(room_url)
    if url.get_backend_name() != "postgresql":
        raise ValueError(f"a room needs a PostgreSQL URL, not {url.get_backend_name()}")
    return url


def admin_engine(room_url: str) -> Any:
    """An engine for the room's admin URL that holds no idle connection (``NullPool``) and runs
    every statement with ``search_path`` = ``pg_catalog, pg_temp``: nothing an attendee creates
    (a function or operator in a schema the admin can see) is ever picked by name resolution
    (CVE-2018-1058's lesson; every object below is schema-qualified).

    Raises:
        ValueError: ``room_url`` is not a PostgreSQL URL.
    """
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    url = _postgresql(room_url)
    query = dict(url.query) | {"options": "-csearch_path=pg_catalog,pg_temp"}
    return create_engine(url.set(query=query), poolclass=NullPool)


def _quoted(identifier: str) -> str:
    if not SCHEMA_RE.match(identifier) and identifier != ROOM_SCHEMA:
        raise ValueError(f"not a room identifier: {identifier!r}")
    return f'"{identifier}"'


def provision_attendee(room_url: str, name: str) -> str:
    """Make attendee ``name``'s role and the schema it owns in the room's database, or bring an
    existing one's settings up to date; ``room_url`` is the admin's URL (a role allowed to
    create roles, owning the database). Returns the attendee's store URL: their role and
    password, their schema first on ``search_path``.

    The password is made once per attendee and kept in :data:`ROOM_SCHEMA` (readable by the admin
    only): a second spawn, a named server or the hook run again gives the same URL, so a live
    kernel's next connection never fails for a changed password. The role gets
    :data:`ATTENDEE_CONNECTION_LIMIT`, :data:`ATTENDEE_STATEMENT_TIMEOUT_MS` and
    :data:`ATTENDEE_IDLE_IN_TRANSACTION_MS`, ``CONNECT`` on the room's database only (the
    database's ``PUBLIC`` grant is revoked: other databases are ``workbook room check``'s to
    report). Calls for the same room are serialised (an advisory lock): thirty spawns at once
    make thirty roles, never a "role already exists".

    Raises:
        ValueError: ``room_url`` is not a PostgreSQL URL, or an empty name.
        sqlalchemy.exc.SQLAlchemyError: the admin may not create roles or schemas.
    """
    from sqlalchemy import text

    role = attendee_schema(name)
    quoted, room = _quoted(role), _quoted(ROOM_SCHEMA)
    engine = admin_engine(room_url)
    try:
        with engine.begin() as db:
            db.execute(text("SELECT pg_catalog.pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
            _ensure_room_schema(db)
            password = db.execute(
                text(f"SELECT password FROM {room}.attendees WHERE role = :role"), {"role": role}
            ).scalar()
            if password is None:
                password = secrets.token_urlsafe(24)
                db.execute(
                    text(
                        f"INSERT INTO {room}.attendees (role, name, password) VALUES (:r, :n, :p)"
                    ),
                    {"r": role, "n": name, "p": password},
                )
            exists = db.execute(
                text("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = :r"), {"r": role}
            ).first()
            verb = "ALTER" if exists else "CREATE"
            db.execute(
                text(
                    f"{verb} ROLE {quoted} LOGIN NOINHERIT NOCREATEDB NOCREATEROLE "
                    f"CONNECTION LIMIT {int(ATTENDEE_CONNECTION_LIMIT)} PASSWORD '{password}'"
                )
            )
            admin = db.execute(text("SELECT current_user")).scalar_one()
            database = db.execute(text("SELECT current_database()")).scalar_one()
            db.execute(text(f'GRANT {quoted} TO "{_plain(admin)}"'))  # SET ROLE for the view
            db.execute(text(f'REVOKE CONNECT ON DATABASE "{_plain(database)}" FROM PUBLIC'))
            db.execute(text(f'GRANT CONNECT ON DATABASE "{_plain(database)}" TO {quoted}'))
            db.execute(text(f"CREATE SCHEMA IF NOT EXISTS {quoted} AUTHORIZATION {quoted}"))
            for setting, value in (
                ("search_path", role),
                ("statement_timeout", int(ATTENDEE_STATEMENT_TIMEOUT_MS)),
                ("idle_in_transaction_session_timeout", int(ATTENDEE_IDLE_IN_TRANSACTION_MS)),
            ):
                db.execute(text(f"ALTER ROLE {quoted} SET {setting} = '{value}'"))
    finally:
        engine.dispose()
    url = _postgresql(room_url)
    query = dict(url.query) | {"options": f"-csearch_path={role}"}
    own = url.set(username=role, password=password, query=query)
    return own.render_as_string(hide_password=False)


#: The advisory lock that serialises :func:`provision_attendee` calls (any fixed 64-bit key).
_LOCK_KEY = int.from_bytes(hashlib.sha256(b"workbook room").digest()[:7], "big")


def _plain(identifier: str) -> str:
    """A role or database name PostgreSQL gave back, for a double-quoted identifier."""
    return identifier.replace('"', '""')


def _ensure_room_schema(db: Any) -> None:
    from sqlalchemy import text

    room = _quoted(ROOM_SCHEMA)
    db.execute(text(f"CREATE SCHEMA IF NOT EXISTS {room}"))
    db.execute(text(f"REVOKE ALL ON SCHEMA {room} FROM PUBLIC"))
    db.execute(
        text(
            f"CREATE TABLE IF NOT EXISTS {room}.attendees (role text PRIMARY KEY, "
            "name text NOT NULL, password text NOT NULL, "
            "created_at timestamptz NOT NULL DEFAULT pg_catalog.now())"
        )
    )


def record_checkpoint(notebook: str, todo: int, *, passed: bool) -> None:
    """Record a checkpoint run of this kernel's attendee in their store (``WORKBOOK_DB_URL``, or
    the default SQLite file). Never stops a checkpoint: a store that cannot be written is
    reported once, as a warning."""
    global _warned
    from helpers.tooling.store import ToolOutputStore, default_db_url

    url = default_db_url()
    try:
        store = _stores.get(url) or _stores.setdefault(url, ToolOutputStore(url))
        store.log_checkpoint(attendee_name(), notebook, todo, passed=passed)
    except Exception as exc:  # the room's record is a convenience; the checkpoint goes on
        if not _warned:
            _warned = True
            warnings.warn(f"checkpoint result not recorded: {type(exc).__name__}", stacklevel=2)


@dataclass
class AttendeeProgress:
    """One attendee's line of the instructor's view (:func:`room_progress`).

    Attributes:
        schema: the attendee's role and schema (:data:`SCHEMA_RE`).
        attendee: their hub name as the hub gave it to ``room url`` (the schema's name when the
            room has no record of it); every row of the schema is theirs, whatever a name column
            says.
        passed: the ``"NN.T"`` TODOs whose checkpoint passed at least once, sorted.
        runs: checkpoint runs read (at most :data:`PROGRESS_ROW_CAP`).
        last: the newest run's time (UTC), or ``None``.
        threads: their threads (at most :data:`PROGRESS_ROW_CAP`).
        capped: more rows than the cap: ``runs`` or ``threads`` is a lower bound.
        error: why this attendee's schema could not be read (a view or an altered table where a
            table was, a timeout, a dropped connection), or ``None``; the rest of the room is read
            all the same.
    """

    schema: str
    attendee: str
    passed: list[str] = field(default_factory=list)
    runs: int = 0
    last: datetime | None = None
    threads: int = 0
    capped: bool = False
    error: str | None = None


def room_progress(room_url: str) -> dict[str, AttendeeProgress]:
    """Every attendee of the room's database, read with the admin's URL ``room_url``, without
    changing anything and without running anything of an attendee's: ``{schema: progress}``.

    Only schemas named as :func:`attendee_schema` names them (:data:`SCHEMA_RE`) and owned by the
    role of that name count. Each is read in a transaction of its own on a connection of its own,
    ``SET LOCAL ROLE`` to its attendee (so whatever ran would have only their rights), with
    ``row_security`` off (a policy's function is refused, not run), a statement timeout of
    :data:`PROGRESS_STATEMENT_TIMEOUT_MS` and at most :data:`PROGRESS_ROW_CAP` rows. Only an
    ordinary table (``relkind`` ``r``, read with ``ONLY``) whose columns have the built-in types
    the store writes is read: a view, a partitioned or foreign table, or a column of the
    attendee's own type is that attendee's :attr:`AttendeeProgress.error`, never run.

    Raises:
        ValueError: ``room_url`` is not a PostgreSQL URL.
        sqlalchemy.exc.SQLAlchemyError: the room's database cannot be read at all.
    """
    from sqlalchemy import text

    engine = admin_engine(room_url)
    try:
        with engine.connect() as db:
            owned = db.execute(
                text(
                    "SELECT n.nspname, r.rolname FROM pg_catalog.pg_namespace n "
                    "JOIN pg_catalog.pg_roles r ON r.oid = n.nspowner "
                    "WHERE pg_catalog.starts_with(n.nspname, :prefix)"
                ),
                {"prefix": SCHEMA_PREFIX},
            ).all()
            names = _recorded_names(db)
        schemas = sorted(s for s, owner in owned if s == owner and SCHEMA_RE.match(s))
        return {s: _attendee_progress(engine, s, names.get(s, s)) for s in schemas}
    finally:
        engine.dispose()


def _recorded_names(db: Any) -> dict[str, str]:
    from sqlalchemy import text

    table = f"{ROOM_SCHEMA}.attendees"
    if db.execute(text("SELECT pg_catalog.to_regclass(:t)"), {"t": table}).scalar() is None:
        return {}
    return dict(db.execute(text(f"SELECT role, name FROM {_quoted(ROOM_SCHEMA)}.attendees")).all())


def _attendee_progress(engine: Any, schema: str, attendee: str) -> AttendeeProgress:
    from sqlalchemy import text
    from sqlalchemy.exc import SQLAlchemyError

    from helpers.tooling.store import checkpoint_summary

    line = AttendeeProgress(schema=schema, attendee=attendee)
    quoted = _quoted(schema)
    try:
        with engine.connect() as db, db.begin():
            for setting in (
                f"SET LOCAL statement_timeout = {int(PROGRESS_STATEMENT_TIMEOUT_MS)}",
                "SET LOCAL row_security = off",
                "SET LOCAL transaction_read_only = on",
                f"SET LOCAL ROLE {quoted}",
            ):
                db.execute(text(setting))
            refused = _unreadable(db, schema)
            if refused:
                line.error = refused
                return line
            rows = db.execute(
                text(
                    f"SELECT pg_catalog.left(notebook, {int(PROGRESS_NOTEBOOK_CHARS)}), todo, "
                    f"passed, created_at FROM ONLY {quoted}.checkpoint_results "
                    f"LIMIT {int(PROGRESS_ROW_CAP) + 1}"
                )
            ).all()
            threads = db.execute(
                text(
                    f"SELECT pg_catalog.count(*) FROM (SELECT 1 FROM ONLY {quoted}.threads "
                    f"LIMIT {int(PROGRESS_ROW_CAP) + 1}) AS t"
                )
            ).scalar_one()
    except SQLAlchemyError as exc:
        line.error = " ".join(str(getattr(exc, "orig", exc) or exc).split())[:300]
        return line
    line.capped = len(rows) > PROGRESS_ROW_CAP or threads > PROGRESS_ROW_CAP
    summary = checkpoint_summary((attendee, *row) for row in rows[:PROGRESS_ROW_CAP]).get(attendee)
    if summary:
        line.passed, line.runs, line.last = summary["passed"], summary["runs"], summary["last"]
    line.threads = min(int(threads), PROGRESS_ROW_CAP)
    return line


def _unreadable(db: Any, schema: str) -> str | None:
    """Why ``schema``'s store tables are not read (``None``: both are ordinary tables whose read
    columns have built-in types): read from the catalogs only."""
    from sqlalchemy import text

    for table, columns in _PROGRESS_COLUMNS.items():
        kind = db.execute(
            text(
                "SELECT c.relkind FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
                "ON n.oid = c.relnamespace WHERE n.nspname = :s AND c.relname = :t"
            ),
            {"s": schema, "t": table},
        ).scalar()
        if kind is None:
            return f"no {table} table yet"
        if kind != "r":
            return f"{table} is not a table (relkind {kind!r}): not read"
        types = dict(
            db.execute(
                text(
                    "SELECT a.attname, pg_catalog.format_type(a.atttypid, NULL) "
                    "FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c "
                    "ON c.oid = a.attrelid JOIN pg_catalog.pg_namespace n "
                    "ON n.oid = c.relnamespace WHERE n.nspname = :s AND c.relname = :t "
                    "AND a.attnum > 0 AND NOT a.attisdropped"
                ),
                {"s": schema, "t": table},
            ).all()
        )
        for column, allowed in columns.items():
            if types.get(column) not in allowed:
                return f"{table}.{column} is not as the store made it: not read"
    return None
