"""``workbook build-data``, ``workbook restore`` and ``workbook serve-offline``: the data, the
notebooks and the offline model, for the room."""

from __future__ import annotations

import argparse
from typing import Any

from helpers.course.cli.common import (
    port,
)
from helpers.course.cli.exits import EXIT_OK, usage_error


def add_command(sub: Any, name: str, help: str) -> None:
    """Add ``build-data``, ``restore`` or ``serve-offline`` (``name``), with its handler."""
    parser = sub.add_parser(name, help=help)
    if name == "build-data":
        parser.set_defaults(handler=build_data)
    elif name == "restore":
        parser.add_argument("notebook", help="its number, e.g. 04")
        parser.set_defaults(handler=restore)
    else:
        parser.add_argument(
            "--port",
            type=port,
            default=8765,
            help="loopback port, 1-65535 (default %(default)s)",
        )
        parser.set_defaults(handler=serve_offline)


def build_data(_args: argparse.Namespace) -> int:
    """Build the ISO reference database and the offline documentation pages."""
    from helpers.paths import reference_db_path
    from helpers.tooling.dataset import build_reference_db
    from helpers.tooling.pages import build_pages, pages_dir

    counts = build_reference_db()
    rows = ", ".join(f"{table} {n}" for table, n in counts.items())
    print(f"built {reference_db_path()}: {rows} rows")
    print(f"built {pages_dir()}: {build_pages()} documentation pages")
    return EXIT_OK


def restore(args: argparse.Namespace) -> int:
    """Put one attendee notebook back as it was."""
    from helpers.course.student_notebooks import restore as restore_notebook

    try:
        path, backup = restore_notebook(args.notebook)
    except FileNotFoundError as exc:
        return usage_error(args, str(exc))
    print(f"restored {path}")
    if backup is not None:
        print(f"your copy is in {backup}")
    return EXIT_OK


def serve_offline(args: argparse.Namespace) -> int:
    """Serve the offline reference model over loopback HTTP until Ctrl-C."""
    from helpers.models.offline_server import OfflineServer

    with OfflineServer(port=args.port) as server:
        print(f"offline reference model at {server.base_url} (Ctrl-C to stop)", flush=True)
        server.serve_until_interrupted()
    return EXIT_OK
