"""The ``workbook`` command.

    workbook ask PROMPT [--strategy inline|truncate|box] [--boxing opaque|json] [--json] ...
    workbook cases "data/cases/*.md" [--strategy box|truncate|inline|middle|all] [--json] ...
    workbook compare [--cases GLOB] [--threshold N] [--limit N] --out DIR
    workbook build-data
    workbook serve-offline [--port N]

Exit codes (:data:`EXIT_CODES`): 0 answered (``ok``); 1 a failed run (``error``: the endpoint
failed or sent no usable reply; ``max_iterations``: no final answer); 2 bad usage (unknown
option, bad value, unusable ``.env`` profile, unknown thread); 3 an ``incomplete`` answer (cut,
filtered, refused, empty, or only in the model's reasoning). With ``--json``, ``ask`` prints
exactly one JSON object on stdout whatever happens, with a ``status``; no traceback reaches the
user (``WORKBOOK_DEBUG=1`` shows one for an internal error).

One module per command, its parser beside its handler (``add_command`` sets
``handler=run``): :mod:`~helpers.course.cli.ask`, :mod:`~helpers.course.cli.cases`,
:mod:`~helpers.course.cli.compare`, :mod:`~helpers.course.cli.outputs`,
:mod:`~helpers.course.cli.data` (build-data, restore, serve-offline); what they share is in
:mod:`~helpers.course.cli.common`.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence

from helpers.course.cli.ask import add_command as add_ask
from helpers.course.cli.cases import add_command as add_cases
from helpers.course.cli.cases import matrix_markdown
from helpers.course.cli.common import (
    EXIT_CODES,
    EXIT_FAILED,
    EXIT_INCOMPLETE,
    EXIT_OK,
    EXIT_USAGE,
    KIND_STYLE,
    Parser,
    print_json,
)
from helpers.course.cli.compare import add_command as add_compare
from helpers.course.cli.data import add_commands as add_data_commands
from helpers.course.cli.outputs import add_command as add_outputs
from helpers.escaping import for_terminal

__all__ = [
    "EXIT_CODES",
    "EXIT_FAILED",
    "EXIT_INCOMPLETE",
    "EXIT_OK",
    "EXIT_USAGE",
    "KIND_STYLE",
    "build_parser",
    "main",
    "matrix_markdown",
]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, each command added by its own module (also used to document the
    CLI in tests)."""
    parser = Parser(
        prog="workbook",
        description="Context Relay Workbook: run agent turns, compare strategies, see the store.",
        epilog="exit codes: 0 ok; 1 error or max_iterations; 2 bad usage; 3 incomplete answer. "
        "Environment: WORKBOOK_PROFILE (the model), WORKBOOK_DB_URL (the store), "
        "WORKBOOK_VAR_DIR (run-time folder), NO_COLOR.",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for add in (add_ask, add_cases, add_compare, add_outputs, add_data_commands):
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``workbook`` console script; returns the exit code."""
    Parser.json_errors = "--json" in (sys.argv[1:] if argv is None else list(argv))
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, or bad usage (already reported)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        return args.handler(args)
    except KeyboardInterrupt:
        print("workbook: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a verdict, never a traceback (unless asked for)
        if os.environ.get("WORKBOOK_DEBUG"):
            traceback.print_exc()
        message = f"internal error: {type(exc).__name__}: {exc}"
        if getattr(args, "json", False):
            print_json({"status": "error", "error": message})
        else:
            print(
                f"workbook: {for_terminal(message)} (WORKBOOK_DEBUG=1 shows the traceback)",
                file=sys.stderr,
            )
        return EXIT_FAILED
