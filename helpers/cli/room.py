"""``workbook room``: the room's PostgreSQL database, for the hub and the instructor.

- ``workbook room url NAME``: make (or refresh) attendee ``NAME``'s role and schema, and print
  their store URL (their role, a new password, their schema); the hub runs it before it starts
  their server and gives it to the server as ``WORKBOOK_DB_URL``. Needs the admin's URL.
- ``workbook room progress``: per attendee, the TODOs whose checkpoint passed, how many
  checkpoint runs, the last one, and their threads (a table, tab-separated when piped, or
  ``--json``, where ``state`` is ``passed``, ``nothing yet`` or ``not read``); an attendee who
  has passed nothing yet says so, and one whose schema could not be read says why, on their
  own line.
- ``workbook room check [--attendees N]``: the instructor's pre-flight before the day
  (:mod:`helpers.course.room_check`): one line per setting, and what to fix; exits 1 when
  something is to fix.
- ``workbook room firewall [--port N]``: the nftables rules that cap each attendee's
  connections to PostgreSQL (:mod:`helpers.course.room_firewall`), to pipe into
  ``sudo nft -f -``; the port is the room URL's unless given.

They read the room's admin URL (a PostgreSQL URL of a role that may create roles) from
``--room-url``, else ``WORKBOOK_ROOM_URL``, else :data:`ROOM_ENV_FILE` (root's).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from helpers.cli.exits import EXIT_FAILED, EXIT_OK, print_json, usage_error
from helpers.cli.output import output_options
from helpers.text.escaping import for_terminal


def add_command(sub: Any, name: str, help: str) -> None:
    """Add ``room url|progress`` to the ``workbook`` subparsers, with :func:`run` as handler."""
    room = sub.add_parser(name, help=help)
    room.set_defaults(handler=run)
    actions = room.add_subparsers(dest="room_command", required=True)
    for action, action_help in (
        ("url", "make an attendee's role and schema; print their store URL (a secret)"),
        ("progress", "which checkpoints each attendee has passed"),
        ("check", "before the day: is PostgreSQL set up for a room of N attendees?"),
        ("firewall", "the nftables rules capping each attendee's connections (| sudo nft -f -)"),
    ):
        parser = actions.add_parser(action, help=action_help, parents=[output_options()])
        parser.add_argument(
            "--room-url",
            default=os.environ.get("WORKBOOK_ROOM_URL"),
            help=f"the room's PostgreSQL URL (default $WORKBOOK_ROOM_URL, else {ROOM_ENV_FILE}'s; "
            "on the command line every user sees it)",
        )
        if action == "url":
            parser.add_argument("name", help="the attendee's user name on the hub")
        if action == "firewall":
            parser.add_argument(
                "--port",
                type=_port,
                help="PostgreSQL's TCP port (default: the room URL's, else 5432)",
            )
        if action == "check":
            parser.add_argument(
                "--attendees",
                type=_attendees,
                default=DEFAULT_ROOM_SIZE,
                help="the room's size (default %(default)s)",
            )
            parser.add_argument(
                "--hub-config",
                default=DEFAULT_HUB_CONFIG,
                help="the hub's copy of deploy/jupyterhub_config.d/workbook.py "
                "(default %(default)s, where TLJH reads it)",
            )


#: The room size ``room check`` plans for unless told.
DEFAULT_ROOM_SIZE = 30
#: Where The Littlest JupyterHub reads the hub's configuration files.
DEFAULT_HUB_CONFIG = "/opt/tljh/config/jupyterhub_config.d/workbook.py"


def _attendees(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


#: The room's admin URL on the hub's machine, readable by root only: the hub's systemd unit
#: loads it (``EnvironmentFile=``) and ``sudo workbook room ...`` reads it, so the password is
#: never in a command line (which every user may read in /proc) nor in the unit's
#: ``Environment=`` (which ``systemctl show`` shows every user).
ROOM_ENV_FILE = "/etc/workbook/room.env"


def room_url_from_file(path: str = ROOM_ENV_FILE) -> str | None:
    """``WORKBOOK_ROOM_URL`` from the room's environment file, or ``None`` when it is missing
    or unreadable (only root may read it)."""
    if not os.access(path, os.R_OK):
        return None
    from dotenv import dotenv_values

    return dotenv_values(path).get("WORKBOOK_ROOM_URL") or None


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if not 1 <= value <= 65_535:
        raise argparse.ArgumentTypeError(f"must be a TCP port (1-65535), got {value}")
    return value


def _firewall(args: argparse.Namespace) -> int:
    from urllib.parse import urlsplit

    from helpers.course.room_firewall import nft_ruleset

    port = args.port
    if port is None:
        try:
            port = urlsplit(args.room_url or room_url_from_file() or "").port or 5432
        except ValueError as exc:
            return usage_error(args, f"the room URL's port: {exc}")
    print(nft_ruleset(port), end="")
    return EXIT_OK


def run(args: argparse.Namespace) -> int:
    """Print an attendee's URL, the room's progress, the pre-flight's findings, or the
    firewall's rules."""
    if args.room_command == "firewall":
        return _firewall(args)
    import psycopg

    from helpers.text.redaction import mask_url_password

    args.room_url = args.room_url or room_url_from_file()
    if not args.room_url:
        return usage_error(
            args,
            f"no room: set WORKBOOK_ROOM_URL, or put it in {ROOM_ENV_FILE} (mode 0600), or give "
            "--room-url",
        )
    try:
        if args.room_command == "url":
            from helpers.course.room import provision_attendee

            print(provision_attendee(args.room_url, args.name))
            return EXIT_OK
        if args.room_command == "check":
            return _check(args)
        from helpers.course.room import room_progress

        progress = room_progress(args.room_url)
    except ValueError as exc:
        return usage_error(args, mask_url_password(str(exc), args.room_url))
    except psycopg.Error as exc:
        reason = mask_url_password(" ".join(str(exc).split("\n")[0].split()), args.room_url)
        return usage_error(args, f"the room's database refused: {reason[:300]}")
    rows = [
        {
            "schema": line.schema,
            "attendee": line.attendee,
            "passed": line.passed,
            "runs": line.runs,
            "last": line.last.isoformat(timespec="seconds") if line.last else "",
            "threads": line.threads,
            "capped": line.capped,
            "error": line.error,
            "state": line.state,
        }
        for line in progress.values()
    ]
    if args.json:
        print_json({"attendees": rows})
        return EXIT_OK
    columns = ("attendee", "passed", "runs", "last", "threads")
    cells = [
        [
            for_terminal(row["attendee"]),
            f"not read: {for_terminal(row['error'])}"
            if row["error"]
            else f"{len(row['passed'])}: {' '.join(row['passed'])}"
            if row["passed"]
            else "nothing passed yet",
            f"{row['runs']}+" if row["capped"] else str(row["runs"]),
            row["last"],
            str(row["threads"]),
        ]
        for row in rows
    ]
    from helpers.cli.output import console, rows_table

    rows_table(console(args.color), "The room (TODOs passed, as NN.T)", columns, cells)
    return EXIT_OK


def _check(args: argparse.Namespace) -> int:
    from helpers.cli.output import console, rows_table
    from helpers.course.room_check import check_room

    findings = check_room(
        args.room_url, args.attendees, hub_config=args.hub_config, env_file=ROOM_ENV_FILE
    )
    if args.json:
        print_json({"attendees": args.attendees, "findings": [f.as_json() for f in findings]})
    else:
        cells = [[f.name, "ok" if f.ok else "FIX", for_terminal(f.line)] for f in findings]
        title = f"PostgreSQL for a room of {args.attendees} (FIX: do what the line says)"
        rows_table(console(args.color), title, ("check", "state", "what"), cells)
    return EXIT_OK if all(f.ok for f in findings) else EXIT_FAILED
