"""A room: thirty attendees on one server (a JupyterHub), one PostgreSQL database for all.

Each attendee's store is a PostgreSQL *schema* of its own in the room's database
(:func:`attendee_db_url`: the room's URL with ``search_path`` set to ``attendee_<name>``), so
their threads, outputs and references are kept apart by PostgreSQL itself: the same thread id in
two schemas is two threads, and no query of one attendee's kernel can name another's rows. The
hub gives each attendee's server that URL as ``WORKBOOK_DB_URL``
(``deploy/jupyterhub_config.d/workbook.py``).

Every checkpoint run is recorded in the attendee's store (:func:`record_checkpoint`, called by
:meth:`helpers.course.checkpoint.Checkpoint.run`), and :func:`room_progress` reads every
attendee schema of the room for the instructor (``workbook room progress``): which TODOs each
attendee has passed.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import re
import warnings
from typing import Any

from sqlalchemy.engine import make_url

#: The prefix of every attendee's schema in the room's database.
SCHEMA_PREFIX = "attendee_"
#: PostgreSQL's longest identifier, in bytes (NAMEDATALEN - 1).
MAX_IDENTIFIER_BYTES = 63
_UNSAFE = re.compile(r"[^a-z0-9_]")
_stores: dict[str, Any] = {}
_warned = False


def attendee_name() -> str:
    """Who runs this kernel: ``JUPYTERHUB_USER`` on a hub, else the login name."""
    return os.environ.get("JUPYTERHUB_USER") or getpass.getuser()


def attendee_schema(name: str) -> str:
    """The schema of attendee ``name`` (any text): ``attendee_`` and the name in lower-case
    letters, digits and ``_``; a name that had to change (or is too long) gets 8 hex characters
    of its SHA-256 too, so two names never share a schema.

    Raises:
        ValueError: an empty name.
    """
    if not name:
        raise ValueError("an attendee needs a name")
    safe = _UNSAFE.sub("_", name.lower())
    room = MAX_IDENTIFIER_BYTES - len(SCHEMA_PREFIX) - 9
    if safe != name or len(safe) > room:
        safe = f"{safe[:room]}_{hashlib.sha256(name.encode()).hexdigest()[:8]}"
    return SCHEMA_PREFIX + safe


def attendee_db_url(room_url: str, name: str) -> str:
    """The store URL of attendee ``name`` in the room's PostgreSQL database ``room_url``: its
    schema first on ``search_path``. The store creates the schema when it first opens
    (:func:`helpers.tooling.store.ensure_own_schema`).

    Raises:
        ValueError: ``room_url`` is not a PostgreSQL URL, or an empty name.
    """
    url = make_url(room_url)
    if url.get_backend_name() != "postgresql":
        raise ValueError(f"a room needs a PostgreSQL URL, not {url.get_backend_name()}")
    query = dict(url.query) | {"options": f"-csearch_path={attendee_schema(name)}"}
    return url.set(query=query).render_as_string(hide_password=False)


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
    """Every attendee of the room's database: ``{schema: {attendee: {passed, runs, last}}}``
    (:meth:`~helpers.tooling.store.ToolOutputStore.checkpoint_progress` of each schema), plus
    ``threads`` per schema. Reads only; an attendee who never ran a checkpoint shows with no
    attendee entry.

    Raises:
        ValueError: ``room_url`` is not a PostgreSQL URL.
    """
    from sqlalchemy import create_engine, text

    from helpers.tooling.store import ToolOutputStore

    if make_url(room_url).get_backend_name() != "postgresql":
        raise ValueError("a room needs a PostgreSQL URL")
    engine = create_engine(room_url)
    try:
        with engine.connect() as connection:
            schemas = connection.execute(
                text(
                    "SELECT schema_name FROM information_schema.schemata "
                    "WHERE schema_name LIKE :prefix ORDER BY schema_name"
                ),
                {"prefix": SCHEMA_PREFIX.replace("_", r"\_") + "%"},
            ).scalars()
            schemas = list(schemas)
    finally:
        engine.dispose()
    progress: dict[str, dict[str, Any]] = {}
    for schema in schemas:
        url = make_url(room_url)
        url = url.set(query=dict(url.query) | {"options": f"-csearch_path={schema}"})
        store = ToolOutputStore(url.render_as_string(hide_password=False))  # migrated if behind
        try:
            progress[schema] = {
                "attendees": store.checkpoint_progress(),
                "threads": len(store.list_threads(limit=1_000_000)),
            }
        finally:
            store.close()
    return progress
