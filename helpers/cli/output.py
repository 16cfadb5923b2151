"""How the ``workbook`` commands print: the ``--json``/``--color`` options, a rich console that
reports a reader gone away, and tables that stay copyable when piped. Light on purpose (rich and
the escaping functions only, rich imported when something is printed): ``workbook room url``,
which the hub runs before every spawn, imports it without rich, the SDK or the agent loop."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from helpers.text.escaping import for_cell, for_rich

if TYPE_CHECKING:
    from rich.console import Console


def output_options(*, json_flag: bool = True) -> argparse.ArgumentParser:
    """-j/--json and --color."""
    options = argparse.ArgumentParser(add_help=False)
    if json_flag:
        options.add_argument(
            "-j", "--json", action="store_true", help="print one JSON object, nothing else"
        )
    options.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour in the terminal (default %(default)s; NO_COLOR is honoured)",
    )
    return options


def quiet_stdout() -> None:
    """Point stdout at the null device once its reader has gone away (``| head``), so that
    later writes and the interpreter's last flush find no closed pipe (the Python
    documentation's recipe: library/signal.html, "Note on SIGPIPE")."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def console(color: str, stream: Any = None) -> Console:
    """A rich console on ``stream`` (default stdout); ``color`` is ``auto``, ``always`` or
    ``never``. A reader that went away (``| head``) raises ``BrokenPipeError`` to
    :func:`helpers.cli.main`, which exits 141 as for any other output; rich's own
    ``on_broken_pipe`` would exit 1."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

    force = {"always": True, "never": False}.get(color)
    return _Console(
        file=stream or sys.stdout,
        force_terminal=force,
        no_color=color == "never",
        highlight=False,
        emoji=False,  # ":name:" in a model's text stays as written
    )


#: Columns whose values are copied (ids, references): never wrapped nor cut.
_WHOLE_COLUMNS = ("thread", "tool_call_id", "reference", "profile", "model", "endpoint")
_NUMERIC_COLUMNS = ("outputs", "chars", "bytes")


def rows_table(out: Console, title: str, columns: tuple[str, ...], rows: list[list[str]]) -> None:
    """``rows`` under ``columns``: a table on a terminal, ids and references never wrapped; tab-
    separated lines, a header first, when stdout is a pipe or a file (nothing wrapped or cut, so
    an id can be copied or cut out)."""
    if not out.is_terminal:
        for line in [list(columns), *rows]:
            out.file.write("\t".join(for_cell(cell) for cell in line) + "\n")
        return
    from rich.table import Table

    table = Table(title=title)
    for i, column in enumerate(columns):
        widest = max((len(r[i]) for r in rows), default=0)
        whole = column in _WHOLE_COLUMNS
        table.add_column(
            column,
            justify="right" if column in _NUMERIC_COLUMNS else "left",
            no_wrap=whole,
            min_width=max(widest, len(column)) if whole else len(column),
            overflow="ignore" if whole else "fold",
        )
    for row in rows:
        table.add_row(*(for_rich(for_cell(cell)) for cell in row))
    out.print(table)
