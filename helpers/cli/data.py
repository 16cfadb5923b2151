"""``workbook build-data``, ``workbook copy-notebooks``, ``workbook restore`` and ``workbook
serve-offline``: the data, the notebooks and the offline model, for the room."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from helpers.cli.common import (
    port,
)
from helpers.cli.exits import EXIT_FAILED, EXIT_OK, usage_error
from helpers.text.escaping import for_terminal


def add_command(sub: Any, name: str, help: str) -> None:
    """Add ``build-data``, ``copy-notebooks``, ``restore`` or ``serve-offline`` (``name``),
    with its handler."""
    parser = sub.add_parser(name, help=help)
    if name == "build-data":
        parser.add_argument(
            "--force", action="store_true", help="build even when the data is current"
        )
        parser.set_defaults(handler=build_data)
    elif name == "copy-notebooks":
        parser.add_argument(
            "folder", nargs="?", default="workbook", help="where (default ./workbook)"
        )
        parser.add_argument(
            "--solutions", action="store_true", help="the solution notebooks too (instructors)"
        )
        parser.set_defaults(handler=copy_notebooks)
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


def build_data(args: argparse.Namespace) -> int:
    """Build the ISO reference database and the offline documentation pages, unless they were
    built from the same inputs (:mod:`helpers.tooling.reference_data`)."""
    from helpers.base.paths import reference_db_path
    from helpers.tooling.pages import pages_dir
    from helpers.tooling.reference_data import build_reference_data

    try:
        done = build_reference_data(force=args.force)
    except OSError as exc:  # var/ unwritable, a folder where a file goes, the disk full
        path = exc.filename2 or exc.filename  # os.replace: the file it could not put in place
        where = f"{path}: " if path else ""
        print(
            f"workbook: cannot build the reference data: {for_terminal(where)}"
            f"{for_terminal(exc.strerror or str(exc))}",
            file=sys.stderr,
        )
        return EXIT_FAILED
    if not done.built:
        print(f"reference data in {reference_db_path().parent} is current (--force rebuilds it)")
        return EXIT_OK
    print(f"reference data in {reference_db_path().parent} ({done.reason}): built")
    if done.rows:
        rows = ", ".join(f"{table} {n}" for table, n in done.rows.items())
        print(f"  {reference_db_path().name}: {rows} rows")
    if done.pages:
        files = "1 file" if done.pages == 1 else f"{done.pages} files"
        print(f"  {pages_dir().name}/: {files} (pages and documents)")
    return EXIT_OK


def copy_notebooks(args: argparse.Namespace) -> int:
    """Copy the attendee notebooks (and ``--solutions``) into a folder of one's own; a path that
    is a file, or a folder that cannot be written, is a one-line error (exit 2 or 1)."""
    import shlex
    from pathlib import Path

    from helpers.base.imports import import_jsonschema

    import_jsonschema()  # before nbformat imports it
    from helpers.course.student_notebooks import copy_notebooks as write_copies

    if not args.folder.strip():
        return usage_error(args, "copy-notebooks needs a folder's name, e.g. relay")
    folder = Path(args.folder)
    try:
        written, kept = write_copies(folder, solutions=args.solutions)
    except (FileExistsError, NotADirectoryError) as exc:
        return usage_error(
            args, f"{folder}: a file is in the way of that folder ({exc.strerror}); name a folder"
        )
    except OSError as exc:
        print(
            f"workbook: cannot write the notebooks into {for_terminal(str(folder))}: "
            f"{for_terminal(exc.strerror or str(exc))}",
            file=sys.stderr,
        )
        return EXIT_FAILED
    shown = for_terminal(str(folder))
    print(f"wrote {len(written)} notebooks into {shown}")
    if kept:
        print(f"kept {len(kept)} already there (yours): {', '.join(p.name for p in kept)}")
    if os.environ.get("JUPYTERHUB_USER"):  # on a hub this JupyterLab already serves the folder
        print(f"next: open {shown} in the file browser on the left, then the notebooks in it")
        return EXIT_OK
    target = shlex.quote(str(folder) if folder.is_absolute() else f"./{folder}")
    if target.isprintable() and for_terminal(target) == target:  # exactly the folder, or none
        print(f"next: cd {target} && jupyter lab")
    else:
        print("next: go to that folder and run jupyter lab")
    return EXIT_OK


def restore(args: argparse.Namespace) -> int:
    """Put one attendee notebook back as it was."""
    from helpers.base.imports import import_jsonschema

    import_jsonschema()  # before nbformat imports it
    from helpers.course.student_notebooks import restore as restore_notebook

    try:
        path, backup = restore_notebook(args.notebook)
    except LookupError as exc:
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
