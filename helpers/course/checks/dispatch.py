"""Notebook 01's checkpoint: the dispatch tail of the agent turn.

The rules come from the chat-completions API (an assistant message with ``tool_calls`` must be
followed by one ``tool`` message per call, carrying its ``tool_call_id``) and from the lesson
(a bad call is an error result, never an exception). The tools are probes that record their
calls; the message is a real ``openai`` ``ChatCompletionMessage``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from openai.types.chat import ChatCompletionMessage

from helpers.course.checkpoint import Checkpoint, Property, attempt, expect, short
from helpers.course.checks.inputs import texts
from helpers.tooling.registry import ToolRegistry, tool_from_function

#: Kinds of tool call: one that works, one with no arguments at all (some providers send
#: ``""`` for a tool without parameters), one whose tool answers the empty string (a result,
#: not a failure), and the four ways a call goes wrong.
GOOD = "good"
NO_ARGUMENTS = "no arguments"
EMPTY_RESULT = "empty result"
WORKING = (GOOD, NO_ARGUMENTS, EMPTY_RESULT)
BAD = ("malformed JSON", "unknown tool", "wrong arguments", "tool raises")
#: What each working kind's tool answers.
ANSWERS = {NO_ARGUMENTS: "pong", EMPTY_RESULT: ""}


def probe_registry() -> tuple[ToolRegistry, list[str]]:
    """``echo(text)`` answers ``echo: <text>``; ``ping()`` answers ``pong``; ``blank()``
    answers ``""``; ``explode()`` raises. Returns the registry and the list each run of ``echo``,
    ``ping`` or ``blank`` appends to (``ping`` appends ``"ping"``, ``blank`` ``"blank"``)."""
    ran: list[str] = []

    def echo(text: str) -> str:
        """Say the text back.

        Args:
            text: any text.
        """
        ran.append(text)
        return f"echo: {text}"

    def ping() -> str:
        """Answer pong."""
        ran.append("ping")
        return "pong"

    def blank() -> str:
        """Answer nothing: an empty result."""
        ran.append("blank")
        return ""

    def explode() -> str:
        """Always fails."""
        raise RuntimeError("the tool failed")

    tools = [tool_from_function(f) for f in (echo, ping, blank, explode)]
    return ToolRegistry(tools), ran


@dataclass(frozen=True)
class Call:
    kind: str
    text: str

    def wire(self, call_id: str) -> dict[str, Any]:
        name, arguments = {
            GOOD: ("echo", json.dumps({"text": self.text}, ensure_ascii=False)),
            NO_ARGUMENTS: ("ping", ""),
            EMPTY_RESULT: ("blank", "{}"),
            "malformed JSON": ("echo", '{"text": "unterminated'),
            "unknown tool": ("send_rocket", "{}"),
            "wrong arguments": ("echo", json.dumps({"txt": self.text})),
            "tool raises": ("explode", "{}"),
        }[self.kind]
        return {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }


@dataclass(frozen=True)
class DispatchCase:
    calls: list[Call]
    ids: tuple[str, ...]  # one per call; a provider may repeat an id
    content: str | None
    history: tuple[dict[str, Any], ...] = ()  # the messages already in the list

    def wire_calls(self) -> list[dict[str, Any]]:
        return [c.wire(call_id) for c, call_id in zip(self.calls, self.ids, strict=True)]

    def message(self) -> ChatCompletionMessage:
        return ChatCompletionMessage.model_validate(
            {"role": "assistant", "content": self.content, "tool_calls": self.wire_calls()}
        )

    def shown(self) -> str:
        calls = ", ".join(
            f"{c.kind}{'(' + short(c.text, 20) + ')' if c.kind == GOOD else ''}" for c in self.calls
        )
        repeated = f" (ids {', '.join(self.ids)})" if len(set(self.ids)) < len(self.ids) else ""
        tools = sum(m["role"] == "tool" for m in self.history)
        before = f"{len(self.history)} messages ({tools} tool) in the list, then " if tools else ""
        return (
            f"{before}an assistant message (content={short(self.content, 20)}) with "
            f"{len(self.calls)} tool calls{repeated}: {calls}"
        )


@st.composite
def cases(draw: Any, kinds: tuple[str, ...]) -> DispatchCase:
    """Messages of one to four calls of ``kinds``; now and then a call repeats an earlier id."""
    calls = draw(
        st.lists(st.builds(Call, st.sampled_from(kinds), texts(15)), min_size=1, max_size=4)
    )
    ids: list[str] = []
    for i in range(len(calls)):
        repeat = bool(ids) and draw(st.integers(0, 3)) == 3
        ids.append(draw(st.sampled_from(ids)) if repeat else f"call_{i}x")
    content = draw(st.one_of(st.none(), texts(20)))
    return DispatchCase(calls, tuple(ids), content, draw(histories()))


HISTORY = [
    {"role": "system", "content": "You are a helpful assistant that uses tools."},
    {"role": "user", "content": "Do it."},
]


@st.composite
def histories(draw: Any) -> tuple[dict[str, Any], ...]:
    """The messages already in the list: a system prompt and a question, then now and then
    earlier turns, each an assistant message with calls, their ``tool`` messages, the answer
    and the next question (code that rebuilds the list loses or changes them)."""
    messages = copy.deepcopy(HISTORY)
    for turn in range(draw(st.integers(0, 2))):
        earlier = [f"call_e{turn}{i}" for i in range(draw(st.integers(1, 2)))]
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [Call(GOOD, "x").wire(call_id) for call_id in earlier],
            }
        )
        messages += [
            {"role": "tool", "tool_call_id": call_id, "content": draw(texts(10))}
            for call_id in earlier
        ]
        messages += [
            {"role": "assistant", "content": draw(texts(10))},
            {"role": "user", "content": "And now?"},
        ]
    return tuple(messages)


class _DispatchChecks:
    """The properties of notebook 01's ``handle_tool_calls``, each run on one generated
    :class:`DispatchCase` with a probe registry that records what ran."""

    def __init__(self, handle_tool_calls: Callable[..., None]):
        self.handle_tool_calls = handle_tool_calls

    def dispatched(self, case: DispatchCase) -> tuple[list[dict[str, Any]], list[str]]:
        registry, ran = probe_registry()
        before = list(case.history) or HISTORY
        messages = copy.deepcopy(before)
        attempt(self.handle_tool_calls, messages, case.message(), registry)
        at = next((i for i, m in enumerate(before) if i >= len(messages) or messages[i] != m), None)
        if at is not None:
            now = short(messages[at], 80) if at < len(messages) else "(none: the list is shorter)"
            expect(
                False,
                f"the {len(before)} messages already in the list unchanged, new ones appended "
                f"after them; message #{at + 1}: {short(before[at], 80)}",
                f"message #{at + 1}: {now}",
            )
        return messages[len(before) :], ran

    def echoed(self, case: DispatchCase) -> None:
        new, _ = self.dispatched(case)
        want = {
            "role": "assistant",
            "content": case.content,
            "tool_calls": case.wire_calls(),
        }
        got = new[0] if new else None
        expect(isinstance(got, dict), f"first appended: {short(want, 100)}", short(got))
        expect(
            got.get("role") == "assistant",
            "the assistant message first (role 'assistant'), then one tool message per call",
            f"first a message of role {short(got.get('role'))}: {short(got, 90)}",
        )
        expect(
            set(got) == set(want),
            f"the keys {sorted(want)} only (model_dump() adds fields some providers refuse)",
            f"the keys {sorted(got)}",
        )
        for key in ("role", "content", "tool_calls"):
            expect(
                got.get(key) == want[key],
                f"{key}: {short(want[key], 110)}",
                f"{key}: {short(got.get(key), 110)}",
            )

    def one_per_call(self, case: DispatchCase) -> None:
        new, _ = self.dispatched(case)
        want = [("tool", call_id) for call_id in case.ids]
        got = [(m.get("role"), m.get("tool_call_id")) for m in new[1:] if isinstance(m, dict)]
        expect(got == want, f"then {want}", f"{got}")

    def results(self, case: DispatchCase) -> None:
        new, ran = self.dispatched(case)
        answered = [m.get("tool_call_id") for m in new[1:] if isinstance(m, dict)]
        expect(
            answered == list(case.ids),
            f"one tool message per call, a bad call's too: {list(case.ids)}",
            f"tool messages for {answered}",
        )
        for i, (call, message) in enumerate(zip(case.calls, new[1:], strict=False)):
            content = message.get("content")
            if call.kind in WORKING:
                want = f"echo: {call.text}" if call.kind == GOOD else ANSWERS[call.kind]
                expect(
                    content == want,
                    f"call #{i + 1} ({call.kind}, arguments {call.wire('')['function']['arguments']!r}): {want!r}",
                    short(content),
                )
                continue
            try:
                error = json.loads(content).get("error")
            except (TypeError, ValueError, AttributeError):
                error = None
            expect(
                isinstance(error, str) and bool(error),
                f'call #{i + 1} ({call.kind}): a JSON object {{"error": "<what went wrong>"}}',
                short(content),
            )
        names = {NO_ARGUMENTS: "ping", EMPTY_RESULT: "blank"}
        good = [
            c.text if c.kind == GOOD else names[c.kind] for c in case.calls if c.kind in WORKING
        ]
        expect(ran == good, f"every good call runs once, in order: {short(good)}", short(ran))


def check_handle_tool_calls(handle_tool_calls: Callable[..., None]) -> None:
    """Notebook 01, TODO 1: the attendee's ``handle_tool_calls(messages, message, registry)``.

    Raises:
        helpers.course.checkpoint.CheckpointFailed: a property did not hold.
        helpers.course.checkpoint.TodoNotWritten: the TODO is still its stub.
    """
    checks = _DispatchChecks(handle_tool_calls)
    return Checkpoint(
        "01",
        1,
        "handle_tool_calls",
        [
            Property(
                "first the assistant message, echoed whole: role, content, and every call's id, "
                "type 'function', name and arguments as the model sent them; no other field",
                cases(WORKING),
                checks.echoed,
                DispatchCase.shown,
                terms=("assistant message", "id", "type", "name", "arguments"),
            ),
            Property(
                "then exactly one tool message per call, in order, with its call's tool_call_id "
                "(even when a provider repeats an id)",
                cases(WORKING),
                checks.one_per_call,
                DispatchCase.shown,
                terms=("one `tool` message per call", "tool_call_id", "repeats an id"),
            ),
            Property(
                "a good call's tool message holds the tool's output unchanged (arguments '' "
                "mean no arguments; an empty output is a result too); a bad call — "
                'malformed JSON, an unknown tool, wrong arguments, a tool that raises — an {"error": "…"} '
                "JSON object, and the other calls still run",
                cases((*WORKING, *BAD)),
                checks.results,
                DispatchCase.shown,
                terms=(
                    "registry.get(name).call(arguments)",
                    "malformed JSON",
                    "json.loads",
                    'arguments or "{}"',
                    '{"error": "..."}',
                ),
                examples=80,
            ),
        ],
    ).run()
