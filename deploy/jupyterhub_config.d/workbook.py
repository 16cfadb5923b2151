"""JupyterHub configuration for a room running the Context Relay Workbook.

The Littlest JupyterHub reads every ``*.py`` in ``/opt/tljh/config/jupyterhub_config.d/``; copy
this file there (deploy/README.md has the whole set-up). Before it starts an attendee's server,
the hub runs the workbook's own ``workbook room url NAME`` (from the attendees' environment,
``WORKBOOK_CLI``) with the room's admin URL (``WORKBOOK_ROOM_URL`` in the hub's environment):
it makes the attendee a PostgreSQL role owning a schema of its own, and prints their store URL,
which the server gets as ``WORKBOOK_DB_URL``. So one database holds the room, and PostgreSQL
keeps each attendee's threads from every other attendee. ``WORKBOOK_PROFILE`` is ``offline``
unless the room is given a model (``WORKBOOK_ROOM_PROFILE``).
"""

import os
import subprocess

WORKBOOK_CLI = os.environ.get("WORKBOOK_CLI", "/opt/tljh/user/bin/workbook")
#: Seconds the hub waits for ``workbook room url`` before the spawn fails.
ROOM_URL_TIMEOUT_S = 60


def attendee_environment(name, room_url=None, cli=WORKBOOK_CLI):
    """The environment of attendee ``name``'s server: their store URL (a secret: it holds
    their role's password) and the model profile.

    Raises:
        RuntimeError: ``workbook room url`` failed (its message says why).
    """
    env = {
        "PATH": os.environ.get("PATH", ""),
        "WORKBOOK_ROOM_URL": room_url or os.environ["WORKBOOK_ROOM_URL"],
    }
    done = subprocess.run(
        [cli, "room", "url", name],
        env=env,
        capture_output=True,
        text=True,
        timeout=ROOM_URL_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"workbook room url {name!r} failed: {done.stderr.strip()[-500:]}")
    return {
        "WORKBOOK_DB_URL": done.stdout.strip(),
        "WORKBOOK_PROFILE": os.environ.get("WORKBOOK_ROOM_PROFILE", "offline"),
    }


def pre_spawn_hook(spawner):
    """JupyterHub calls this before it starts a server: the attendee's environment added."""
    spawner.environment.update(attendee_environment(spawner.user.name))


if "c" in globals():  # loaded by JupyterHub (a test imports the functions alone)
    c.Spawner.pre_spawn_hook = pre_spawn_hook  # noqa: F821 - JupyterHub's config object
