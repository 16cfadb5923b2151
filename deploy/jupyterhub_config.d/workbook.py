"""JupyterHub configuration for a room running the Context Relay Workbook.

The Littlest JupyterHub reads every ``*.py`` in ``/opt/tljh/config/jupyterhub_config.d/``; copy
this file there (deploy/README.md has the whole set-up); a plain JupyterHub loads it from its
``jupyterhub_config.py`` (``exec(open(path).read())``). Before it starts an attendee's server,
the hub runs the workbook's own ``workbook room url NAME`` (from the attendees' environment,
``WORKBOOK_CLI``) with the room's admin URL (``WORKBOOK_ROOM_URL`` in the hub's environment): it
makes the attendee a PostgreSQL role owning a schema of its own (once; later spawns get the same
URL), and prints their store URL, which the server gets as ``WORKBOOK_DB_URL``. So one database
holds the room, and PostgreSQL keeps each attendee's threads from every other attendee.
``WORKBOOK_PROFILE`` is ``offline`` unless the room is given a model (``WORKBOOK_ROOM_PROFILE``).

The hook is a coroutine and runs the command as a subprocess it awaits: the hub's event loop
goes on answering every other request while a spawn waits (a blocking ``subprocess.run`` froze
the whole hub for each spawn's 1-2 s, one spawn after another).
"""

import asyncio
import os

WORKBOOK_CLI = os.environ.get("WORKBOOK_CLI", "/opt/tljh/user/bin/workbook")
#: Seconds the hub waits for ``workbook room url`` before the spawn fails.
ROOM_URL_TIMEOUT_S = 60


async def attendee_environment(name, room_url=None, cli=WORKBOOK_CLI):
    """The environment of attendee ``name``'s server: their store URL (a secret: it holds
    their role's password) and the model profile.

    Raises:
        RuntimeError: ``workbook room url`` failed or took longer than ``ROOM_URL_TIMEOUT_S``
            (its message says why).
    """
    env = {
        "PATH": os.environ.get("PATH", ""),
        "WORKBOOK_ROOM_URL": room_url or os.environ["WORKBOOK_ROOM_URL"],
    }
    process = await asyncio.create_subprocess_exec(
        cli,
        "room",
        "url",
        "--",
        name,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), ROOM_URL_TIMEOUT_S)
    except asyncio.TimeoutError:  # noqa: UP041 - not yet TimeoutError on the hub's Python 3.10
        process.kill()
        await process.wait()
        raise RuntimeError(
            f"workbook room url {name!r} took more than {ROOM_URL_TIMEOUT_S} s"
        ) from None
    if process.returncode != 0:
        reason = err.decode("utf-8", "replace").strip()[-500:]
        raise RuntimeError(f"workbook room url {name!r} failed: {reason}")
    return {
        "WORKBOOK_DB_URL": out.decode("utf-8").strip(),
        "WORKBOOK_PROFILE": os.environ.get("WORKBOOK_ROOM_PROFILE", "offline"),
    }


async def pre_spawn_hook(spawner):
    """JupyterHub awaits this before it starts a server: the attendee's environment added."""
    spawner.environment.update(await attendee_environment(spawner.user.name))


if "c" in globals():  # loaded by JupyterHub (a test imports the functions alone)
    c.Spawner.pre_spawn_hook = pre_spawn_hook  # noqa: F821 - JupyterHub's config object
