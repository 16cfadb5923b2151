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
the whole hub for each spawn's 1-2 s, one spawn after another). At most
:data:`ROOM_URL_AT_ONCE` commands run at once, each holding one of the room's admin connections
(the room's connection budget counts them). On a plain hub's local-process spawner the hook also
closes the attendee's home to the other attendees (TLJH makes homes closed itself).

The rest sets what a busy room needs of the hub itself (deploy/README.md gives the figures):
spawns at once, the time a server may take to start on a starved machine, and kernels that talk
to their server over Unix sockets (no port to race for) in a run-time folder short enough for a
socket's path.
"""

import asyncio
import logging
import os
import pwd
import stat

WORKBOOK_CLI = os.environ.get("WORKBOOK_CLI", "/opt/tljh/user/bin/workbook")
#: Seconds the hub waits for ``workbook room url`` once it runs, before the spawn fails: a hang
#: guard (it takes about one second of CPU; thirty attendees on two cores stretch that tenfold).
ROOM_URL_TIMEOUT_S = 300
#: ``workbook room url`` commands run at once (``helpers.course.room.HOOK_CONNECTIONS``: a test
#: holds the two equal); the others wait their turn.
ROOM_URL_AT_ONCE = 2
#: Spawns the hub runs at once (``JupyterHub.concurrent_spawn_limit``; past it a login is told
#: to try again in ``SPAWN_RETRY_RANGE_S`` seconds): a room of thirty at once, which ``make bench``
#: measured the hub carrying (deploy/README.md gives the figures, beside a tighter limit's).
CONCURRENT_SPAWN_LIMIT = 30
#: What a login past the limit is told to wait, in seconds (``JupyterHub.spawn_throttle_retry_range``,
#: whose lower bound JupyterHub's docs put at "approximately the median spawn time").
SPAWN_RETRY_RANGE_S = (10, 30)
#: The folder, in the attendee's home, of her server's run-time files (``JUPYTER_RUNTIME_DIR``):
#: its kernels' Unix sockets live there, and a socket's path may hold at most 107 bytes
#: (``sockaddr_un``), which jupyter_client's own folder (``~/.local/share/jupyter/runtime``)
#: passes for a TLJH user name of 15 characters or more.
RUNTIME_FOLDER = ".jupyter-run"
#: Seconds a server may take to start, and then to answer, on a busy machine (JupyterHub's
#: ``Spawner.start_timeout`` and ``Spawner.http_timeout``: 60 and 30 by default): hang guards.
SERVER_START_TIMEOUT_S = 600
SERVER_HTTP_TIMEOUT_S = 300
#: What an attendee's failed spawn says: the reason (which names the room's database) goes to the
#: hub's log, which only the instructor reads.
SPAWN_FAILED_FOR_ATTENDEE = (
    "the workshop could not set up your store: ask the instructor (the hub's log says why)"
)

_slots = None
#: JupyterHub's own log (its application's logger is named after it).
_log = logging.getLogger("JupyterHub")


def _room_url_slots():
    global _slots
    if _slots is None:  # made on the hub's own event loop, at the first spawn
        _slots = asyncio.Semaphore(ROOM_URL_AT_ONCE)
    return _slots


async def attendee_environment(name, room_url=None, cli=WORKBOOK_CLI):
    """The environment of attendee ``name``'s server: their store URL (a secret: it holds
    their role's password) and the model profile.

    Raises:
        RuntimeError: ``workbook room url`` failed or took longer than ``ROOM_URL_TIMEOUT_S``:
            the hub shows its message to the attendee, so it says only to ask the instructor
            (:data:`SPAWN_FAILED_FOR_ATTENDEE`); why goes to the hub's log, the command's own
            error (which masks the room's password) escaped to one line.
    """
    env = {
        "PATH": os.environ.get("PATH", ""),
        "WORKBOOK_ROOM_URL": room_url or os.environ["WORKBOOK_ROOM_URL"],
    }
    async with _room_url_slots():
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
            _log.error("workbook room url %r took more than %s s", name, ROOM_URL_TIMEOUT_S)
            raise RuntimeError(SPAWN_FAILED_FOR_ATTENDEE) from None
        finally:  # timed out, or the spawn cancelled: its admin connection goes with it
            if process.returncode is None:
                process.kill()
                await process.wait()
    if process.returncode != 0:
        reason = err.decode("utf-8", "replace").strip()[-500:]
        _log.error("workbook room url %r failed: %r", name, reason)
        raise RuntimeError(SPAWN_FAILED_FOR_ATTENDEE)
    return {
        "WORKBOOK_DB_URL": out.decode("utf-8").strip(),
        "WORKBOOK_PROFILE": os.environ.get("WORKBOOK_ROOM_PROFILE", "offline"),
    }


def close_home(home):
    """Take every permission of the group and the others off the directory ``home`` (0755
    becomes 0700); returns whether it changed anything."""
    mode = stat.S_IMODE(os.stat(home).st_mode)
    if not mode & 0o077:
        return False
    os.chmod(home, mode & ~0o077)
    return True


def close_attendee_home(spawner):
    """On a plain hub (the local-process spawner runs her server as the Linux user of her name,
    JupyterHub's ``LocalProcessSpawner``), close the attendee's home to the other users. Other
    spawners are left alone: TLJH's closes the homes it makes itself (``chmod o-rwx``,
    ``tljh/user.py``), and a container's home is its own."""
    try:
        from jupyterhub.spawner import LocalProcessSpawner
    except ImportError:
        return
    if not isinstance(spawner, LocalProcessSpawner):
        return
    try:
        if close_home(pwd.getpwnam(spawner.user.name).pw_dir):
            spawner.log.info("closed the home of %s to other users", spawner.user.name)
    except (KeyError, OSError) as exc:  # no such user yet, or the hub is not root: room check
        spawner.log.warning("could not close the home of %s: %s", spawner.user.name, exc)


def unix_user(spawner):
    """The Linux user a spawner runs the attendee's server as: the local-process spawner, her
    hub name; a systemd spawner (TLJH's), its ``username_template`` expanded (TLJH sets it as the
    server starts); ``None`` for any other."""
    template = getattr(spawner, "username_template", None)
    if template and hasattr(spawner, "_expand_user_vars"):
        return spawner._expand_user_vars(template)
    try:
        from jupyterhub.spawner import LocalProcessSpawner
    except ImportError:
        return None
    return spawner.user.name if isinstance(spawner, LocalProcessSpawner) else None


def runtime_dir(spawner):
    """``JUPYTER_RUNTIME_DIR`` for the attendee's server: :data:`RUNTIME_FOLDER` in her home, or
    ``""`` (Jupyter's own default) when her home cannot be found. JupyterHub calls it as the
    server starts (a callable value of ``Spawner.environment``), once TLJH has made her user."""
    name = unix_user(spawner)
    try:
        return os.path.join(pwd.getpwnam(name).pw_dir, RUNTIME_FOLDER) if name else ""
    except KeyError:
        return ""


async def pre_spawn_hook(spawner):
    """JupyterHub awaits this before it starts a server: the attendee's home closed, and her
    environment added."""
    close_attendee_home(spawner)
    spawner.environment.update(await attendee_environment(spawner.user.name))
    spawner.environment["JUPYTER_RUNTIME_DIR"] = runtime_dir


if "c" in globals():  # loaded by JupyterHub (a test imports the functions alone)
    c.Spawner.pre_spawn_hook = pre_spawn_hook  # noqa: F821 - JupyterHub's config object
    c.JupyterHub.concurrent_spawn_limit = CONCURRENT_SPAWN_LIMIT  # noqa: F821
    c.JupyterHub.spawn_throttle_retry_range = SPAWN_RETRY_RANGE_S  # noqa: F821
    c.Spawner.start_timeout = SERVER_START_TIMEOUT_S  # noqa: F821
    c.Spawner.http_timeout = SERVER_HTTP_TIMEOUT_S  # noqa: F821
    # jupyter_client picks a kernel's five TCP ports by binding port 0 and closing it, so two
    # attendees' kernels starting at once can pick the same port ("Address already in use"):
    # over Unix sockets in each attendee's own runtime folder (runtime_dir) there is no port to
    # race for, and no other user can reach them (ipykernel's own advice for a shared machine)
    c.Spawner.args.append("--KernelManager.transport=ipc")  # noqa: F821
