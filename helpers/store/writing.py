"""Writing the store: a tool dispatch logged (its output in chunks when long), a thread and its
messages, a checkpoint run; rows pruned and their disk space given back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select
from sqlalchemy.exc import IntegrityError

from helpers.base import ids
from helpers.store.database import sqlite_file
from helpers.store.quotas import StoreQuotas
from helpers.store.reading import StoredOutput, StoreReading
from helpers.store.schema import (
    CHUNK_CHARS,
    KIND_TOOL_OUTPUT,
    MAX_TOOL_CALL_ID_CHARS,
    CheckpointResult,
    ChunkContent,
    Thread,
    ThreadMessage,
    ToolOutput,
    ToolOutputChunk,
    thread_key,
)

#: Bytes of randomness in a reference id (:func:`helpers.base.ids.argument_safe_token`): 16 URL-safe
#: characters, never starting with ``-``.
REF_ID_BYTES = 12


class DuplicateToolCallError(ValueError):
    """A ``tool_call_id`` was logged twice in the same thread (it must be unique per thread)."""


def _chunks(text: str) -> list[str]:
    """``text`` in pieces of :data:`CHUNK_CHARS` characters when it is longer than one piece
    (stored in ``tool_output_chunks``), else ``[]`` (stored in the row itself)."""
    if len(text) <= CHUNK_CHARS:
        return []
    return [text[i : i + CHUNK_CHARS] for i in range(0, len(text), CHUNK_CHARS)]


#: Hashes asked for in one ``IN (…)`` (a database caps the parameters of one statement).
_HASHES_PER_QUERY = 1_000


def _insert_unless_held(dialect: str, table: Any) -> Any:
    """An ``INSERT`` into ``table`` that leaves a row another writer added at the same moment
    (the same key) as it is: ``ON CONFLICT DO NOTHING`` on PostgreSQL and SQLite (each
    dialect's own), a plain ``INSERT`` elsewhere."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as dialect_insert
    elif dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as dialect_insert
    else:
        return insert(table)
    return dialect_insert(table).on_conflict_do_nothing()


def _add_chunks(connection: Connection, output: StoredOutput, chunks: list[str]) -> None:
    """``output``'s chunk rows, in order, in the caller's transaction, their characters held
    once: an output's the store holds already (:func:`_held_hashes`), or those it lacks
    added (:func:`_add_contents`)."""
    hashes = _held_hashes(connection, output, len(chunks)) or _add_contents(connection, chunks)
    connection.execute(
        insert(ToolOutputChunk),
        [{"output_id": output.id, "seq": i, "content_hash": h} for i, h in enumerate(hashes)],
    )


def _held_hashes(connection: Connection, output: StoredOutput, n_chunks: int) -> list[str]:
    """The chunk hashes of an output the store already holds with the same characters as
    ``output`` (the same SHA-256 and length), in order; ``[]`` when it holds none. An agent
    fetches the same page again and again: its chunks are then neither hashed nor sent."""
    same = connection.scalar(
        select(ToolOutput.id)
        .where(
            ToolOutput.sha256 == output.sha256,
            ToolOutput.n_chars == output.n_chars,
            ToolOutput.n_chunks == n_chunks,
            ToolOutput.id != output.id,
        )
        .limit(1)
    )
    if same is None:
        return []
    hashes = list(
        connection.scalars(
            select(ToolOutputChunk.content_hash)
            .where(ToolOutputChunk.output_id == same)
            .order_by(ToolOutputChunk.seq)
        )
    )
    return hashes if len(hashes) == n_chunks else []  # a damaged row: hashed anew


def _add_contents(connection: Connection, chunks: list[str]) -> list[str]:
    """The hashes of ``chunks``, in order, each chunk the store does not hold yet added under
    its hash, in the caller's transaction: only the missing ones are sent, and one that another
    writer adds at the same moment (PostgreSQL) is left as it is (:func:`_insert_unless_held`),
    in the order of their hashes, so two writers cannot deadlock on each other's rows."""
    hashes = [ids.content_sha256(c) for c in chunks]
    contents = dict(sorted(zip(hashes, chunks, strict=True)))  # one order: no deadlock
    wanted = list(contents)
    held: set[str] = set()
    for start in range(0, len(wanted), _HASHES_PER_QUERY):
        some = wanted[start : start + _HASHES_PER_QUERY]
        held.update(
            connection.scalars(select(ChunkContent.hash).where(ChunkContent.hash.in_(some)))
        )
    missing = [{"hash": h, "content": c} for h, c in contents.items() if h not in held]
    if missing:
        connection.execute(_insert_unless_held(connection.dialect.name, ChunkContent), missing)
    return hashes


class StoreWriting(StoreReading, StoreQuotas):
    """The store's writing: :meth:`log_tool` (it checks the thread's quota in its transaction,
    :class:`~helpers.store.quotas.StoreQuotas`, and reads back a clash,
    :class:`~helpers.store.reading.StoreReading`), threads and their messages, checkpoint runs,
    :meth:`prune` and :meth:`reclaim_disk`."""

    # -- tool outputs ---------------------------------------------------------------------------

    def log_tool(
        self,
        thread_id: str,
        tool_call_id: str,
        tool_name: str,
        tool_args: Mapping[str, Any] | str,
        tool_output: str,
        *,
        kind: str = KIND_TOOL_OUTPUT,
        provider_call_id: str | None = None,
        max_thread_bytes: int | None = None,
    ) -> StoredOutput:
        """Persist one dispatch and return its row (without ``content``).

        Args:
            thread_id: the conversation the call belongs to (any text, any length).
            tool_call_id: the id of the call (``call_…``); unique within the thread. The agent
                gives every call an id of its own (:func:`helpers.loop.records.new_tool_call_id`).
            tool_name: the tool that ran.
            tool_args: the arguments as the model sent them: a mapping (stored as JSON text) or
                JSON text already.
            tool_output: the full output, any length.
            provider_call_id: the id the provider gave the call, if any (kept for reference).
            max_thread_bytes: the thread's quota: the most UTF-8 bytes of arguments and output
                all its rows may hold, this one included (checked in the same transaction as
                the write);
                ``None``, no quota (:class:`helpers.base.limits.TurnLimits` gives the agent's).

        Raises:
            DuplicateToolCallError: ``tool_call_id`` is already logged in ``thread_id``.
            StoreQuotaExceeded: the arguments and output would pass ``max_thread_bytes``;
                nothing is stored.
            TypeError: ``tool_output`` is not a string.
            ValueError: ``tool_call_id`` is empty or longer than 255 characters, or the output
                holds a NUL character and the database is PostgreSQL.
        """
        self._check_loggable(tool_call_id, tool_output)
        args_text = (
            tool_args if isinstance(tool_args, str) else json.dumps(tool_args, ensure_ascii=False)
        )
        encoded = tool_output.encode("utf-8", "surrogatepass")
        chunks = _chunks(tool_output)
        values = {
            "ref_id": ids.argument_safe_token(REF_ID_BYTES),
            "thread_id": thread_id,
            "thread_key": thread_key(thread_id),
            "tool_call_id": tool_call_id,
            "provider_call_id": provider_call_id,
            "tool_name": tool_name,
            "tool_args": args_text,
            "content": "" if chunks else tool_output,
            "n_chunks": len(chunks),
            "n_chars": len(tool_output),
            "n_bytes": len(encoded),
            "sha256": ids.content_sha256(tool_output),
            "kind": kind,
            "created_at": datetime.now(UTC),
        }
        try:
            with self.engine.begin() as connection:
                if max_thread_bytes is not None:
                    adding = len(encoded) + len(args_text.encode("utf-8", "surrogatepass"))
                    self._check_quota(connection, thread_id, adding, max_thread_bytes)
                inserted = connection.execute(insert(ToolOutput), values)
                (output_id,) = inserted.inserted_primary_key
                output = StoredOutput.from_row(SimpleNamespace(id=output_id, **values), None)
                if chunks:
                    _add_chunks(connection, output, chunks)
        except IntegrityError as exc:
            if self.get(thread_id, tool_call_id) is not None:
                raise DuplicateToolCallError(
                    f"tool_call_id {tool_call_id!r} is already logged in thread {thread_id!r}"
                ) from exc
            raise
        return output

    def _check_loggable(self, tool_call_id: str, tool_output: str) -> None:
        """Raise what :meth:`log_tool` raises for an output or id it cannot store."""
        if not isinstance(tool_output, str):
            raise TypeError(f"tool_output must be str, got {type(tool_output).__name__}")
        if not tool_call_id or len(tool_call_id) > MAX_TOOL_CALL_ID_CHARS:
            raise ValueError(
                f"tool_call_id must be 1-{MAX_TOOL_CALL_ID_CHARS} characters, "
                f"got {len(tool_call_id)}"
            )
        if "\x00" in tool_output and self.engine.dialect.name == "postgresql":
            raise ValueError(
                "PostgreSQL TEXT cannot hold NUL characters; this output has one "
                "(SQLite stores it fine)"
            )

    # -- housekeeping ---------------------------------------------------------------------------

    def prune(
        self,
        *,
        older_than: timedelta | datetime | None = None,
        thread_id: str | None = None,
        dry_run: bool = False,
    ) -> int:
        """Delete rows older than an age (or a moment) and/or of one thread; return how many.

        Args:
            older_than: a ``timedelta`` (rows created longer ago than that) or an aware
                ``datetime`` (rows created before it).
            thread_id: only rows of this thread.
            dry_run: count the rows that would go, and delete nothing.

        Raises:
            ValueError: neither filter was given (pruning everything must be explicit:
                use ``older_than=timedelta(0)``).
        """
        if older_than is None and thread_id is None:
            raise ValueError("prune needs older_than and/or thread_id")
        doomed = select(ToolOutput.id)
        if older_than is not None:
            cutoff = (
                datetime.now(UTC) - older_than if isinstance(older_than, timedelta) else older_than
            )
            if self.engine.dialect.name == "sqlite":
                cutoff = cutoff.astimezone(UTC).replace(tzinfo=None)
            doomed = doomed.where(ToolOutput.created_at < cutoff)
        if thread_id is not None:
            doomed = doomed.where(ToolOutput.thread_key == thread_key(thread_id))
        if dry_run:
            with self.engine.connect() as connection:
                counted = connection.scalar(select(func.count()).select_from(doomed.subquery()))
                return int(counted or 0)
        with self.engine.begin() as connection:
            connection.execute(delete(ToolOutputChunk).where(ToolOutputChunk.output_id.in_(doomed)))
            result = connection.execute(delete(ToolOutput).where(ToolOutput.id.in_(doomed)))
            held = select(ToolOutputChunk.content_hash).where(
                ToolOutputChunk.content_hash == ChunkContent.hash
            )
            connection.execute(delete(ChunkContent).where(~held.exists()))  # none holds them
            if thread_id is not None and older_than is None:  # the whole thread is forgotten
                key = thread_key(thread_id)
                connection.execute(delete(ThreadMessage).where(ThreadMessage.thread_key == key))
                connection.execute(delete(Thread).where(Thread.thread_key == key))
            return int(result.rowcount or 0)

    def clear_outputs(self) -> None:
        """Delete every tool output of every thread, its chunks and their contents (threads and
        their messages stay): a course check's store, fresh for each input it tries."""
        with self.engine.begin() as connection:
            connection.execute(delete(ToolOutputChunk))
            connection.execute(delete(ToolOutput))
            connection.execute(delete(ChunkContent))

    def reclaim_disk(self) -> None:
        """Give the space of deleted rows back to the file system (measure it with
        :meth:`disk_bytes` before :meth:`prune` and after this).

        Deleting rows frees pages inside the database, not on disk: a SQLite file keeps its size
        and its write-ahead log grows with the deletion itself. On SQLite this runs ``VACUUM``
        (the file is rewritten without its free pages) and ``PRAGMA wal_checkpoint(TRUNCATE)``
        (the log is copied in and cut to zero bytes) (https://sqlite.org/lang_vacuum.html,
        https://sqlite.org/pragma.html#pragma_wal_checkpoint). Elsewhere (PostgreSQL) it does
        nothing: the server reuses freed space itself (autovacuum), and only ``VACUUM FULL``, a
        table lock the workbook does not take, would shrink its files.

        Raises:
            sqlalchemy.exc.OperationalError: another connection holds a transaction open.
        """
        if sqlite_file(self.url) is None:
            return
        with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.exec_driver_sql("VACUUM")
            connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")

    # -- threads and their messages ------------------------------------------------------------

    def ensure_thread(self, thread_id: str) -> bool:
        """Record ``thread_id`` as a thread if it is not one yet; return whether it was new."""
        key = thread_key(thread_id)
        with self.engine.connect() as connection:
            if connection.scalar(select(Thread.thread_key).where(Thread.thread_key == key)):
                return False
        try:
            with self.engine.begin() as connection:
                connection.execute(
                    insert(Thread),
                    {"thread_key": key, "thread_id": thread_id, "created_at": _now()},
                )
        except IntegrityError:  # another process started it a moment ago
            return False
        return True

    def append_message(self, thread_id: str, message: Mapping[str, Any]) -> None:
        """Add one chat message (any JSON-serialisable mapping) to the end of a thread."""
        body = json.dumps(dict(message), ensure_ascii=True, default=str)
        with self.engine.begin() as connection:
            connection.execute(
                insert(ThreadMessage),
                {
                    "thread_key": thread_key(thread_id),
                    "role": str(message.get("role", ""))[:16],
                    "body": body,
                    "created_at": _now(),
                },
            )

    # -- checkpoints ----------------------------------------------------------------------------

    def log_checkpoint(self, attendee: str, notebook: str, todo: int, *, passed: bool) -> None:
        """Record one checkpoint run of ``attendee`` (any text) on TODO ``todo`` of notebook
        ``notebook`` (``"04"``)."""
        with self.engine.begin() as connection:
            connection.execute(
                insert(CheckpointResult),
                {
                    "attendee": attendee,
                    "notebook": notebook,
                    "todo": todo,
                    "passed": passed,
                    "created_at": _now(),
                },
            )


def _now() -> datetime:
    return datetime.now(UTC)
