"""Notebook 02's plumbing: an empty database with the ``tool_outputs`` table, the library's store
writing through the attendee's ``log_tool``, and the checks that a real turn's every dispatch
reached it and that the attendee's ``prune`` closed the thread.

The attendee's functions come in as arguments: what these check is her code, whatever tools the
model chose.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine
from sqlalchemy.schema import CreateTable

from helpers.base.paths import var_dir
from helpers.store.database import make_engine
from helpers.store.reading import StoredOutput
from helpers.store.schema import Base, ToolOutput
from helpers.store.tool_outputs import ToolOutputStore
from helpers.text.escaping import for_terminal

if TYPE_CHECKING:
    from helpers.loop.records import TurnRecord

#: The attendee's ``log_tool(engine, thread_id, tool_call_id, tool_name, tool_args, tool_output)
#: -> int`` (notebook 02's TODO 1).
LogTool = Callable[[Engine, str, str, str, dict[str, Any], str], int]


def empty_tool_outputs_db() -> Engine:
    """An empty SQLite database ``var/notebook02.sqlite`` (an older one is removed) holding the
    ``tool_outputs`` table, with its ``CREATE TABLE`` statement printed.

    Returns:
        Its engine (:func:`helpers.store.database.make_engine`: WAL mode and a busy timeout, set
        on connect).

    Raises:
        OSError: ``var/`` cannot be written.
    """
    db_path = var_dir() / "notebook02.sqlite"
    db_path.unlink(missing_ok=True)
    engine = make_engine(f"sqlite:///{db_path}")
    Base.metadata.create_all(engine)
    print(CreateTable(ToolOutput.__table__).compile(engine))
    return engine


def store_with_log_tool(log_tool: LogTool, engine: Engine) -> ToolOutputStore:
    """The library's store on ``engine``'s database, writing every dispatch with ``log_tool``
    (the attendee's): the agent's every write goes through her function.

    The agent passes the arguments as a mapping or as JSON text; ``log_tool`` gets a dict. The
    store's quota and its ``kind`` and ``provider_call_id`` are not passed on (her ``log_tool``
    writes ``tool_output`` rows, without a quota).

    Raises:
        whatever ``log_tool`` raises, on the write that made it raise.
    """

    class NotebookStore(ToolOutputStore):
        """The library's store, writing every dispatch with notebook 02's ``log_tool``."""

        def log_tool(
            self,
            thread_id: str,
            tool_call_id: str,
            tool_name: str,
            tool_args: Mapping[str, Any] | str,
            tool_output: str,
            **_extra: Any,
        ) -> StoredOutput:
            args = json.loads(tool_args) if isinstance(tool_args, str) else dict(tool_args)
            log_tool(self.engine, thread_id, tool_call_id, tool_name, args, tool_output)
            row = self.get(thread_id, tool_call_id)
            if row is None:
                raise AssertionError(
                    f"log_tool wrote no row for {for_terminal(tool_call_id)} in the thread"
                )
            return row

    return NotebookStore(engine.url.render_as_string(hide_password=False))


def show_thread_rows(store: ToolOutputStore, thread_id: str) -> None:
    """Print the rows of ``thread_id``, one a line: call id, tool, characters, the start of the
    SHA-256 (the tool's name escaped: a model may name any tool)."""
    for row in store.list_thread(thread_id):
        name = for_terminal(row.tool_name)
        print(f"{row.tool_call_id}  {name:15} {row.n_chars:6} chars  sha256 {row.sha256[:12]}…")


def confirm_every_dispatch_logged(store: ToolOutputStore, turn: TurnRecord) -> None:
    """Check that every call of ``turn`` whose tool returned an output has its row in ``store``,
    in order (whatever tools the model chose), and print how the turn ended.

    Raises:
        AssertionError: the rows and the turn's calls differ: the attendee's ``log_tool`` lost,
            added or reordered a dispatch.
    """
    logged = [row.tool_name for row in store.list_thread(turn.thread_id)]
    outputs = [call.name for call in turn.tool_calls if call.output_sha256 is not None]
    assert logged == outputs, (
        f"the turn's tools returned {for_terminal(', '.join(outputs) or 'nothing')}; "
        f"your log_tool stored {for_terminal(', '.join(logged) or 'nothing')}"
    )
    print(f"the turn ended {turn.status!r}: {len(logged)} dispatches logged, every one of them")


def confirm_thread_pruned(store: ToolOutputStore, turn: TurnRecord, gone: int) -> None:
    """Check what the attendee's ``prune(…, thread_id=turn.thread_id)`` did: it said ``gone``
    rows went, as many as the turn logged, and none of the thread is left; print it.

    Raises:
        AssertionError: ``gone`` is not the number of rows the turn logged, or rows of the
            thread are left.
    """
    logged = sum(1 for call in turn.tool_calls if call.output_sha256 is not None)
    print(f"pruned {gone} rows of {turn.thread_id}")
    assert gone == logged, f"prune said {gone} rows went; the thread had {logged}"
    assert store.count(turn.thread_id) == 0, "rows of the thread are left after prune"
