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
:func:`room_progress` reads each schema *logged in as its attendee*, in a process of its own
(:mod:`helpers.course.room_reader`) with a memory cap, from real tables only, with a statement
timeout and a row cap, and attributes every row to the schema's owner.

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
import time
import warnings
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from helpers.course.room_reader import (
    READERS,
    Read,
    read_attendees,
)

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
#: idle connection on PostgreSQL (one per operation, :func:`helpers.store.database.make_engine`),
#: so this bounds what an attendee's kernels and terminal do *at once*, not how many are open.
#: PostgreSQL checks it only once a session has logged in (its docs, CREATE ROLE), so it cannot
#: bound connections that stall before: :data:`ATTENDEE_SOCKET_CAP` does.
ATTENDEE_CONNECTION_LIMIT = 3
#: Connections one attendee's Linux user may hold open to PostgreSQL's port at once, in any state
#: (opened, stalled before or at the password exchange, logged in): the firewall's per-user cap
#: (:mod:`helpers.course.room_firewall`), one more than her role may use, so the role's own
#: refusal ("too many connections for role") is what an honest attendee meets first.
ATTENDEE_SOCKET_CAP = ATTENDEE_CONNECTION_LIMIT + 1
#: Longest statement an attendee's role may run, in milliseconds (``statement_timeout``).
ATTENDEE_STATEMENT_TIMEOUT_MS = 30_000
#: Longest an attendee's session may sit idle inside a transaction, in milliseconds
#: (``idle_in_transaction_session_timeout``): a kernel stopped mid-transaction frees its locks.
ATTENDEE_IDLE_IN_TRANSACTION_MS = 60_000
#: ``room url`` commands the hub's hook runs at once, each holding one admin connection
#: (``ROOM_URL_AT_ONCE`` in ``deploy/jupyterhub_config.d/workbook.py``, which a test holds equal):
#: thirty spawns at once made seven at once without it.
HOOK_CONNECTIONS = 2
#: Connections the instructor's ``room progress`` holds at once: one per reader process, and
#: the admin's (to list the room; to end a session past its deadline).
PROGRESS_CONNECTIONS = READERS + 1
#: Connections the room needs beside its attendees: the hook's and the instructor's view.
ROOM_ADMIN_CONNECTIONS = HOOK_CONNECTIONS + PROGRESS_CONNECTIONS


def connection_budget(attendees: int) -> int:
    """Connections a room of ``attendees`` may open at once: each attendee's
    :data:`ATTENDEE_SOCKET_CAP` (a connection stalled at the password exchange holds a server
    slot too) plus :data:`ROOM_ADMIN_CONNECTIONS`. PostgreSQL's ``max_connections`` must be at
    least this plus its ``superuser_reserved_connections`` (``workbook room check`` compares
    them): 30 attendees need 125 + 3.

    Raises:
        ValueError: fewer than one attendee.
    """
    if attendees < 1:
        raise ValueError(f"a room needs at least one attendee, got {attendees}")
    return attendees * ATTENDEE_SOCKET_CAP + ROOM_ADMIN_CONNECTIONS


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


def libpq_url(room_url: str) -> str:
    """``room_url`` (a SQLAlchemy URL, ``postgresql+psycopg://…``, or libpq's ``postgresql://…``)
    as libpq's URI: the same user, password, host, port, database and parameters.

    Raises:
        ValueError: not a PostgreSQL URL.
    """
    parts = urlsplit(room_url)
    backend = parts.scheme.split("+", 1)[0]
    if backend not in ("postgresql", "postgres"):
        raise ValueError(f"a room needs a PostgreSQL URL, not {backend or room_url[:20]!r}")
    return urlunsplit(("postgresql", parts.netloc, parts.path, parts.query, ""))


def admin_connection(room_url: str) -> Any:
    """A psycopg connection with the room's admin URL, in a transaction until committed (use it
    as a context manager: commit on success, rollback on an error, closed after), running every
    statement with ``search_path`` = ``pg_catalog, pg_temp``: nothing an attendee creates (a
    function or operator in a schema the admin can see) is ever picked by name resolution
    (CVE-2018-1058's lesson; every object named here is schema-qualified). psycopg alone, not
    SQLAlchemy: ``workbook room url`` runs before every spawn and must start quickly.

    Raises:
        ValueError: ``room_url`` is not a PostgreSQL URL.
        psycopg.Error: the server cannot be reached, or refused the admin.
    """
    import psycopg

    return psycopg.connect(
        libpq_url(room_url), options="-c search_path=pg_catalog,pg_temp", connect_timeout=30
    )


def provision_attendee(room_url: str, name: str) -> str:
    """Make attendee ``name``'s role and the schema it owns in the room's database, or bring an
    existing one's settings up to date; ``room_url`` is the admin's URL (a role allowed to
    create roles, owning the database). Returns the attendee's store URL: their role and
    password, their schema first on ``search_path`` (the same scheme as ``room_url``).

    The password is made once per attendee and kept in :data:`ROOM_SCHEMA` (readable by the admin
    only): a second spawn, a named server or the hook run again gives the same URL, so a live
    kernel's next connection never fails for a changed password. The role gets
    :data:`ATTENDEE_CONNECTION_LIMIT`, :data:`ATTENDEE_STATEMENT_TIMEOUT_MS` and
    :data:`ATTENDEE_IDLE_IN_TRANSACTION_MS`, ``CONNECT`` on the room's database only (the
    database's ``PUBLIC`` grant is revoked: other databases are ``workbook room check``'s to
    report). Calls for the same room are serialised by a lock on :data:`ROOM_SCHEMA`'s table
    (no attendee can name it, unlike an advisory lock's key): thirty spawns at once make thirty
    roles, never a "role already exists".

    Raises:
        ValueError: ``room_url`` is not a PostgreSQL URL, or an empty name.
        psycopg.Error: the admin may not create roles or schemas.
    """
    import psycopg

    role = attendee_schema(name)
    for attempt in range(1, 4):  # first calls at once may race to make the room's own table
        try:
            password = _provision(room_url, role, name)
            break
        except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateObject):
            if attempt == 3:
                raise
        except psycopg.errors.InternalError_ as exc:  # "tuple concurrently updated"
            if attempt == 3 or "concurrently" not in str(exc):
                raise
        time.sleep(0.1 * attempt)
    parts = urlsplit(room_url)
    query = dict(parse_qsl(parts.query)) | {"options": f"-csearch_path={role}"}
    host = parts.netloc.rsplit("@", 1)[-1]
    netloc = f"{quote(role, safe='')}:{quote(password, safe='')}@{host}"
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query), ""))


#: The longest a ``room url`` call waits for another one, in milliseconds.
PROVISION_LOCK_MS = 30_000


def _provision(room_url: str, role: str, name: str) -> str:
    """:func:`provision_attendee`'s one transaction; returns the attendee's password."""
    from psycopg import sql

    quoted, room = sql.Identifier(role), sql.Identifier(ROOM_SCHEMA)
    with admin_connection(room_url) as db:
        db.execute(sql.SQL("SET LOCAL lock_timeout = {}").format(sql.Literal(PROVISION_LOCK_MS)))
        _ensure_room_schema(db)
        # one call at a time: a lock on the room's own table, which no attendee can name
        db.execute(sql.SQL("LOCK TABLE {}.attendees IN SHARE ROW EXCLUSIVE MODE").format(room))
        found = db.execute(
            sql.SQL("SELECT password FROM {}.attendees WHERE role = %s").format(room), (role,)
        ).fetchone()
        password = found[0] if found else secrets.token_urlsafe(24)
        if found is None:
            db.execute(
                sql.SQL(
                    "INSERT INTO {}.attendees (role, name, password) VALUES (%s, %s, %s)"
                ).format(room),
                (role, name, password),
            )
        exists = db.execute("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = %s", (role,))
        verb = sql.SQL("ALTER" if exists.fetchone() else "CREATE")
        db.execute(
            sql.SQL(
                "{} ROLE {} LOGIN NOINHERIT NOCREATEDB NOCREATEROLE CONNECTION LIMIT {} PASSWORD {}"
            ).format(verb, quoted, sql.Literal(ATTENDEE_CONNECTION_LIMIT), sql.Literal(password))
        )
        admin, database = db.execute("SELECT current_user, current_database()").fetchone()
        for statement in (
            "GRANT {role} TO {admin}",  # to give them the schema; to end a session that hangs
            "REVOKE CONNECT ON DATABASE {database} FROM PUBLIC",
            "GRANT CONNECT ON DATABASE {database} TO {role}",
            "CREATE SCHEMA IF NOT EXISTS {role} AUTHORIZATION {role}",
        ):
            db.execute(
                sql.SQL(statement).format(
                    role=quoted, admin=sql.Identifier(admin), database=sql.Identifier(database)
                )
            )
        for setting, value in (
            ("search_path", role),
            ("statement_timeout", ATTENDEE_STATEMENT_TIMEOUT_MS),
            ("idle_in_transaction_session_timeout", ATTENDEE_IDLE_IN_TRANSACTION_MS),
        ):
            db.execute(
                sql.SQL("ALTER ROLE {} SET {} = {}").format(
                    quoted, sql.Identifier(setting), sql.Literal(str(value))
                )
            )
    return password


def _ensure_room_schema(db: Any) -> None:
    """Make :data:`ROOM_SCHEMA` and its table the first time (nothing is changed later: a
    second ``REVOKE`` from calls at once would race on the catalog's row)."""
    from psycopg import sql

    table = f"{ROOM_SCHEMA}.attendees"
    if db.execute("SELECT pg_catalog.to_regclass(%s)", (table,)).fetchone()[0] is not None:
        return
    room = sql.Identifier(ROOM_SCHEMA)
    db.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(room))
    db.execute(sql.SQL("REVOKE ALL ON SCHEMA {} FROM PUBLIC").format(room))
    db.execute(
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {}.attendees (role text PRIMARY KEY, "
            "name text NOT NULL, password text NOT NULL, "
            "created_at timestamptz NOT NULL DEFAULT pg_catalog.now())"
        ).format(room)
    )


def record_checkpoint(notebook: str, todo: int, *, passed: bool) -> None:
    """Record a checkpoint run of this kernel's attendee in their store (``WORKBOOK_DB_URL``, or
    the default SQLite file). Never stops a checkpoint: a store that cannot be written is
    reported once, as a warning."""
    global _warned
    from helpers.store.database import default_db_url
    from helpers.store.tool_outputs import ToolOutputStore

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
        runs: checkpoint runs read (at most ``room_reader.PROGRESS_ROW_CAP``).
        last: the newest run's time (UTC), or ``None``.
        threads: their threads (at most ``room_reader.PROGRESS_ROW_CAP``).
        capped: more rows than the cap: ``runs`` or ``threads`` is a lower bound.
        error: why this attendee's schema could not be read (a view or an altered table where a
            table was, a timeout, a dropped connection), or ``None``; the rest of the room is read
            all the same. An attendee who has run no checkpoint yet (her store's tables not made
            yet, or no row) is no error: her ``passed`` is empty.
    """

    schema: str
    attendee: str
    passed: list[str] = field(default_factory=list)
    runs: int = 0
    last: datetime | None = None
    threads: int = 0
    capped: bool = False
    error: str | None = None

    @property
    def state(self) -> str:
        """``"not read"`` (see ``error``), ``"nothing yet"`` (no TODO passed yet, whether or not
        a checkpoint ran) or ``"passed"`` (at least one TODO passed)."""
        if self.error:
            return "not read"
        return "passed" if self.passed else "nothing yet"


def room_progress(room_url: str) -> dict[str, AttendeeProgress]:
    """Every attendee of the room's database, read with the admin's URL ``room_url``, without
    changing anything and without running anything of an attendee's with any rights but
    theirs: ``{schema: progress}``. An attendee with no checkpoint run yet (no table, or no
    row) has an empty line, no error: nothing passed yet is a state.

    Only schemas named as :func:`attendee_schema` names them (:data:`SCHEMA_RE`) and owned by the
    role of that name count. The admin only lists them, with each attendee's name and password
    (:data:`ROOM_SCHEMA`); each attendee is then read *logged in as that attendee*, by reader
    processes (:mod:`helpers.course.room_reader`: ``READERS`` of them, each reading one
    attendee after another, its memory capped, so what her code sends back costs her line,
    never the view): an index predicate, a policy or a view of theirs that runs runs as
    them, with nothing above them to ``RESET ROLE`` to (a ``SET LOCAL ROLE`` from the admin's
    session would leave the admin one statement away). The session is read-only, with
    ``row_security`` off, ``search_path`` ``pg_catalog``, a statement timeout of
    :data:`helpers.course.room_reader.PROGRESS_STATEMENT_TIMEOUT_MS`, at most
    :data:`helpers.course.room_reader.PROGRESS_ROW_CAP` rows, and a deadline
    of :data:`helpers.course.room_reader.PROGRESS_DEADLINE_S` that the admin enforces by
    ending the session. Only an
    ordinary table (``relkind`` ``r``, read with ``ONLY``) whose columns have the built-in types
    the store writes is read: anything else is that attendee's :attr:`AttendeeProgress.error`.

    Raises:
        ValueError: ``room_url`` is not a PostgreSQL URL.
        psycopg.Error: the room's database cannot be read at all.
    """
    with admin_connection(room_url) as db:
        owned = db.execute(
            "SELECT n.nspname, r.rolname FROM pg_catalog.pg_namespace n "
            "JOIN pg_catalog.pg_roles r ON r.oid = n.nspowner "
            "WHERE pg_catalog.starts_with(n.nspname, %s)",
            (SCHEMA_PREFIX,),
        ).fetchall()
        recorded = recorded_attendees(db)
    schemas = sorted(s for s, owner in owned if s == owner and SCHEMA_RE.match(s))
    progress, reads = {}, []
    for schema in schemas:
        name, password = recorded.get(schema, (schema, None))
        line = progress[schema] = AttendeeProgress(schema=schema, attendee=name)
        if password is None:
            line.error = "not made by workbook room url (no password recorded): not read"
        else:
            reads.append(Read(schema, password))
    read_attendees(libpq_url(room_url), reads, end_session=lambda pid: _end_session(room_url, pid))
    for read in reads:
        said = read.line or {}
        line = progress[read.schema]
        line.passed, line.runs = said.get("passed", []), said.get("runs", 0)
        line.threads, line.capped = said.get("threads", 0), said.get("capped", False)
        line.last = datetime.fromisoformat(said["last"]) if said.get("last") else None
        line.error = said.get("error") if read.line else "not read"
    return progress


def recorded_attendees(db: Any) -> dict[str, tuple[str, str]]:
    """``{role: (name, password)}`` of :data:`ROOM_SCHEMA`'s table (empty before the first)."""
    from psycopg import sql

    table = f"{ROOM_SCHEMA}.attendees"
    if db.execute("SELECT pg_catalog.to_regclass(%s)", (table,)).fetchone()[0] is None:
        return {}
    query = sql.SQL("SELECT role, name, password FROM {}.attendees").format(
        sql.Identifier(ROOM_SCHEMA)
    )
    return {role: (name, password) for role, name, password in db.execute(query).fetchall()}


def _end_session(room_url: str, pid: int) -> None:
    """End an attendee's session (``pg_terminate_backend``, which no code of hers can catch)
    with the admin's URL."""
    with admin_connection(room_url) as db:
        db.execute("SELECT pg_catalog.pg_terminate_backend(%s)", (pid,))
