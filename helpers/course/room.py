"""A room: thirty attendees on one server (a JupyterHub), one PostgreSQL database for all.

Each attendee gets a PostgreSQL *role* of their own, owning a *schema* of the same name in the
room's database (:func:`provision_attendee`): their store lives there (the URL puts it first on
``search_path``), and PostgreSQL itself keeps attendees apart, because a role has no privilege on
a schema it does not own: another attendee's tables cannot be read, changed or dropped, whatever
SQL their kernel sends. The hub runs ``workbook room url NAME`` (with the room's admin URL) before
it starts each attendee's server and gives the printed URL to that server as ``WORKBOOK_DB_URL``
(``deploy/jupyterhub_config.d/workbook.py``); the admin role is made a member of every attendee
role, so the instructor reads the whole room.

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


def provision_attendee(room_url: str, name: str) -> str:
    """Make (or refresh) attendee ``name``'s role, with a new random password, and the schema
    it owns, in the room's database; ``room_url`` is the admin's URL (a role allowed to create
    roles). Returns the attendee's store URL: their role and password, their schema first on
    ``search_path``.

    Raises:
        ValueError: ``room_url`` is not a PostgreSQL URL, or an empty name.
        sqlalchemy.exc.SQLAlchemyError: the admin may not create roles or schemas.
    """
    from sqlalchemy import create_engine, text

    url = _postgresql(room_url)
    role = attendee_schema(name)  # a safe identifier (SCHEMA_RE): quoted below all the same
    password = secrets.token_urlsafe(24)
    engine = create_engine(url)
    try:
        with engine.begin() as db:
            exists = db.execute(text("SELECT 1 FROM pg_roles WHERE rolname = :r"), {"r": role})
            verb = "ALTER" if exists.first() else "CREATE"
            db.execute(text(f"{verb} ROLE \"{role}\" LOGIN NOINHERIT PASSWORD '{password}'"))
            admin = db.execute(text("SELECT current_user")).scalar_one()
            db.execute(text(f'GRANT "{role}" TO "{admin}"'))  # the instructor reads the room
            db.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{role}" AUTHORIZATION "{role}"'))
            db.execute(text(f'ALTER ROLE "{role}" SET search_path = "{role}"'))
    finally:
        engine.dispose()
    query = dict(url.query) | {"options": f"-csearch_path={role}"}
    own = url.set(username=role, password=password, query=query)
    return own.render_as_string(hide_password=False)


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


def room_progress(room_url: str) -> dict[str, dict[str, Any]]:
    """Every attendee of the room's database, read with the admin's URL ``room_url``, without
    changing anything: ``{schema: {"attendees": {attendee: {passed, runs, last}}, "threads":
    N}}``. Only schemas named as :func:`attendee_schema` names them (:data:`SCHEMA_RE`) and
    holding the store's tables count; anything else in the database is left alone.

    Raises:
        ValueError: ``room_url`` is not a PostgreSQL URL.
        sqlalchemy.exc.SQLAlchemyError: the database cannot be read.
    """
    from sqlalchemy import create_engine, text

    from helpers.tooling.store import checkpoint_summary

    engine = create_engine(_postgresql(room_url))
    progress: dict[str, dict[str, Any]] = {}
    try:
        with engine.connect() as db:
            found = db.execute(
                text(
                    "SELECT table_schema FROM information_schema.tables "
                    "WHERE table_name IN ('checkpoint_results', 'threads') "
                    "GROUP BY table_schema HAVING count(*) = 2 ORDER BY table_schema"
                )
            ).scalars()
            for schema in [s for s in found if SCHEMA_RE.match(s)]:
                rows = db.execute(
                    text(
                        "SELECT attendee, notebook, todo, passed, created_at "
                        f'FROM "{schema}".checkpoint_results ORDER BY id'
                    )
                )
                attendees = checkpoint_summary(rows)
                threads = db.execute(text(f'SELECT count(*) FROM "{schema}".threads')).scalar()
                progress[schema] = {"attendees": attendees, "threads": int(threads or 0)}
    finally:
        engine.dispose()
    return progress
