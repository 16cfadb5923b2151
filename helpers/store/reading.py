"""Reading the store: rows as :class:`StoredOutput`, values whole or in character ranges,
threads and their messages, checkpoint progress, the bytes on disk.

Lookups follow one pattern: ``get…`` returns one row or ``None`` (:meth:`~StoreReading.get` by
thread and ``tool_call_id``, :meth:`~StoreReading.get_by_ref` by reference id), ``list…``
returns a list (:meth:`~StoreReading.list_thread`, :meth:`~StoreReading.list_by_call_id` across
threads, :meth:`~StoreReading.list_threads`), ``read…`` returns content
(:meth:`~StoreReading.read_all`, :meth:`~StoreReading.read_range`).

Reads of a part of a value (:meth:`StoreReading.read_range`) never load the whole value: an
output of up to ``CHUNK_CHARS`` characters sits in ``content`` and is sliced with ``substr`` in
SQL; a longer one is read from ``tool_output_chunks``, only the one or two chunks the slice
touches (:mod:`helpers.store.schema`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, select

from helpers.store.checkpoint_rows import as_utc, checkpoint_summary
from helpers.store.database import StoreDatabase, sqlite_file
from helpers.store.schema import (
    CHUNK_CHARS,
    CheckpointResult,
    ChunkContent,
    Thread,
    ThreadMessage,
    ToolOutput,
    ToolOutputChunk,
    thread_key,
)


def _check_whole(row_id: int, found: int, expected: int) -> None:
    """Raise ``RuntimeError`` when fewer chunk contents were found than the chunks asked for (a
    content row deleted by hand: the store is damaged), rather than return a shortened output."""
    if found != expected:
        raise RuntimeError(
            f"output {row_id}: {expected - found} of its chunks' characters are missing from "
            "chunk_contents (the store is damaged)"
        )


@dataclass(frozen=True)
class StoredOutput:
    """A row of ``tool_outputs`` as plain data. ``content`` is ``None`` when not loaded."""

    id: int
    ref_id: str
    thread_id: str
    tool_call_id: str
    tool_name: str
    tool_args: str
    n_chars: int
    sha256: str
    kind: str
    created_at: datetime
    content: str | None = None
    provider_call_id: str | None = None
    n_bytes: int | None = None  # UTF-8 bytes of the output

    @property
    def args(self) -> Any:
        """``tool_args`` parsed from JSON (the raw text if it is not valid JSON)."""
        try:
            return json.loads(self.tool_args)
        except ValueError:
            return self.tool_args

    @classmethod
    def from_row(cls, row: Any, content: str | None) -> StoredOutput:
        """The plain data of ``row`` (a row of :data:`OUTPUT_COLUMNS`, or anything with those
        attributes), with ``content`` (``None``: not loaded)."""
        return cls(
            id=row.id,
            ref_id=row.ref_id,
            thread_id=row.thread_id,
            tool_call_id=row.tool_call_id,
            tool_name=row.tool_name,
            tool_args=row.tool_args,
            n_chars=row.n_chars,
            sha256=row.sha256,
            kind=row.kind,
            created_at=as_utc(row.created_at),
            content=content,
            provider_call_id=row.provider_call_id,
            n_bytes=row.n_bytes,
        )


#: The columns of ``tool_outputs`` a :class:`StoredOutput` is made of: all but ``content``,
#: which is read only when asked for (:meth:`StoreReading._content`).
OUTPUT_COLUMNS = tuple(c for c in ToolOutput.__table__.c if c.name != "content")


class StoreReading(StoreDatabase):
    """The store's reading: rows by thread, call id or reference, values whole or in ranges,
    threads and their messages, checkpoint progress, the bytes on disk.

    Every read is one SQLAlchemy Core connection (``engine.connect()``) and rows of the
    mapped tables' columns: no ORM session, whose unit of work a read has no use for and which
    cost three times the statement itself on each of a turn's reads."""

    # -- looking up -----------------------------------------------------------------------------

    def get(
        self, thread_id: str, tool_call_id: str, *, with_content: bool = False
    ) -> StoredOutput | None:
        """The row of ``tool_call_id`` in ``thread_id``, or ``None``."""
        return self._one(
            with_content,
            ToolOutput.thread_key == thread_key(thread_id),
            ToolOutput.tool_call_id == tool_call_id,
        )

    def list_by_call_id(
        self, tool_call_id: str, *, with_content: bool = False
    ) -> list[StoredOutput]:
        """Every row with ``tool_call_id``, in any thread (ids are unique per thread only)."""
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(*OUTPUT_COLUMNS).where(ToolOutput.tool_call_id == tool_call_id)
            ).all()
            return [
                StoredOutput.from_row(r, self._content(connection, r) if with_content else None)
                for r in rows
            ]

    def get_by_ref(self, ref_id: str, *, with_content: bool = False) -> StoredOutput | None:
        """The row an opaque reference ``internal://<ref_id>`` names, or ``None``."""
        return self._one(with_content, ToolOutput.ref_id == ref_id)

    def _one(self, with_content: bool, *where: Any) -> StoredOutput | None:
        """The first row matching ``where``, its content read too when ``with_content``."""
        columns = (*OUTPUT_COLUMNS, ToolOutput.content) if with_content else OUTPUT_COLUMNS
        with self.engine.connect() as connection:
            row = connection.execute(select(*columns).where(*where)).first()
            if row is None:
                return None
            content = self._content(connection, row) if with_content else None
            return StoredOutput.from_row(row, content)

    def list_thread(self, thread_id: str) -> list[StoredOutput]:
        """The rows of a thread in the order they were written (without ``content``)."""
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(*OUTPUT_COLUMNS)
                .where(ToolOutput.thread_key == thread_key(thread_id))
                .order_by(ToolOutput.id)
            ).all()
        return [StoredOutput.from_row(r, None) for r in rows]

    def ref_ids(self, thread_id: str) -> list[str]:
        """The reference ids of every output of a thread (what ``internal://<id>`` may name)."""
        with self.engine.connect() as connection:
            return list(
                connection.scalars(
                    select(ToolOutput.ref_id).where(ToolOutput.thread_key == thread_key(thread_id))
                ).all()
            )

    def count(self, thread_id: str | None = None) -> int:
        """Number of rows, in one thread or in all."""
        stmt = select(func.count(ToolOutput.id))
        if thread_id is not None:
            stmt = stmt.where(ToolOutput.thread_key == thread_key(thread_id))
        with self.engine.connect() as connection:
            return int(connection.scalar(stmt) or 0)

    # -- reading values -------------------------------------------------------------------------

    @staticmethod
    def _content(connection: Connection, row: Any) -> str:
        """The whole output of ``row`` (a row of :data:`OUTPUT_COLUMNS`): its chunks joined, or
        its ``content`` column read (the row's own, if it was selected)."""
        if not row.n_chunks:
            if "content" in row._fields:
                return str(row.content)
            return str(connection.scalar(select(ToolOutput.content).where(ToolOutput.id == row.id)))
        pieces = connection.scalars(
            select(ChunkContent.content)
            .join(ToolOutputChunk, ToolOutputChunk.content_hash == ChunkContent.hash)
            .where(ToolOutputChunk.output_id == row.id)
            .order_by(ToolOutputChunk.seq)
        ).all()
        _check_whole(row.id, len(pieces), row.n_chunks)
        return "".join(pieces)

    def read_all(self, row_id: int) -> str:
        """The full output of row ``row_id``. Raises ``KeyError`` if there is no such row."""
        with self.engine.connect() as connection:
            row = connection.execute(
                select(ToolOutput.id, ToolOutput.n_chunks, ToolOutput.content).where(
                    ToolOutput.id == row_id
                )
            ).first()
            if row is None:
                raise KeyError(f"no tool output with id {row_id}")
            return self._content(connection, row)

    def read_range(self, row_id: int, start: int, length: int) -> str:
        """Characters ``[start, start + length)`` of row ``row_id``'s output, read in SQL.

        ``start`` is zero-based and must already be non-negative (callers turn a negative start
        into ``n_chars + start``); a range past the end is cut, as Python slicing does. Units are
        characters, not bytes, on SQLite and PostgreSQL alike. A value with a NUL character is
        sliced in Python (SQLite's ``substr`` stops at NUL).

        Raises:
            ValueError: ``start`` or ``length`` is negative.
            KeyError: there is no such row.
        """
        if start < 0 or length < 0:
            raise ValueError(f"start and length must be >= 0, got start={start}, length={length}")
        with self.engine.connect() as connection:
            meta = connection.execute(
                select(ToolOutput.n_chars, ToolOutput.n_chunks).where(ToolOutput.id == row_id)
            ).first()
            if meta is None:
                raise KeyError(f"no tool output with id {row_id}")
            n_chars, n_chunks = meta
            end = min(start + length, n_chars)
            if start >= end:
                return ""
            if n_chunks:
                first, last = start // CHUNK_CHARS, (end - 1) // CHUNK_CHARS
                pieces = connection.scalars(
                    select(ChunkContent.content)
                    .join(ToolOutputChunk, ToolOutputChunk.content_hash == ChunkContent.hash)
                    .where(
                        ToolOutputChunk.output_id == row_id,
                        ToolOutputChunk.seq.between(first, last),
                    )
                    .order_by(ToolOutputChunk.seq)
                ).all()
                _check_whole(row_id, len(pieces), last - first + 1)
                offset = start - first * CHUNK_CHARS
                return "".join(pieces)[offset : offset + (end - start)]
            value = connection.scalar(
                select(func.substr(ToolOutput.content, start + 1, length)).where(
                    ToolOutput.id == row_id
                )
            )
        if len(value or "") != end - start:
            # SQLite's substr() stops at an embedded NUL character; such values are rare, and
            # for them we slice in Python instead.
            value = self.read_all(row_id)[start:end]
        return value or ""

    # -- on disk -------------------------------------------------------------------------------

    def disk_bytes(self) -> int | None:
        """Bytes the store takes on disk: a SQLite database file and its ``-wal`` file together;
        ``None`` for another database (a server's files are its own)."""
        db_file = sqlite_file(self.url)
        if db_file is None:
            return None
        files = (db_file, db_file.with_name(db_file.name + "-wal"))
        return sum(f.stat().st_size for f in files if f.exists())

    # -- threads and their messages ---------------------------------------------------------

    def thread_exists(self, thread_id: str) -> bool:
        """Whether anything was stored under ``thread_id``: the thread itself (its messages) or,
        in a database from before threads were stored, a tool output."""
        key = thread_key(thread_id)
        with self.engine.connect() as connection:
            if connection.scalar(select(Thread.thread_key).where(Thread.thread_key == key)):
                return True
            found = connection.scalar(select(ToolOutput.id).where(ToolOutput.thread_key == key))
            return found is not None

    def thread_messages(self, thread_id: str) -> list[dict[str, Any]]:
        """Every message of a thread, in the order it was added (empty for an unknown thread)."""
        with self.engine.connect() as connection:
            bodies = connection.scalars(
                select(ThreadMessage.body)
                .where(ThreadMessage.thread_key == thread_key(thread_id))
                .order_by(ThreadMessage.id)
            ).all()
        return [json.loads(body) for body in bodies]

    def thread_summaries(self, limit: int = 50) -> list[dict[str, Any]]:
        """The threads with logged outputs, most recent first: ``thread_id``, ``outputs``,
        ``chars`` and ``bytes`` (summed) and ``last`` (when the latest output was logged)."""
        stmt = (
            select(
                ToolOutput.thread_key,
                func.min(ToolOutput.thread_id),
                func.count(ToolOutput.id),
                func.sum(ToolOutput.n_chars),
                func.sum(ToolOutput.n_bytes),
                func.max(ToolOutput.created_at),
            )
            .group_by(ToolOutput.thread_key)
            .order_by(func.max(ToolOutput.created_at).desc())
            .limit(limit)
        )
        with self.engine.connect() as connection:
            return [
                {
                    "thread_id": thread_id,
                    "outputs": outputs,
                    "chars": chars or 0,
                    "bytes": n_bytes or 0,
                    "last": as_utc(last) if last else None,
                }
                for _key, thread_id, outputs, chars, n_bytes, last in connection.execute(stmt).all()
            ]

    def last_thread(self) -> str | None:
        """The id of the thread that was written to last (its newest message is the newest of
        all), or ``None`` when no thread holds a message."""
        with self.engine.connect() as connection:
            return connection.scalar(
                select(Thread.thread_id)
                .join(ThreadMessage, ThreadMessage.thread_key == Thread.thread_key)
                .order_by(ThreadMessage.id.desc())
                .limit(1)
            )

    def list_threads(self, limit: int = 20) -> list[str]:
        """The ids of the most recently started threads, newest first."""
        with self.engine.connect() as connection:
            return list(
                connection.scalars(
                    select(Thread.thread_id).order_by(Thread.created_at.desc()).limit(limit)
                ).all()
            )

    # -- checkpoints ---------------------------------------------------------------------------

    def checkpoint_progress(self) -> dict[str, dict[str, Any]]:
        """Per attendee: ``passed`` (the ``"NN.T"`` TODOs whose checkpoint passed at least
        once, sorted), ``runs`` (checkpoint runs in all) and ``last`` (the newest run's time)."""
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(
                    CheckpointResult.attendee,
                    CheckpointResult.notebook,
                    CheckpointResult.todo,
                    CheckpointResult.passed,
                    CheckpointResult.created_at,
                ).order_by(CheckpointResult.id)
            )
            return checkpoint_summary(rows)
