"""``workbook build-data``, ``workbook restore`` and ``workbook serve-offline``: the data, the
notebooks and the offline model, for the room."""

from __future__ import annotations

import argparse
from typing import Any

from helpers.course.cli.common import (
    EXIT_OK,
    port,
    usage_error,
)


def add_commands(sub: Any) -> None:
    """Add ``build-data``, ``restore`` and ``serve-offline``, each with its handler."""
    sub.add_parser(
        "build-data", help="(re)build the reference database from pycountry"
    ).set_defaults(handler=build_data)
    restore_parser = sub.add_parser(
        "restore", help="put one attendee notebook back as it was (yours goes to var/backups/)"
    )
    restore_parser.add_argument("notebook", help="its number, e.g. 04")
    restore_parser.set_defaults(handler=restore)
    serve = sub.add_parser("serve-offline", help="serve the offline model over loopback HTTP")
    serve.add_argument(
        "--port",
        type=port,
        default=8765,
        help="loopback port, 1-65535 (default %(default)s)",
    )
    serve.set_defaults(handler=serve_offline)


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
