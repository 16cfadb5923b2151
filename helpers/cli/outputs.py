"""``workbook outputs``: what the store holds, per thread, without writing Python.

- ``workbook outputs list``: the threads with logged outputs (outputs, characters, bytes, last);
  with ``--thread T``, that thread's outputs: ``tool_call_id``, tool, size in characters and
  bytes, reference, kind, when it was logged.
- ``workbook outputs show ID``: one output (or a slice of it: ``--start``, ``--length``, in
  characters). ``ID`` is a reference (``internal://<id>``), a reference id, or a
  ``tool_call_id`` (with ``--thread`` when the same id is in several threads). Control and
  invisible characters are shown as escapes (:func:`helpers.text.escaping.for_terminal`); ``--raw``
  writes the stored characters exactly, for a file or a pipe.
- ``workbook outputs prune``: delete outputs by age (``--older-than 7d``) and/or thread; it says
  how many would go, and deletes only with ``--yes``; on SQLite it then gives the space back to
  the file system (``VACUUM`` and a WAL checkpoint with truncate) and says how many megabytes.

In the manner of ``llm logs`` (simonw/llm): the log is the user's to read and to trim.
"""

from __future__ import annotations

import argparse
import re
import sys
from datetime import timedelta
from typing import Any

from rich.console import Console

from helpers.base.guards import GuardRefusal
from helpers.cli.common import (
    open_store,
    store_options,
)
from helpers.cli.exits import run_error, usage_error
from helpers.cli.output import console, output_options, rows_table
from helpers.context.boxing import make_reference, reference_id
from helpers.store.reading import StoredOutput
from helpers.store.tool_outputs import ToolOutputStore
from helpers.text.escaping import for_json, for_rich, for_terminal

_AGE_RE = re.compile(r"^(\d+)([smhdw])$")
_AGE_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
#: The most characters ``outputs show`` prints without ``--length``.
SHOW_MAX_CHARS = 100_000
#: Characters ``outputs show --raw`` writes at a time (one pipe buffer's worth of ASCII).
RAW_PIECE_CHARS = 65_536


#: The oldest age ``--older-than`` takes: a century (an older cutoff is before any row, and
#: past about 2,700 millennia Python's dates end).
MAX_AGE = timedelta(days=36_500)


def parse_age(text: str) -> timedelta:
    """``7d``, ``12h``, ``30m``, ``90s`` or ``2w`` as a ``timedelta``, at most :data:`MAX_AGE`.

    Raises:
        argparse.ArgumentTypeError: anything else.
    """
    match = _AGE_RE.match(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(
            f"an age is a number and a unit (s, m, h, d, w), e.g. 7d or 12h; got {text!r}"
        )
    digits, unit = match[1], _AGE_UNITS[match[2]]
    try:
        age = timedelta(**{unit: int(digits)}) if len(digits) <= 12 else MAX_AGE * 2
    except OverflowError:
        age = MAX_AGE * 2
    if age > MAX_AGE:
        raise argparse.ArgumentTypeError(f"an age is at most {MAX_AGE.days:,}d; got {text!r}")
    return age


def add_command(sub: Any, name: str, help: str) -> None:
    """Add ``outputs list|show|prune`` to the ``workbook`` subparsers, with :func:`run` as its
    handler."""
    parents = [store_options(), output_options()]
    outputs = sub.add_parser(name, help=help)
    outputs.set_defaults(handler=run)
    actions = outputs.add_subparsers(dest="outputs_command", required=True)
    listing = actions.add_parser(
        "list", parents=parents, help="threads with outputs, or one thread's outputs"
    )
    listing.add_argument("--thread", help="list this thread's outputs")
    listing.add_argument(
        "-n", "--max", type=int, default=50, help="at most this many rows (default %(default)s)"
    )
    show = actions.add_parser("show", parents=parents, help="print one output, or a slice of it")
    show.add_argument("id", help="internal://<id>, a reference id, or a tool_call_id")
    show.add_argument("--thread", help="the thread of a tool_call_id")
    show.add_argument("--start", type=int, default=0, help="first character (default 0)")
    show.add_argument("--length", type=int, help=f"characters (default: up to {SHOW_MAX_CHARS:,})")
    show.add_argument(
        "--raw",
        action="store_true",
        help="write the stored characters exactly, escape sequences included (for a file or a "
        "pipe; without it, control and invisible characters are shown as \\x1b, \\u202e)",
    )
    prune = actions.add_parser("prune", parents=parents, help="delete outputs by age or thread")
    prune.add_argument("--older-than", type=parse_age, metavar="AGE", help="e.g. 7d, 12h, 30m")
    prune.add_argument("--thread", help="only this thread's outputs (all of them, if no age)")
    prune.add_argument("--yes", action="store_true", help="delete (without it: only count)")


def run(args: argparse.Namespace) -> int:
    """Open the store and run ``outputs list``, ``show`` or ``prune``."""
    try:
        store = open_store(args.db)
    except ValueError as exc:
        return usage_error(args, str(exc))
    try:
        return _outputs_command(args, store, console(args.color))
    finally:
        store.close()


def _outputs_command(args: argparse.Namespace, store: ToolOutputStore, out: Console) -> int:
    """Carry out ``workbook outputs``; returns the exit code (2 for bad usage, 1 not found)."""
    if args.outputs_command == "list":
        return _list(args, store, out)
    if args.outputs_command == "show":
        return _show(args, store, out)
    return _prune(args, store, out)


def _size(row: StoredOutput) -> dict[str, Any]:
    return {
        "tool_call_id": row.tool_call_id,
        "tool_name": row.tool_name,
        "n_chars": row.n_chars,
        "n_bytes": row.n_bytes,
        "reference": make_reference(row.ref_id),
        "kind": row.kind,
        "created_at": row.created_at.isoformat(timespec="seconds"),
    }


def _list(args: argparse.Namespace, store: ToolOutputStore, out: Console) -> int:
    if args.thread is None:
        threads = store.thread_summaries(limit=args.max)
        if args.json:
            print(for_json({"threads": threads}, default=str))
            return 0
        if not threads:
            out.print("no outputs in the store")
            return 0
        rows = [
            [
                t["thread_id"],
                str(t["outputs"]),
                f"{t['chars']:,}",
                f"{t['bytes']:,}",
                t["last"].isoformat(timespec="seconds") if t["last"] else "",
            ]
            for t in threads
        ]
        columns = ("thread", "outputs", "chars", "bytes", "last output")
        rows_table(out, f"Threads with outputs ({store!r})", columns, rows)
        return 0
    found = store.list_thread(args.thread)[: args.max]
    if args.json:
        print(for_json({"thread_id": args.thread, "outputs": [_size(r) for r in found]}))
        return 0
    if not found:  # an empty listing, as under --json: not a failure
        out.print(f"no outputs in thread '{for_rich(args.thread)}'")
        return 0
    rows = []
    for row in found:
        size = _size(row)
        n_bytes = "" if size["n_bytes"] is None else f"{size['n_bytes']:,}"
        rows.append(
            [
                row.tool_call_id,
                row.tool_name,
                f"{row.n_chars:,}",
                n_bytes,
                size["reference"],
                row.kind,
                size["created_at"],
            ]
        )
    columns = ("tool_call_id", "tool", "chars", "bytes", "reference", "kind", "created")
    rows_table(out, f"Outputs of thread {for_rich(args.thread)}", columns, rows)
    return 0


def _find(args: argparse.Namespace, store: ToolOutputStore) -> StoredOutput | str:
    """The row ``args.id`` names, or a message saying why there is none."""
    wanted = args.id.strip()
    try:
        ref = reference_id(wanted)
    except GuardRefusal:
        ref = None
    if ref is not None:
        return store.get_by_ref(ref) or f"no output behind {wanted!r}"
    if args.thread is not None:
        return store.get(args.thread, wanted) or f"no {wanted!r} in thread {args.thread!r}"
    matches = store.list_by_call_id(wanted)
    if len(matches) > 1:
        threads = ", ".join(m.thread_id for m in matches[:5])
        return f"{wanted!r} is in {len(matches)} threads ({threads}): name one with --thread"
    if matches:
        return matches[0]
    return store.get_by_ref(wanted) or f"no output with reference id or tool_call_id {wanted!r}"


def _show(args: argparse.Namespace, store: ToolOutputStore, out: Console) -> int:
    if args.start < 0 or (args.length is not None and args.length < 0):
        return usage_error(args, "--start and --length are counts of characters, >= 0")
    row = _find(args, store)
    if isinstance(row, str):
        return run_error(args, row)
    # --raw is for a file or a pipe: the whole output unless --length says otherwise
    length = (
        args.length if args.length is not None else (row.n_chars if args.raw else SHOW_MAX_CHARS)
    )
    text = store.read_range(row.id, args.start, length)
    end = args.start + len(text)
    if args.json:
        print(
            for_json(
                {
                    **_size(row),
                    "thread_id": row.thread_id,
                    "sha256": row.sha256,
                    "start": args.start,
                    "end": end,
                    "content": text,
                }
            )
        )
        return 0
    if args.raw:  # stdout gets the stored characters and nothing else; the rest goes to stderr
        out = console(args.color, sys.stderr)
    out.print(
        f"[bold]{for_rich(row.tool_name)}[/] {for_rich(row.tool_call_id)} in thread "
        f"{for_rich(row.thread_id)}: {row.n_chars:,} chars"
        + (f", {row.n_bytes:,} bytes" if row.n_bytes is not None else "")
        + f", {make_reference(row.ref_id)}; characters {args.start:,}-{end:,}",
        highlight=False,
    )
    if args.raw:  # exactly, for a file or a pipe; in pieces, so a reader that left is seen
        if hasattr(sys.stdout, "reconfigure"):  # a character the encoding lacks: an error
            sys.stdout.reconfigure(errors="strict")
        for at in range(0, len(text), RAW_PIECE_CHARS):
            sys.stdout.write(text[at : at + RAW_PIECE_CHARS])
            sys.stdout.flush()
    else:
        shown = for_terminal(text)
        sys.stdout.write(shown if shown.endswith("\n") else shown + "\n")
    if end < row.n_chars and args.length is None:
        out.print(f"[dim]… {row.n_chars - end:,} more chars: --start {end} --length N[/]")
    return 0


def _prune(args: argparse.Namespace, store: ToolOutputStore, out: Console) -> int:
    if args.older_than is None and args.thread is None:
        return usage_error(args, "outputs prune needs --older-than AGE and/or --thread T")
    before = store.disk_bytes()
    count = store.prune(older_than=args.older_than, thread_id=args.thread, dry_run=not args.yes)
    freed = None
    if args.yes and before is not None:
        store.reclaim_disk()
        freed = max(0, before - (store.disk_bytes() or 0))
    if args.json:
        report = {"deleted" if args.yes else "would_delete": count}
        print(for_json(report | ({"freed_bytes": freed} if args.yes else {})))
    elif args.yes:
        disk = (
            "the database reuses the space itself (its files keep their size)"
            if freed is None
            else f"{_megabytes(freed)} freed on disk (VACUUM)"
        )
        out.print(f"deleted {count} output(s); {disk}")
    else:
        out.print(f"would delete {count} output(s); run again with --yes to delete them")
    return 0


def _megabytes(size_bytes: int) -> str:
    """``size_bytes`` for a reader: ``"12.3 MB"`` (decimal megabytes), ``"512 bytes"`` below one
    kilobyte."""
    return f"{size_bytes:,} bytes" if size_bytes < 1_000 else f"{size_bytes / 1e6:,.1f} MB"
