"""The store's schema: its SQLAlchemy tables and the constants their columns are sized by.

Tables:

- ``tool_outputs``: a row per tool call, keyed by ``(thread, tool_call_id)`` and also by
  ``ref_id``, the unguessable id that an opaque reference ``internal://<ref_id>`` names. The full
  output lives in ``content`` (or, when longer, in chunks); ``n_chars`` (characters, not bytes) and ``sha256`` (of the UTF-8
  bytes) describe it without loading it. ``provider_call_id`` keeps the id the provider gave the
  call (providers reuse ids; the client's own ``tool_call_id`` is the key).
- ``tool_output_chunks``: an output longer than ``CHUNK_CHARS`` characters, ``CHUNK_CHARS``
  characters a row, so a slice reads only the one or two chunks it touches (SQLite's ``substr``
  on one 50 MB value reads all 50 MB; chunks keep a slice's cost independent of the value's
  size). A chunk row names its characters by their SHA-256 (``content_hash``,
  :func:`helpers.base.ids.content_sha256`);
- ``chunk_contents``: each distinct chunk's characters, once, under that hash: agents fetch the
  same page again and again (``workbook compare`` fetches the same pages under every strategy),
  and each copy costs the disk nothing but its chunk rows. A store shares them with itself
  alone: in a room each attendee's store is a PostgreSQL schema of her own.
- ``threads`` and ``thread_messages``: the conversation of each thread, message by message, so a
  later process can continue it (``workbook ask --thread ID``).
- ``checkpoint_results``: each run of a hard-stop checkpoint.

A thread id may be any text of any length: rows are found by ``thread_key``, the SHA-256 of the
thread id (64 hex characters), so indexes stay small on SQLite and PostgreSQL alike.

The migrations that bring an older database to this schema are in :mod:`helpers.store.migrations`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, DateTime, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from helpers.base import ids

#: Every row the agent writes has this ``kind``; other kinds may share the table later.
KIND_TOOL_OUTPUT = "tool_output"
#: The longest ``tool_call_id`` the store takes, in characters (the client's own ids are 29).
MAX_TOOL_CALL_ID_CHARS = 255
#: Outputs longer than this many characters are stored in chunks of this many characters, so a
#: slice reads one or two chunks instead of the whole value.
CHUNK_CHARS = 16_384


class Base(DeclarativeBase):
    """Declarative base of the store's tables."""


def thread_key(thread_id: str) -> str:
    """The key a thread's rows are stored under: SHA-256 (hex) of the thread id's UTF-8 bytes."""
    return ids.content_sha256(thread_id)


def _thread_key_default(context: Any) -> str:
    # an INSERT that sets only thread_id (e.g. a notebook's own ToolOutput(...)) gets its key
    return thread_key(context.get_current_parameters()["thread_id"])


class ToolOutput(Base):
    """One tool dispatch: who called what, with which arguments, and the full output."""

    __tablename__ = "tool_outputs"
    __table_args__ = (UniqueConstraint("thread_key", "tool_call_id", name="uq_thread_key_call"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    ref_id: Mapped[str] = mapped_column(String(64), unique=True, index=True)
    thread_id: Mapped[str] = mapped_column(Text)
    thread_key: Mapped[str] = mapped_column(String(64), index=True, default=_thread_key_default)
    tool_call_id: Mapped[str] = mapped_column(String(MAX_TOOL_CALL_ID_CHARS), index=True)
    provider_call_id: Mapped[str | None] = mapped_column(Text, nullable=True)
    tool_name: Mapped[str] = mapped_column(Text)
    tool_args: Mapped[str] = mapped_column(Text)  # JSON text, as the model sent it
    # the full output if it has at most CHUNK_CHARS characters; "" when it lives in chunks
    content: Mapped[str] = mapped_column(Text, deferred=True)
    n_chunks: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    n_chars: Mapped[int] = mapped_column(Integer)
    #: UTF-8 bytes of the output (``None`` for a row from before revision 0003 that the
    #: migration could not read)
    n_bytes: Mapped[int | None] = mapped_column(Integer, nullable=True)
    sha256: Mapped[str] = mapped_column(String(64), index=True)  # an output stored again
    kind: Mapped[str] = mapped_column(String(32), default=KIND_TOOL_OUTPUT, index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)


class ToolOutputChunk(Base):
    """A piece of a long output: ``CHUNK_CHARS`` characters (the last one may be shorter), held
    in :class:`ChunkContent` under ``content_hash``."""

    __tablename__ = "tool_output_chunks"

    output_id: Mapped[int] = mapped_column(ForeignKey("tool_outputs.id"), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    content_hash: Mapped[str] = mapped_column(
        String(64),
        ForeignKey("chunk_contents.hash", name="fk_tool_output_chunks_content_hash"),
        index=True,
    )


class ChunkContent(Base):
    """One distinct chunk's characters, stored once however many outputs hold them; the
    store's own deletes (:meth:`~helpers.store.writing.StoreWriting.prune`,
    :meth:`~helpers.store.writing.StoreWriting.clear_outputs`) take the rows no chunk names
    any more with them."""

    __tablename__ = "chunk_contents"

    hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    content: Mapped[str] = mapped_column(Text)


class Thread(Base):
    """A conversation: its id (any text) and when it started."""

    __tablename__ = "threads"

    thread_key: Mapped[str] = mapped_column(String(64), primary_key=True)
    thread_id: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class ThreadMessage(Base):
    """One chat message of a thread, as sent to the model (JSON text), in order of ``id``."""

    __tablename__ = "thread_messages"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    thread_key: Mapped[str] = mapped_column(String(64), index=True)
    role: Mapped[str] = mapped_column(String(16))
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class CheckpointResult(Base):
    """One run of a hard-stop checkpoint: who ran it (``attendee``), which TODO, passed or not."""

    __tablename__ = "checkpoint_results"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    attendee: Mapped[str] = mapped_column(Text)
    notebook: Mapped[str] = mapped_column(String(8))
    todo: Mapped[int] = mapped_column(Integer)
    passed: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
