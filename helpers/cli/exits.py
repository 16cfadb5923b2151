"""How a ``workbook`` command ends: its exit codes, the parser whose usage errors are one JSON
object under ``--json``, and the two ways a verdict is printed. Light on purpose: ``workbook
--help`` imports this and nothing heavier (no SDK, no SQLAlchemy)."""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

from helpers.text.escaping import for_json, for_terminal

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INCOMPLETE = 0, 1, 2, 3
#: ``workbook ask`` on the offline reference model with a prompt it has no plan for: it answered,
#: naming the nearest case prompts, but carried nothing out (status ``no_plan``).
EXIT_NO_PLAN = 4
#: The exit code after the reader of stdout went away (``| head``): 128 + SIGPIPE, as a shell
#: reports a program that signal stopped.
EXIT_BROKEN_PIPE = 141
#: Status → exit code of ``workbook ask`` (any other status: :data:`EXIT_FAILED`).
EXIT_CODES = {
    "ok": EXIT_OK,
    "incomplete": EXIT_INCOMPLETE,
    "max_iterations": EXIT_FAILED,
    "no_plan": EXIT_NO_PLAN,
}


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line: on stderr, naming the command's ``--help``
    (argparse's own prints the whole usage block first), or under ``--json`` one JSON object
    on stdout. docs/threat-model.md promises both."""

    json_errors = False
    #: Whose ``--help`` the line points to (default: this parser's ``prog``); the top-level
    #: parser, which reports a command's unrecognized arguments, names that command's.
    help_prog: str | None = None

    def error(self, message: str) -> NoReturn:
        if message.endswith("expected one argument"):  # argparse took the value for an option
            message += " (a value that starts with '-' is written --option=VALUE)"
        command = self.help_prog or self.prog
        said = f"{command}: error: {message} (see {command} --help)"
        if Parser.json_errors:
            print_json({"status": "usage_error", "error": said})
        else:
            print(for_terminal(said), file=sys.stderr)
        sys.exit(EXIT_USAGE)


def print_json(data: Any) -> None:
    """One JSON object on one line of stdout, ASCII only (:func:`helpers.text.escaping.for_json`)."""
    print(for_json(data), flush=True)


def run_error(args: argparse.Namespace, message: str) -> int:
    """Report a run that failed (a thing asked for that is not there): one JSON object on
    stdout with ``--json`` (``status`` ``error``), else a line on stderr (through
    :func:`helpers.text.escaping.for_terminal`); returns :data:`EXIT_FAILED`."""
    if getattr(args, "json", False):
        print_json({"status": "error", "error": message})
    else:
        print(f"workbook: {for_terminal(message)}", file=sys.stderr)
    return EXIT_FAILED


def usage_error(args: argparse.Namespace, message: str) -> int:
    """Report bad usage: one JSON object on stdout with ``--json``, else a line on stderr
    (through :func:`helpers.text.escaping.for_terminal`); returns :data:`EXIT_USAGE`."""
    if getattr(args, "json", False):
        print_json({"status": "usage_error", "error": message})
    else:
        print(f"workbook: {for_terminal(message)}", file=sys.stderr)
    return EXIT_USAGE
