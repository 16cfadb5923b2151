"""Attendees' homes on the hub's machine: closed to the other attendees.

An attendee's home holds her notebooks with their outputs, her ``.env`` and her store's files.
Debian's ``useradd`` makes homes 0755 (its ``/etc/login.defs`` sets no ``HOME_MODE``, so the mode
follows ``UMASK`` 022): on a plain hub, from one attendee's kernel another attendee's notebook
was readable (issue 47). The Littlest JupyterHub closes each home it makes (``chmod o-rwx``,
``tljh/user.py`` since jupyterhub/the-littlest-jupyterhub@552db9f, still at @84ed38f); on a plain
hub the room's hook closes it when her server starts (``deploy/jupyterhub_config.d/workbook.py``).
``workbook room check`` reports any attendee home still open (:func:`open_homes`).
"""

from __future__ import annotations

import grp
import hashlib
import os
import pwd
import stat
from pathlib import Path


def tljh_username(name: str) -> str:
    """The Linux user The Littlest JupyterHub makes for hub user ``name``: ``jupyter-NAME``, cut
    to 26 characters and followed by ``-`` and 5 hex characters of its SHA-256 when that is 26
    characters or longer (``generate_system_username`` in ``tljh/normalize.py``,
    jupyterhub/the-littlest-jupyterhub@84ed38f)."""
    username = "jupyter-" + name
    if len(username) < 26:
        return username
    return f"{username[:26]}-{hashlib.sha256(username.encode('utf-8')).hexdigest()[:5]}"


def attendee_account(name: str) -> pwd.struct_passwd | None:
    """The Linux account of hub user ``name``: a plain hub's local-process spawner runs her
    server as the user of her name, TLJH as :func:`tljh_username`'s; ``None`` when neither
    exists (her server has not started yet)."""
    for candidate in (tljh_username(name), name):
        try:
            return pwd.getpwnam(candidate)
        except (KeyError, ValueError):  # ValueError: a name holding NUL
            continue
    return None


def home_is_open(account: pwd.struct_passwd) -> bool:
    """Whether another user may enter ``account``'s home: any permission for others, or any for
    its group when that group holds another user (as a member, or as her primary group). A
    missing home is not open."""
    try:
        mode = os.stat(account.pw_dir).st_mode
        gid = os.stat(account.pw_dir).st_gid
    except OSError:
        return False
    if mode & stat.S_IRWXO:
        return True
    if not mode & stat.S_IRWXG:
        return False
    try:
        members = set(grp.getgrgid(gid).gr_mem)
    except KeyError:
        members = set()
    members |= {user.pw_name for user in pwd.getpwall() if user.pw_gid == gid}
    return bool(members - {account.pw_name})


def open_homes(names: list[str]) -> list[Path]:
    """The homes of the attendees ``names`` (hub user names) that other users may enter, sorted;
    attendees without a Linux account yet are left out."""
    opened = set()
    for name in names:
        account = attendee_account(name)
        if account is not None and home_is_open(account):
            opened.add(Path(account.pw_dir))
    return sorted(opened)
