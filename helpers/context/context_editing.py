"""Context editing: the oldest tool results replaced by a placeholder, as production APIs do it.

Anthropic's ``clear_tool_uses_20250919`` edit (Messages API, beta header
``context-management-2025-06-27``; guide "Context editing",
https://docs.claude.com/en/docs/build-with-claude/context-editing) clears tool results "when
conversation context grows beyond your configured threshold": the oldest first, each replaced
by placeholder text, the tool calls kept unless ``clear_tool_inputs``. It runs server-side,
before the prompt reaches the model: "your client application maintains the full, unmodified
conversation history". LangChain mirrors it client-side as middleware
(``ClearToolUsesEdit``, langchain-ai/langchain
``libs/langchain_v1/langchain/agents/middleware/context_editing.py``).

This module is that edit, client-side, on chat-completions messages: :class:`ClearToolUses`
holds its settings, :func:`clear_tool_uses` applies them to a message list and says what it
cleared, and :func:`policy_with_clearing` makes any policy send its requests cleared (the
history the loop keeps stays whole, as Anthropic's does).

Unlike RFC 013's tiers (:mod:`helpers.context.compaction`) nothing is summarised: a cleared
result is gone from the request, its call stays (a reference in it still resolves, the store
is never touched), and every ``tool_call_id`` keeps its ``tool`` message, so the pairing the
OpenAI protocol demands holds.

**Caching cuts both ways.** A cleared result changes the request from that message on, so the
provider's cached prefix ends there and the rest is written to the cache again: "you'll incur
cache write costs each time content is cleared" (Anthropic's guide, which recommends
``clear_at_least`` so that each clearing frees enough to be worth it). Its price is measured by
:func:`helpers.evaluation.pricing.session_cost`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from helpers.context.compaction import find_exchanges
from helpers.text.tokens import count_chat_tokens

if TYPE_CHECKING:
    from helpers.context.policies import ResultPolicy

#: The text a cleared tool result becomes: LangChain's ``DEFAULT_TOOL_PLACEHOLDER``
#: (``"[cleared]"``, langchain-ai/langchain
#: ``libs/langchain_v1/langchain/agents/middleware/context_editing.py``). Anthropic's guide says
#: only that it replaces a result "with placeholder text to let Claude know the tool result was
#: removed"; the pages read for this module do not give its wording.
DEFAULT_CLEARED_PLACEHOLDER = "[cleared]"
#: What a call's arguments become with ``clear_tool_inputs``: an empty JSON object (LangChain
#: sets the call's ``args`` to ``{}``).
CLEARED_ARGUMENTS = "{}"
#: Anthropic's name for the edit (the ``type`` of its entry in ``context_management.edits``).
ANTHROPIC_EDIT_TYPE = "clear_tool_uses_20250919"


@dataclass(frozen=True)
class ClearToolUses:
    """The settings of one tool-result clearing edit, each Anthropic's parameter of
    ``clear_tool_uses_20250919`` (guide "Context editing", its table of configuration options;
    the same names in LangChain's ``ClearToolUsesEdit``):

    - ``trigger_tokens``: ``trigger`` ``{"type": "input_tokens", "value": …}``, default 100,000
      input tokens: once the prompt exceeds it, the edit runs (LangChain: ``trigger=100000``,
      "token count that triggers the edit"). Counted here with o200k_base over the messages sent
      (:func:`helpers.text.tokens.count_chat_tokens`; the tool schemas too when
      :func:`clear_tool_uses` is given them).
    - ``keep_tool_uses``: ``keep`` ``{"type": "tool_uses", "value": …}``, default 3: the most
      recent tool uses whose results are kept (LangChain: ``keep=3``, "number of most recent
      tool results that must be preserved").
    - ``clear_at_least_tokens``: ``clear_at_least`` ``{"type": "input_tokens", "value": …}``,
      default none: the guide recommends it so that each clearing frees enough tokens to be worth
      the cache it invalidates. Here an edit that would free fewer tokens (or none) is not made
      at all; that reading is the workbook's (LangChain's middleware instead stops clearing once
      it has freed that many, and clears what it can otherwise).
    - ``exclude_tools``: ``exclude_tools``, tool names whose results are never cleared.
    - ``clear_tool_inputs``: ``clear_tool_inputs``, default false: the calls' arguments are
      cleared too (to :data:`CLEARED_ARGUMENTS`), not only their results.
    - ``placeholder``: the text a cleared result becomes (:data:`DEFAULT_CLEARED_PLACEHOLDER`,
      LangChain's ``placeholder``; Anthropic's is its own and not configurable).

    Raises:
        ValueError: a negative figure, or an empty placeholder.
    """

    trigger_tokens: int = 100_000
    keep_tool_uses: int = 3
    clear_at_least_tokens: int = 0
    exclude_tools: tuple[str, ...] = ()
    clear_tool_inputs: bool = False
    placeholder: str = DEFAULT_CLEARED_PLACEHOLDER

    def __post_init__(self) -> None:
        for name in ("trigger_tokens", "keep_tool_uses", "clear_at_least_tokens"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be 0 or more, not {getattr(self, name)}")
        if not self.placeholder:
            raise ValueError("the placeholder must be some text")
        object.__setattr__(self, "exclude_tools", tuple(self.exclude_tools))

    def as_anthropic_edit(self) -> dict[str, Any]:
        """These settings as the entry of Anthropic's ``context_management.edits`` (the
        placeholder aside: Anthropic writes its own)."""
        edit: dict[str, Any] = {
            "type": ANTHROPIC_EDIT_TYPE,
            "trigger": {"type": "input_tokens", "value": self.trigger_tokens},
            "keep": {"type": "tool_uses", "value": self.keep_tool_uses},
        }
        if self.clear_at_least_tokens:
            edit["clear_at_least"] = {"type": "input_tokens", "value": self.clear_at_least_tokens}
        if self.exclude_tools:
            edit["exclude_tools"] = list(self.exclude_tools)
        if self.clear_tool_inputs:
            edit["clear_tool_inputs"] = True
        return edit


@dataclass(frozen=True)
class Clearing:
    """What :func:`clear_tool_uses` did.

    Attributes:
        messages: the messages to send (a new list; the input is never changed).
        tokens_before: the prompt's tokens before the edit (o200k_base).
        tokens_after: and after it (equal to ``tokens_before`` when nothing was cleared).
        cleared_call_ids: the ``tool_call_id`` of each result cleared by this edit, oldest first.
        first_changed_index: the index of the first message the edit changed (where a cached
            prefix of the request ends), ``None`` when it changed none.
    """

    messages: list[dict[str, Any]]
    tokens_before: int
    tokens_after: int
    cleared_call_ids: tuple[str, ...] = ()
    first_changed_index: int | None = None

    @property
    def cleared(self) -> bool:
        """Whether any result was cleared."""
        return bool(self.cleared_call_ids)

    @property
    def tokens_freed(self) -> int:
        """Tokens the edit took out of the prompt."""
        return self.tokens_before - self.tokens_after


def clear_tool_uses(
    messages: Sequence[dict[str, Any]],
    settings: ClearToolUses,
    *,
    tools: Iterable[dict[str, Any]] | None = None,
) -> Clearing:
    """``messages`` with the oldest tool results replaced by ``settings.placeholder``.

    When the prompt (``messages`` and ``tools``, o200k_base) exceeds ``settings.trigger_tokens``,
    every tool result but those of the last ``settings.keep_tool_uses`` tool calls (counted over
    all calls, in order) is cleared, unless its tool is in ``settings.exclude_tools`` or it is
    cleared already; with ``settings.clear_tool_inputs`` the calls' arguments too. The edit is
    made only if it frees at least ``settings.clear_at_least_tokens`` tokens, and at least one
    (a placeholder longer than the result frees nothing).

    Every call keeps its ``tool`` message and every message its place, so pairing holds; applied
    to its own output, it changes nothing (a cleared result is not cleared again).

    Args:
        messages: chat-completions messages (dicts), not changed.
        settings: the edit's settings.
        tools: the request's tool schemas, counted toward the trigger.

    Returns:
        A :class:`Clearing`: the messages to send and what was cleared.
    """
    tools = list(tools or [])
    out = list(messages)
    before = count_chat_tokens(out, tools)
    unchanged = Clearing(out, before, before)
    if before <= settings.trigger_tokens:
        return unchanged
    answered = {m.get("tool_call_id") for m in out if m.get("role") == "tool"}
    exchanges = find_exchanges(out)  # every call, in order: the last ones are kept
    kept = len(exchanges) - settings.keep_tool_uses
    candidates = [e for e in exchanges[: max(kept, 0)] if e.call_id in answered]
    placeholder = settings.placeholder
    clear_ids = {
        e.call_id
        for e in candidates
        if e.name not in settings.exclude_tools
        and (
            e.result != placeholder
            or (settings.clear_tool_inputs and _raw_arguments(out, e.call_id) != CLEARED_ARGUMENTS)
        )
    }
    if not clear_ids:
        return unchanged
    changed: list[int] = []
    out = list(out)  # the edited copy (``unchanged`` keeps its own)
    for index, message in enumerate(out):
        if message.get("role") == "tool" and message.get("tool_call_id") in clear_ids:
            if message.get("content") != placeholder:
                out[index] = {**message, "content": placeholder}
                changed.append(index)
        elif settings.clear_tool_inputs and any(
            c.get("id") in clear_ids for c in message.get("tool_calls") or []
        ):
            calls = [
                _cleared_call(c) if c.get("id") in clear_ids else c for c in message["tool_calls"]
            ]
            if calls != message["tool_calls"]:
                out[index] = {**message, "tool_calls": calls}
                changed.append(index)
    after = count_chat_tokens(out, tools)
    freed = before - after
    if not changed or freed < max(settings.clear_at_least_tokens, 1):
        return unchanged
    order = [e.call_id for e in candidates if e.call_id in clear_ids]
    return Clearing(out, before, after, tuple(order), min(changed))


def _raw_arguments(messages: Sequence[dict[str, Any]], call_id: str) -> str | None:
    for message in messages:
        for call in message.get("tool_calls") or []:
            if call.get("id") == call_id:
                return call.get("function", {}).get("arguments")
    return None


def _cleared_call(call: dict[str, Any]) -> dict[str, Any]:
    return {**call, "function": {**call.get("function", {}), "arguments": CLEARED_ARGUMENTS}}


def policy_with_clearing(
    policy: ResultPolicy,
    settings: ClearToolUses | None,
    *,
    sent: list[list[dict[str, Any]]] | None = None,
) -> ResultPolicy:
    """A copy of ``policy`` whose requests are cleared by ``settings`` (``None``: not edited),
    as Anthropic applies the edit: to each request, server-side in its case, the history the
    loop keeps staying whole. Each request's messages, as sent, are appended to ``sent`` when
    it is given (what :func:`helpers.evaluation.pricing.session_cost` prices).

    The edit sees the messages only (the hook the loop offers,
    :meth:`~helpers.context.policies.ResultPolicy.messages_for_call`), so the trigger counts
    them without the tool schemas. ``policy`` itself is not changed.
    """
    edited = copy.copy(policy)
    own = policy.messages_for_call

    def messages_for_call(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = own(messages)
        if settings is not None:
            out = clear_tool_uses(out, settings).messages
        if sent is not None:
            sent.append(list(out))
        return out

    edited.messages_for_call = messages_for_call  # type: ignore[method-assign]
    return edited
