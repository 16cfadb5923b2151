"""JupyterHub configuration for a room running the Context Relay Workbook.

The Littlest JupyterHub reads every ``*.py`` in ``/opt/tljh/config/jupyterhub_config.d/``; copy
this file there (deploy/README.md has the whole set-up). The hub gives each attendee's server:

- ``WORKBOOK_DB_URL``: the room's PostgreSQL database (``WORKBOOK_ROOM_URL`` in the hub's
  environment) with the attendee's own schema first on ``search_path``: one database for the
  room, each attendee's threads kept apart by PostgreSQL (the workbook's store creates the schema
  when it first opens);
- ``WORKBOOK_PROFILE=offline`` unless the room is given a model (``WORKBOOK_ROOM_PROFILE``).

The schema name follows ``helpers.course.room.attendee_schema`` exactly (a test holds the two
equal on generated names); it is written out here because the hub's Python does not have the
workbook installed.
"""

import hashlib
import os
import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

SCHEMA_PREFIX = "attendee_"
MAX_IDENTIFIER_BYTES = 63
_UNSAFE = re.compile(r"[^a-z0-9_]")


def attendee_schema(name):
    """``attendee_`` + the user name in lower-case letters, digits and ``_`` (+ a hash when it
    had to change or is too long)."""
    if not name:
        raise ValueError("an attendee needs a name")
    safe = _UNSAFE.sub("_", name.lower())
    room = MAX_IDENTIFIER_BYTES - len(SCHEMA_PREFIX) - 9
    if safe != name or len(safe) > room:
        safe = f"{safe[:room]}_{hashlib.sha256(name.encode()).hexdigest()[:8]}"
    return SCHEMA_PREFIX + safe


def attendee_db_url(room_url, name):
    """The room's URL with ``options=-csearch_path=<the attendee's schema>``."""
    parts = urlsplit(room_url)
    query = dict(parse_qsl(parts.query)) | {"options": f"-csearch_path={attendee_schema(name)}"}
    return urlunsplit(parts._replace(query=urlencode(query)))


def workbook_environment(spawner):
    """The environment of one attendee's server (JupyterHub calls a callable value with the
    spawner)."""
    return attendee_db_url(os.environ["WORKBOOK_ROOM_URL"], spawner.user.name)


if "c" in globals():  # loaded by JupyterHub (a test imports the functions alone)
    c.Spawner.environment.update(  # noqa: F821 - JupyterHub's config object
        {
            "WORKBOOK_DB_URL": workbook_environment,
            "WORKBOOK_PROFILE": os.environ.get("WORKBOOK_ROOM_PROFILE", "offline"),
        }
    )
