"""Threads that continue: a conversation stored message by message, replayed as history.

A turn (:meth:`helpers.loop.agent.Agent.run`) appends each of its messages to its thread in the
store (:meth:`ToolOutputStore.append_message`). A later turn, in the same process or another one,
continues the conversation with :func:`open_thread`: the model's first request then carries the
earlier turns (their answers, tool calls and results), and every reference they hold still
resolves, because the outputs are in the same store. Compaction applies to that history as usual.

A thread id is any non-empty text. An id nothing was stored under is refused unless the caller
says to start a new thread: a mistyped id must not silently start an empty conversation.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from helpers.loop.records import new_thread_id
from helpers.store.tool_outputs import ToolOutputStore
from helpers.text.unicode import has_unpaired_surrogate

#: The result a replayed tool call gets when its turn stopped before the call finished.
INTERRUPTED_RESULT = json.dumps(
    {"error": "no result: the turn stopped before this tool call finished"}
)


class ThreadError(ValueError):
    """A thread id that cannot be used as asked; the message says why and what to do."""


def repair_pairing(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` made safe to send again: every tool call answered, no orphan results.

    A turn that stopped mid-way (a crash, a kill, an endpoint failure) can leave an assistant
    message whose tool calls have no ``tool`` message; the API refuses such a history. Each
    missing result becomes :data:`INTERRUPTED_RESULT`, placed right after the call's other
    results; a ``tool`` message answering no pending call is dropped; system messages are dropped
    (the next turn brings its own); a user message the model never answered at all (the endpoint
    failed at once) is dropped, so a retried prompt is not sent twice.
    """
    repaired: list[dict[str, Any]] = []
    pending: list[str] = []

    def close_pending() -> None:
        for call_id in pending:
            repaired.append(
                {"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED_RESULT}
            )
        pending.clear()

    for message in messages:
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") in pending:
                pending.remove(message["tool_call_id"])
                repaired.append(message)
            continue
        close_pending()
        if role == "system":
            continue
        repaired.append(message)
        if role == "assistant":
            pending = [c.get("id") for c in message.get("tool_calls") or [] if c.get("id")]
    close_pending()
    return [
        m
        for i, m in enumerate(repaired)
        if m.get("role") != "user"
        or (i + 1 < len(repaired) and repaired[i + 1].get("role") != "user")
    ]


def load_history(store: ToolOutputStore, thread_id: str) -> list[dict[str, Any]]:
    """The stored conversation of ``thread_id``, ready to pass as
    ``agent.run(prompt, history=...)`` (:meth:`helpers.loop.agent.Agent.run`)."""
    return repair_pairing(store.thread_messages(thread_id))


def open_thread(
    store: ToolOutputStore, thread_id: str | None = None, *, new: bool = False
) -> tuple[str, list[dict[str, Any]]]:
    """The thread to run a turn in, and its history.

    Args:
        store: where threads are stored.
        thread_id: a thread to continue (or, with ``new``, to start); ``None`` starts a thread
            with a fresh id.
        new: start ``thread_id`` as a new thread instead of continuing it.

    Returns:
        ``(thread_id, history)``: history is ``[]`` for a new thread.

    Raises:
        ThreadError: the id is empty or not valid text; or nothing was stored under it and ``new`` is false (a
            mistyped id); or ``new`` is true and the thread already exists.
    """
    if thread_id is None:
        return new_thread_id(), []
    if not thread_id.strip():
        raise ThreadError("a thread id must not be empty")
    if has_unpaired_surrogate(thread_id):
        raise ThreadError(
            "the thread id is not valid UTF-8 text (the terminal passed bytes that do not decode)"
        )
    exists = store.thread_exists(thread_id)
    if new and exists:
        raise ThreadError(
            f"thread {_shown(thread_id)} already exists in {store!r}; to continue it, leave out "
            "--new-thread (in Python: open_thread(store, thread_id))"
        )
    if new:
        return thread_id, []
    if not exists:
        recent = store.list_threads(200)
        close = difflib.get_close_matches(thread_id, recent, n=3, cutoff=0.6)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise ThreadError(
            f"unknown thread {_shown(thread_id)}: nothing is stored under it in {store!r}.{hint} "
            "To start a new thread with this id, add --new-thread (in Python: "
            "open_thread(store, thread_id, new=True))."
        )
    return thread_id, load_history(store, thread_id)


def _shown(thread_id: str, width: int = 80) -> str:
    text = repr(thread_id)
    return text if len(text) <= width else text[: width - 4] + "…'"
