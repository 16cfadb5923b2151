"""Caps on what one turn may consume, whatever the model asks: fan-out and growth.

A model decides how many tool calls a reply makes and how much their outputs weigh; a hostile or
looping one (or one that read an injected instruction) can ask for hundreds of calls in one
reply, or fetch a 6 MB document thirty times over. OWASP's LLM Top 10 calls this *unbounded
consumption* (LLM10:2025). Each cap below is a named setting of :class:`TurnLimits`, passed to
:class:`helpers.loop.agent.RunConfig` (``limits=``); over a cap, the call gets an error result that
tells the model what to do instead, it is not run (or its output is not kept), and nothing of it
is stored half-way.

The defaults leave room for every task of the workbook (the largest stores one 10 MB result and
routes it to two tools) and stop the attacks measured in ``tests/test_limits.py``.

Compaction's defaults live here too (:data:`DEFAULT_THRESHOLD_TOKENS`, :data:`DEFAULT_KEEP_LAST_CALLS`):
not caps, but the size at which a turn's history is summarised, kept apart from the compaction
code so that the command line's options can show them without importing it.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The most model calls in one turn (``workbook ask --max-iterations``), unless
#: :attr:`helpers.loop.agent.RunConfig.max_iterations` says otherwise.
DEFAULT_MAX_ITERATIONS = 8

#: Tool calls one model reply may make; the rest of that reply's calls are answered with an
#: error and not run (real agents call a few at a time).
MAX_TOOL_CALLS_PER_REPLY = 16
#: Tool calls one turn may make, over all its model calls.
MAX_TOOL_CALLS_PER_TURN = 64
#: UTF-8 bytes of tool output one turn may add to the store (outputs and their arguments).
MAX_STORED_BYTES_PER_TURN = 64_000_000
#: UTF-8 bytes of tool output one thread may hold in the store, over all its turns.
MAX_STORED_BYTES_PER_THREAD = 256_000_000
#: Model replies in a row that make exactly the same tool calls (names and arguments): the last
#: one's calls are not run and the turn stops. A model that repeats a call is not using its
#: result (a local server whose chat template drops tool results, a model in a loop); waiting
#: for max_iterations only spends time and tokens.
MAX_IDENTICAL_REPLIES = 3

#: Compaction's defaults (:func:`helpers.context.compaction.compact`; ``workbook ask
#: --compact``): the prompt tokens (o200k_base) over which a turn's earlier history is
#: summarised, and the most recent tool calls kept whole. They live here, apart from the
#: compaction code, so that ``workbook ask --help`` shows them without importing it.
DEFAULT_THRESHOLD_TOKENS = 10_000
DEFAULT_KEEP_LAST_CALLS = 6


@dataclass(frozen=True)
class TurnLimits:
    """The caps of one turn; ``None`` lifts a cap.

    Attributes:
        max_tool_calls_per_reply: tool calls run per model reply; the others get an error result.
        max_tool_calls_per_turn: tool calls run per turn (all its model calls together).
        max_stored_bytes_per_turn: UTF-8 bytes a turn may store (each output plus the arguments
            text it was called with); a call that would pass it ran, but its output is not kept
            and the model gets an error instead.
        max_stored_bytes_per_thread: UTF-8 bytes of tool-call arguments and tool output a thread
            may hold in the store (its quota, checked in the same transaction as the write:
            :meth:`helpers.store.tool_outputs.ToolOutputStore.log_tool`).
        max_identical_replies: model replies in a row with the same tool calls (names and
            arguments, key order aside); the last one's calls get an error result, unrun, and
            the turn ends ``max_iterations`` saying so.
    """

    max_tool_calls_per_reply: int | None = MAX_TOOL_CALLS_PER_REPLY
    max_tool_calls_per_turn: int | None = MAX_TOOL_CALLS_PER_TURN
    max_stored_bytes_per_turn: int | None = MAX_STORED_BYTES_PER_TURN
    max_stored_bytes_per_thread: int | None = MAX_STORED_BYTES_PER_THREAD
    max_identical_replies: int | None = MAX_IDENTICAL_REPLIES

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"TurnLimits.{name} must be a whole number >= 1 or None")
