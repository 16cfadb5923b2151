"""``workbook room``: the room's PostgreSQL database, for the hub and the instructor.

- ``workbook room url NAME``: make (or refresh) attendee ``NAME``'s role and schema, and print
  their store URL (their role, a new password, their schema); the hub runs it before it starts
  their server and gives it to the server as ``WORKBOOK_DB_URL``. Needs the admin's URL.
- ``workbook room progress``: per attendee, the TODOs whose checkpoint passed, how many
  checkpoint runs, the last one, and their threads (a table, tab-separated when piped, or
  ``--json``).

Both read the room's admin URL from ``--room-url`` or ``WORKBOOK_ROOM_URL`` (a PostgreSQL URL
of a role that may create roles).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from helpers.course.cli.common import console, output_options, rows_table
from helpers.course.cli.exits import EXIT_OK, print_json, usage_error
from helpers.escaping import for_terminal


def add_command(sub: Any, name: str, help: str) -> None:
    """Add ``room url|progress`` to the ``workbook`` subparsers, with :func:`run` as handler."""
    room = sub.add_parser(name, help=help)
    room.set_defaults(handler=run)
    actions = room.add_subparsers(dest="room_command", required=True)
    for action, action_help in (
        ("url", "make an attendee's role and schema; print their store URL (a secret)"),
        ("progress", "which checkpoints each attendee has passed"),
    ):
        parser = actions.add_parser(action, help=action_help, parents=[output_options()])
        parser.add_argument(
            "--room-url",
            default=os.environ.get("WORKBOOK_ROOM_URL"),
            help="the room's PostgreSQL URL (default $WORKBOOK_ROOM_URL)",
        )
        if action == "url":
            parser.add_argument("name", help="the attendee's user name on the hub")


def run(args: argparse.Namespace) -> int:
    """Print an attendee's URL, or the room's progress."""
    from sqlalchemy.exc import SQLAlchemyError

    from helpers.course.room import provision_attendee, room_progress

    if not args.room_url:
        return usage_error(args, "no room: give --room-url or set WORKBOOK_ROOM_URL")
    try:
        if args.room_command == "url":
            print(provision_attendee(args.room_url, args.name))
            return EXIT_OK
        progress = room_progress(args.room_url)
    except ValueError as exc:
        return usage_error(args, str(exc))
    except SQLAlchemyError as exc:
        reason = " ".join(str(exc).split("\n")[0].split())[:300]
        return usage_error(args, f"the room's database refused: {reason}")
    rows = [
        {
            "schema": schema,
            "attendee": attendee,
            "passed": entry["passed"],
            "runs": entry["runs"],
            "last": entry["last"].isoformat(timespec="seconds") if entry["last"] else "",
            "threads": room["threads"],
        }
        for schema, room in progress.items()
        for attendee, entry in (
            room["attendees"] or {"": {"passed": [], "runs": 0, "last": None}}
        ).items()
    ]
    if args.json:
        print_json({"attendees": rows})
        return EXIT_OK
    columns = ("attendee", "passed", "runs", "last", "threads")
    cells = [
        [
            for_terminal(row["attendee"] or row["schema"]),
            f"{len(row['passed'])}: {' '.join(row['passed'])}",
            str(row["runs"]),
            row["last"],
            str(row["threads"]),
        ]
        for row in rows
    ]
    rows_table(console(args.color), "The room (TODOs passed, as NN.T)", columns, cells)
    return EXIT_OK
