"""The records of one agent turn, and the events it reports as it goes.

A turn (:func:`helpers.loop.agent.run_turn`) returns a :class:`TurnRecord`: every model call
with its ``usage`` (:class:`ModelCallRecord`), every tool call with the arguments as the model
sent them and the result as the model saw it (:class:`ToolCallRecord`), the answer, and a
``status``, one of :data:`STATUSES`:

==================  ========================================================================
``ok``              the model answered
``incomplete``      the final message came back cut (``finish_reason`` ``length``), filtered
                    (``content_filter``), refused, empty, or with the answer only in its
                    reasoning; ``answer`` and ``reasoning`` hold what did come back. Also a
                    turn that ran out of model calls after replies cut at the output limit
                    inside a tool call's arguments (those calls are not run)
``max_iterations``  no final answer within ``max_iterations`` model calls, or the model made
                    the same tool calls ``TurnLimits.max_identical_replies`` replies in a row
``context_exceeded`` a request was longer than the model's context window (HTTP 400
                    ``context_length_exceeded``, or a provider's message saying so)
``error``           the endpoint failed (after the SDK's retries) or sent something that is not
                    a chat completion; ``error`` says what, with any API key redacted
==================  ========================================================================

As it goes, a turn reports each :data:`TurnEvent` (a model call, a tool call, a compaction, then
:class:`TurnEnded`) to an :data:`EventHook`. Nothing here imports the loop: the loop's modules
(:mod:`helpers.loop.model_call`, :mod:`helpers.loop.dispatch`, :mod:`helpers.loop.agent`) fill
these records in.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from helpers.base import ids
from helpers.context.read_back import ResultKind
from helpers.models.providers import CALL_HEX

#: Turn statuses (see the module docstring).
STATUSES = ("ok", "incomplete", "max_iterations", "context_exceeded", "error")


@dataclass
class ModelCallRecord:
    """One chat-completions request: its token ``usage`` and what came back.

    ``prompt_tokens`` and ``completion_tokens`` are the response's ``usage``; when a server sends
    none (or nulls, or ``{}``), they are counted locally with o200k_base and ``usage_source``
    says ``"counted"`` (``"partly counted"`` when only one of the two was missing).
    """

    index: int
    prompt_tokens: int
    completion_tokens: int
    messages_sent: int
    finish_reason: str | None
    tool_calls: int
    usage_source: str = "response"
    seconds: float = 0.0
    #: prompt tokens the provider says it served from its cache (``Reply.cached_tokens``)
    cached_tokens_reported: int | None = None

    @property
    def cut_in_call(self) -> bool:
        """The response stopped at the model's output limit (``finish_reason`` ``length``)
        while writing tool calls: their arguments are cut, and the client refuses them."""
        return self.finish_reason == "length" and self.tool_calls > 0


def output_limit_reason(model_calls: list[ModelCallRecord]) -> str | None:
    """Why the model's output limit decided a turn, or ``None``: how many responses stopped at
    it inside a tool call (:attr:`ModelCallRecord.cut_in_call`), at how many completion
    tokens. The one wording of this verdict (the turn's error, a case's reasons)."""
    cut = [c for c in model_calls if c.cut_in_call]
    if not cut:
        return None
    return (
        f"the model's output limit: {len(cut)} response(s) stopped at "
        f"{max(c.completion_tokens for c in cut):,} completion tokens (finish_reason 'length') "
        "inside a tool call, whose cut arguments were not run"
    )


@dataclass
class ToolCallRecord:
    """One tool call: as the model sent it, and as the model saw its result.

    ``id`` is the client's own ``tool_call_id`` (unique in the thread; the one in the messages,
    the store and truncation markers); ``provider_id`` is the id the provider sent, if any.
    ``result_kind`` is a :data:`helpers.context.read_back.ResultKind` (``inline``, ``truncated``,
    ``boxed``, ``middle``, ``saved`` or ``error``);
    ``output_chars`` is the length in characters of the full output (before any preview or
    boxing) and ``output_sha256`` the SHA-256 of its UTF-8 bytes. ``received_sha256`` holds, for
    each top-level string argument, the SHA-256 of the value the tool really received (after
    unboxing): sink checks compare it with an earlier call's ``output_sha256``. The ``_trimmed``
    twins hash the same texts without their final newlines, so a check can say that a copy
    differs only there. ``guards`` names
    the guards (:data:`helpers.base.guards.GUARDS`) that repaired, refused or noted this call.
    ``program_call_id`` is, in code mode, the ``run_program`` call whose program made this call:
    its ``result`` went to the program, not into the context. ``server`` names the MCP server
    that ran the tool (:attr:`helpers.tooling.registry.Tool.server`; ``None``: the workbook's
    own process).
    """

    id: str
    name: str
    arguments: str
    result: str
    result_kind: ResultKind
    output_chars: int | None = None
    output_sha256: str | None = None
    received_sha256: dict[str, str] = field(default_factory=dict)
    output_sha256_trimmed: str | None = None
    received_sha256_trimmed: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    ran: bool = False
    provider_id: str | None = None
    guards: list[str] = field(default_factory=list)
    fatal: str | None = None  # the turn cannot go on (the store failed)
    program_call_id: str | None = None
    server: str | None = None


@dataclass
class TurnRecord:
    """Everything about one turn; ``status`` is one of :data:`STATUSES`.

    ``answer`` is the final message's text (cut or partial when ``incomplete``); ``reasoning`` is
    the final message's reasoning text when the provider sent one; ``guard_events`` names
    turn-level guards (ids replaced, provider fields echoed), one entry per occurrence.
    """

    model: str
    strategy: str
    boxing: str
    thread_id: str
    prompt: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    model_calls: list[ModelCallRecord] = field(default_factory=list)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    answer: str | None = None
    status: str = "running"
    error: str | None = None
    tool_schemas: list[dict[str, Any]] = field(default_factory=list, repr=False)
    compactions: list[dict[str, int]] = field(default_factory=list)
    reasoning: str | None = None
    guard_events: list[str] = field(default_factory=list)
    history_messages: int = 0
    box_threshold_chars: int | None = None  # the box policy's threshold, when boxing
    box_rule: str | None = None  # when the box policy boxes, in words ("over 1,000 tokens")
    #: what the client learned about the endpoint during this turn and changed for the session
    #: (a completion limit a provider refused, :mod:`helpers.models.completion_limit`), in words
    notices: list[str] = field(default_factory=list)
    #: the tool schemas offered in each model call (a policy may offer its tools only once they
    #: are of use); ``tool_schemas`` is the last call's
    schemas_per_call: list[list[dict[str, Any]]] = field(default_factory=list, repr=False)

    @property
    def ok(self) -> bool:
        """The model gave a final answer."""
        return self.status == "ok"

    def usage(self) -> dict[str, int]:
        """Totals over the turn: ``prompt_tokens``, ``completion_tokens``, ``calls``."""
        return {
            "prompt_tokens": sum(c.prompt_tokens for c in self.model_calls),
            "completion_tokens": sum(c.completion_tokens for c in self.model_calls),
            "calls": len(self.model_calls),
        }

    def guard_counts(self) -> dict[str, int]:
        """How often each guard fired in this turn: tool-call guards and turn-level ones."""
        counts = Counter(self.guard_events)
        for call in self.tool_calls:
            counts.update(call.guards)
        return dict(sorted(counts.items()))

    def to_json(self, *, include_context: bool = False) -> dict[str, Any]:
        """The CLI's ``--json`` object (``context`` holds the final messages if asked)."""
        data: dict[str, Any] = {
            "model": self.model,
            "strategy": self.strategy,
            "boxing": self.boxing,
            "thread_id": self.thread_id,
            "status": self.status,
            "tool_calls": [
                {
                    "id": t.id,
                    "provider_id": t.provider_id,
                    "name": t.name,
                    "arguments": t.arguments,
                    "result": t.result,
                    "result_kind": t.result_kind,
                    "ran": t.ran,
                    "output_chars": t.output_chars,
                    "output_sha256": t.output_sha256,
                    "received_sha256": t.received_sha256,
                    "guards": t.guards,
                    **({"server": t.server} if t.server is not None else {}),
                }
                for t in self.tool_calls
            ],
            "usage": self.usage(),
            "model_calls": [asdict(c) for c in self.model_calls],
            "answer": self.answer,
            "reasoning": self.reasoning,
            "guards": self.guard_counts(),
            "history_messages": self.history_messages,
            "compactions": self.compactions,
        }
        if self.error:
            data["error"] = self.error
        if self.notices:
            data["notices"] = self.notices
        if include_context:
            data["context"] = self.messages
        return data


def new_thread_id() -> str:
    """A fresh, unguessable thread id: ``thread_<16 hex>``."""
    return "thread_" + ids.token_hex(8)


def new_tool_call_id() -> str:
    """A fresh tool-call id of the client's own: ``call_<24 hex>`` (29 characters, within the
    40 that OpenAI accepts and the ``[A-Za-z0-9_-]`` that stricter providers require; Mistral's
    stricter form is :data:`helpers.models.providers.ALPHANUMERIC_9`)."""
    return CALL_HEX.make()


def error_result(message: str) -> str:
    """The JSON text of an error tool result: ``{"error": message}``."""
    return json.dumps({"error": message}, ensure_ascii=False)


@dataclass(frozen=True)
class CompactionEvent:
    """The history was compacted before model call ``before_model_call`` (from 0):
    ``folded_calls`` tool calls folded into a summary, the context going from ``tokens_before``
    to ``tokens_after`` (o200k_base tokens)."""

    before_model_call: int
    folded_calls: int
    tokens_before: int
    tokens_after: int


@dataclass(frozen=True)
class TurnEnded:
    """The turn's verdict: its ``status`` (one of :data:`STATUSES`) and the answer (``ok``,
    ``incomplete``) or the error message."""

    status: str
    text: str | None


#: What a turn reports as it goes, in order: each model call, each tool call, each compaction,
#: then how it ended.
TurnEvent = ModelCallRecord | ToolCallRecord | CompactionEvent | TurnEnded
#: Called with each :data:`TurnEvent` as the turn goes (for live display).
EventHook = Callable[[TurnEvent], None]


class TurnAborted(Exception):
    """Raised inside a turn to end it at once: ``status`` (one of :data:`STATUSES`, ``error``
    unless said) and the message, which is for the user, become the record's verdict. The loop
    catches it (:meth:`helpers.loop.agent.Agent.run` never raises it)."""

    def __init__(self, message: str, status: str = "error") -> None:
        super().__init__(message)
        self.status = status
