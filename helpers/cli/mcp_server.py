"""``workbook mcp-server``: the workbook's tools served over MCP on stdio (:mod:`helpers.mcp.server`).

An MCP client starts it as a subprocess and talks JSON-RPC on its stdin and stdout; it serves
one session (its process) until the client closes stdin. Nothing but the protocol is written to
stdout; one line on stderr says what it serves.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from helpers.cli.common import long_lived_imports, non_negative, open_store, store_options
from helpers.cli.exits import EXIT_OK, usage_error
from helpers.text.escaping import for_terminal


def add_command(sub: Any, name: str, help: str) -> None:
    """Add ``mcp-server`` to the ``workbook`` subparsers, with :func:`run` as its handler."""
    parser = sub.add_parser(
        name,
        help=help,
        description="Serve the workbook's tools over MCP on stdio, for an MCP client to start\n"
        "(docs/mcp.md). A long result goes back as a resource link (uri internal://<id>)\n"
        "that resources/read returns byte for byte, in this session (this process) only;\n"
        "stdout carries the protocol and nothing else.",
        parents=[store_options("where the outputs are kept (default: WORKBOOK_DB_URL, else var/)")],
    )
    parser.add_argument(
        "-t",
        "--threshold",
        type=non_negative,
        default=None,
        metavar="TOKENS",
        help="the longest result sent as text, in o200k_base tokens; a longer one goes back as "
        "a resource link (default: box-json's, 1,000)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Serve until the client closes stdin."""
    with long_lived_imports(args):  # the SDK, SQLAlchemy, the tools: kept until the process ends
        import anyio

        from helpers.mcp.server import WorkbookMcpServer
        from helpers.models.settings import load_env

    load_env()  # WORKBOOK_DB_URL and WORKBOOK_VAR_DIR from .env, as every command reads them
    try:
        store = open_store(args.db)
    except ValueError as exc:
        return usage_error(args, str(exc))
    try:
        server = WorkbookMcpServer(store, threshold_tokens=args.threshold)
        print(
            f"workbook mcp-server: session {server.session_id}, {len(server.tools)} tools over "
            f"stdio, outputs in {for_terminal(repr(store))}",
            file=sys.stderr,
            flush=True,
        )
        anyio.run(server.serve_stdio)
    finally:
        store.close()
    return EXIT_OK
