"""The ``workbook`` command: ``workbook --help`` lists its commands (ask, cases, compare,
outputs, models, room, completion, build-data, copy-notebooks, restore, mcp-server,
serve-offline), and ``workbook COMMAND --help`` each one's options and examples; docs/cli.md is
the reference.

Exit codes (named in :mod:`helpers.cli.exits`: import them from there): 0 answered (``ok``); 1
a failed run (``error``: the endpoint failed or sent no usable reply; ``max_iterations``: no
final answer); 2 bad usage (unknown option, bad value, unusable ``.env`` profile, unknown
thread); 3 an ``incomplete`` answer (cut, filtered, refused, empty, or only in the model's
reasoning); 4 ``no_plan`` (``ask`` on the offline reference model with a prompt it has no plan
for: its answer names the nearest case prompts); 130 interrupted (Ctrl-C); 141 the reader of
stdout went away (``workbook outputs show … | head``), with nothing more said. With ``--json``, ``ask`` prints exactly one JSON object on
stdout whatever happens, with a ``status``; no traceback reaches the user (``WORKBOOK_DEBUG=1``
shows one for an internal error).

One module per command, its parser beside its handler (``add_command`` sets
``handler=run``): :mod:`~helpers.cli.ask`, :mod:`~helpers.cli.cases`,
:mod:`~helpers.cli.compare`, :mod:`~helpers.cli.outputs`,
:mod:`~helpers.cli.data` (build-data, restore, serve-offline),
:mod:`~helpers.cli.mcp_server`; what they share is in
:mod:`~helpers.cli.common`.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass

import helpers.cli.exits as exits
from helpers.cli.exits import Parser, print_json
from helpers.cli.output import quiet_stdout
from helpers.text.escaping import for_terminal

__all__ = [
    "COMMANDS",
    "Command",
    "build_parser",
    "main",
]


@dataclass(frozen=True)
class Command:
    """One ``workbook`` command: ``module`` (dotted) has ``add_command(sub, name, help)``, which
    adds the command's parser with its handler; ``help`` is the line ``workbook --help`` shows;
    ``examples`` are the command lines its own ``--help`` ends with (``# …`` says what each
    does)."""

    module: str
    help: str
    examples: tuple[str, ...] = ()


#: The commands, in the order ``workbook --help`` lists them. A command's module is imported only
#: when that command is run (or its own --help asked for), so ``workbook --help`` loads neither
#: the SDK nor SQLAlchemy.
COMMANDS: dict[str, Command] = {
    "ask": Command(
        "helpers.cli.ask",
        "run one agent turn on a prompt",
        (
            'workbook ask "What is the title of the page https://docs.python.org/3/library/json.html?"',
            'workbook ask -s truncate "Generate a transcript of the YouTube video with '
            "video_id='123' and then pass it to Deep Check for analysis.\"",
            'workbook ask -c "And what is its last line?"   # continue the last thread',
            'echo "Using run_sql, list the ISO 3166-2 subdivisions of Norway (code, name and type)." '
            "| workbook ask --json",
            'workbook ask -p openai -m gpt-4o-mini "..."    # a real model (.env or the shell key)',
        ),
    ),
    "cases": Command(
        "helpers.cli.cases",
        "run prompt cases and validate them",
        (
            "workbook cases                                  # data/cases/*.md under box",
            'workbook cases "data/cases/large/*.md" -s claude-code',
            "workbook cases -s all --json                    # box, truncate and inline",
            "workbook cases --persona embeds --persona invents",
        ),
    ),
    "compare": Command(
        "helpers.cli.compare",
        "the same cases under every strategy, measured",
        (
            "workbook compare --out build/compare           # compare.json, .md, .png",
            'workbook compare --cases "data/cases/*.md" --no-scaling --out build/c2',
            "workbook compare --price-model claude-sonnet-4.5 --out build/c3",
        ),
    ),
    "outputs": Command(
        "helpers.cli.outputs",
        "see, per thread, what the store holds; prune it",
        (
            "workbook outputs list                           # threads",
            "workbook outputs list --thread demo | cut -f5   # its references, whole",
            "workbook outputs show internal://<id> --start 0 --length 200",
            "workbook outputs prune --older-than 7d --yes    # and give the disk back",
        ),
    ),
    "models": Command(
        "helpers.cli.models",
        "the profiles .env and the shell name, their models, and (--check) whether they answer",
        (
            "workbook models                                 # * marks the one ask uses",
            "workbook models --check --timeout 3             # GET /models on each endpoint",
            "workbook models --json",
        ),
    ),
    "room": Command(
        "helpers.cli.room",
        "a room on one PostgreSQL database: an attendee's store URL, the room's progress, "
        "the pre-flight",
        (
            "workbook room url alice --room-url postgresql+psycopg://room@db/workbook",
            "workbook room progress                         # the room of $WORKBOOK_ROOM_URL",
            "workbook room progress --json",
            "workbook room check --attendees 30             # before the day: what to fix",
        ),
    ),
    "completion": Command(
        "helpers.cli.completion",
        "print a tab-completion script for bash, zsh, tcsh, fish or PowerShell",
        (
            "workbook completion bash > ~/.local/share/bash-completion/completions/workbook",
            "workbook completion zsh > ~/.zfunc/_workbook   # fpath+=~/.zfunc before compinit",
            "workbook completion fish > ~/.config/fish/completions/workbook.fish",
        ),
    ),
    "build-data": Command(
        "helpers.cli.data",
        "build the reference data (ISO database, offline pages) when its inputs changed",
        ("workbook build-data", "workbook build-data --force   # even when current"),
    ),
    "copy-notebooks": Command(
        "helpers.cli.data",
        "copy the attendee notebooks into a folder of your own (an installed workbook)",
        (
            "workbook copy-notebooks                        # into ./workbook",
            "workbook copy-notebooks ~/relay --solutions    # the solutions too",
        ),
    ),
    "restore": Command(
        "helpers.cli.data",
        "put one attendee notebook back as it was (yours goes to var/backups/)",
        ("workbook restore 04",),
    ),
    "mcp-server": Command(
        "helpers.cli.mcp_server",
        "serve the workbook's tools over MCP on stdio (long results as resource links)",
        (
            "workbook mcp-server                            # for an MCP client to start",
            "workbook mcp-server --db sqlite:///var/mcp.sqlite --threshold 200",
        ),
    ),
    "serve-offline": Command(
        "helpers.cli.data",
        "serve the offline model over loopback HTTP",
        ("workbook serve-offline --port 8765   # prints its base URL: LOCAL_BASE_URL in .env",),
    ),
}


def _with_examples(parser: argparse.ArgumentParser, examples: tuple[str, ...]) -> None:
    """End ``parser``'s help with ``examples`` (before any epilog it has), lines kept as written."""
    if not examples:
        return
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    lines = "\n".join(f"  {line}" for line in examples)
    parser.epilog = f"examples:\n{lines}" + (f"\n\n{parser.epilog}" if parser.epilog else "")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser. With ``only=None`` every command is complete (used to document the
    CLI in tests); with a command's name, only that one is, the others are a name and a help line
    (what ``workbook --help`` needs)."""
    parser = Parser(
        prog="workbook",
        description="Context Relay Workbook: run agent turns, compare strategies, see the store. "
        'workbook "PROMPT" and workbook -c "PROMPT" are short for workbook ask.',
        epilog="exit codes: 0 ok; 1 error or max_iterations; 2 bad usage; 3 incomplete answer; "
        "4 no plan (the offline model knows only the case prompts). "
        "Environment: WORKBOOK_PROFILE (the model), WORKBOOK_DB_URL (the store), "
        "WORKBOOK_VAR_DIR (run-time folder), MCP_SERVERS (MCP servers whose tools ask offers), "
        "NO_COLOR.",
    )
    if only in COMMANDS:
        parser.help_prog = f"workbook {only}"
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for name, command in COMMANDS.items():
        if only is None or name == only:
            importlib.import_module(command.module).add_command(sub, name, command.help)
            _with_examples(sub.choices[name], command.examples)
        else:
            sub.add_parser(name, help=command.help)
    return parser


class _VersionAction(argparse.Action):
    """``--version``: the version looked up only when asked for (the package metadata costs
    ``workbook room url``, run before every spawn, tens of milliseconds)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(
            option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version"
        )

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(f"workbook {_version()}")
        parser.exit()


def _version() -> str:
    """The installed package's version (``pyproject.toml``), or ``unknown (not installed)``."""
    from helpers.base.paths import workbook_version

    found = workbook_version()
    return found if found != "unknown" else "unknown (not installed)"


#: What stays a top-level option rather than the start of an ``ask``.
_TOP_LEVEL_OPTIONS = ("-h", "--help", "--version")


def with_default_command(words: Sequence[str]) -> list[str]:
    """simonw/llm's habit: a prompt (a first word holding a space) or an ``ask`` option first
    (``workbook -c "and then?"``, ``workbook - < prompt.txt``) means ``workbook ask …``. A single
    word that is no command stays as it is, so a mistyped command is reported, never sent to a
    model as a prompt."""
    words = list(words)
    if not words or words[0] in COMMANDS or words[0] in _TOP_LEVEL_OPTIONS:
        return words
    if words[0].startswith("-") or " " in words[0].strip():
        return ["ask", *words]
    return words


def _chosen(argv: Sequence[str]) -> str:
    """The command ``argv`` names (its first word that is not an option), or ``""``."""
    return next((word for word in argv if not word.startswith("-")), "")


def console_main() -> int:
    """Entry point of the ``workbook`` console script and of ``python -m helpers.cli``: :func:`main`
    in a process that runs one command and exits, so a command may keep what it imports out of
    the garbage collector's sight (:func:`helpers.cli.common.long_lived_imports`); returns the
    exit code. On a stream whose encoding cannot write every character (``PYTHONIOENCODING=ascii``,
    a pipe in a Windows code page), a character it cannot write is shown as an escape (``\u2192``)
    rather than ending the command; ``outputs show --raw`` still writes exactly or fails."""
    for stream in (sys.stdout, sys.stderr):
        encoding = str(getattr(stream, "encoding", "")).lower().replace("-", "")
        strict = getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure")
        if strict and not encoding.startswith("utf"):
            stream.reconfigure(errors="backslashreplace")
    return main(one_command_process=True)


def main(argv: Sequence[str] | None = None, *, one_command_process: bool = False) -> int:
    """Run one ``workbook`` command (``argv``: its words, by default the process's arguments)
    and return its exit code. ``one_command_process``: the process ends after it
    (:func:`console_main`); a caller that goes on (a test, a notebook) leaves it ``False``."""
    words = with_default_command(sys.argv[1:] if argv is None else argv)
    Parser.json_errors = "--json" in words
    try:
        args = build_parser(only=_chosen(words)).parse_args(words)
    except SystemExit as exc:  # --help, or bad usage (already reported)
        return exc.code if isinstance(exc.code, int) else exits.EXIT_USAGE
    args.one_command_process = one_command_process
    try:
        return args.handler(args)
    except KeyboardInterrupt:
        print("workbook: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `workbook … | head`: the reader has gone; say nothing more
        quiet_stdout()
        return exits.EXIT_BROKEN_PIPE
    except Exception as exc:  # a verdict, never a traceback (unless asked for)
        if os.environ.get("WORKBOOK_DEBUG"):
            traceback.print_exc()
        message = f"internal error: {type(exc).__name__}: {exc}"
        if getattr(args, "json", False):
            with contextlib.suppress(OSError):  # stdout itself may be what failed (a full disk)
                print_json({"status": "error", "error": message})
                return exits.EXIT_FAILED
        print(
            f"workbook: {for_terminal(message)} (WORKBOOK_DEBUG=1 shows the traceback)",
            file=sys.stderr,
        )
        return exits.EXIT_FAILED
