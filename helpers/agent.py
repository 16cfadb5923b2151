"""One agent turn: the OpenAI chat-completions tool loop, with a result policy.

The loop sends the messages and tool schemas, echoes the assistant message with its
``tool_calls``, dispatches each call, appends one ``tool`` message per call, and repeats until
the model answers without tool calls or ``max_iterations`` model calls have been made.

Each dispatch follows one path, tool → policy → store → messages:

1. parse the JSON arguments the model sent;
2. find the tool (only tools offered to the model can run);
3. ``policy.prepare_arguments``: unbox references (box strategy);
4. run the tool with checked arguments;
5. log the full output to the store (when there is one);
6. ``policy.present``: the full result, a preview, or a reference;
7. append the ``tool`` message.

Anything that goes wrong in 1-4 (malformed JSON, unknown tool, refused reference, bad
arguments, the tool raising) becomes a JSON error tool result, ``{"error": "..."}``, and the turn
goes on: the model reads the error and can try again.

:func:`run_turn` returns a :class:`TurnRecord`: every model call with its ``usage``, every tool
call with the arguments as the model sent them and the result as the model saw it, and the answer.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import openai

from helpers.boxing import ReferenceRefused
from helpers.compaction import (
    DEFAULT_KEEP_LAST_CALLS,
    DEFAULT_THRESHOLD_TOKENS,
    compact,
    model_summarizer,
)
from helpers.policies import ResultPolicy
from helpers.registry import ToolArgumentError, ToolContext, ToolRegistry, UnknownToolError
from helpers.store import DuplicateToolCallError, ToolOutputStore
from helpers.tokens import count_chat_tokens, count_tokens

DEFAULT_MAX_ITERATIONS = 8


@dataclass(frozen=True)
class CompactionSettings:
    """When and how much to compact: past ``threshold_tokens``, keep the last ``keep_last``
    tool calls whole."""

    threshold_tokens: int = DEFAULT_THRESHOLD_TOKENS
    keep_last: int = DEFAULT_KEEP_LAST_CALLS
    model_summary: bool = False  # let the model write the summary (through the same client)


#: The longest arguments JSON text a tool call may carry, in characters; longer is refused
#: (large values should travel as references).
MAX_ARGUMENTS_CHARS = 1_000_000


@dataclass
class ModelCallRecord:
    """One chat-completions request: its token ``usage`` and what came back.

    ``prompt_tokens`` and ``completion_tokens`` are the response's ``usage``; if a server sends
    none, they are counted locally with o200k_base and ``usage_source`` says ``"counted"``.
    """

    index: int
    prompt_tokens: int
    completion_tokens: int
    messages_sent: int
    finish_reason: str | None
    tool_calls: int
    usage_source: str = "response"
    seconds: float = 0.0


@dataclass
class ToolCallRecord:
    """One tool call: as the model sent it, and as the model saw its result.

    ``result_kind`` is ``inline``, ``truncated``, ``boxed``, ``middle`` or ``error``;
    ``output_chars`` is the length in characters of the full output (before any preview or
    boxing) and ``output_sha256`` the SHA-256 of its UTF-8 bytes. ``received_sha256`` holds, for
    each top-level string argument, the SHA-256 of the value the tool really received (after
    unboxing): sink checks compare it with an earlier call's ``output_sha256``.
    """

    id: str
    name: str
    arguments: str
    result: str
    result_kind: str
    output_chars: int | None = None
    output_sha256: str | None = None
    received_sha256: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    ran: bool = False


@dataclass
class TurnRecord:
    """Everything about one turn. ``status`` is ``ok``, ``max_iterations`` or ``error``."""

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
                    "name": t.name,
                    "arguments": t.arguments,
                    "result": t.result,
                    "result_kind": t.result_kind,
                }
                for t in self.tool_calls
            ],
            "usage": self.usage(),
            "model_calls": [asdict(c) for c in self.model_calls],
            "answer": self.answer,
            "compactions": self.compactions,
        }
        if self.error:
            data["error"] = self.error
        if include_context:
            data["context"] = self.messages
        return data


def new_thread_id() -> str:
    """A fresh, unguessable thread id: ``thread_<16 hex>``."""
    return "thread_" + secrets.token_hex(8)


def sha256_text(text: str) -> str:
    """SHA-256 (hex) of a string's UTF-8 bytes (lone surrogates kept, as the store keeps them)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def error_result(message: str) -> str:
    """The JSON text of an error tool result: ``{"error": message}``."""
    return json.dumps({"error": message}, ensure_ascii=False)


#: Called with (event name, data) as the turn goes: ``model_call``, ``tool_call``, ``answer``.
EventHook = Callable[[str, Any], None]


def run_turn(
    prompt: str,
    *,
    client: openai.OpenAI,
    model: str,
    policy: ResultPolicy,
    registry: ToolRegistry,
    store: ToolOutputStore | None = None,
    thread_id: str | None = None,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    few_shot: bool = True,
    system: str | None = None,
    history: list[dict[str, Any]] | None = None,
    temperature: float | None = None,
    on_event: EventHook | None = None,
    compaction: CompactionSettings | None = None,
) -> TurnRecord:
    """Run one agent turn for ``prompt`` and return its :class:`TurnRecord`.

    Args:
        prompt: the user message.
        client: an ``openai.OpenAI`` client (a real endpoint or the offline reference model).
        model: the model name to request.
        policy: what the model sees of tool results (:func:`helpers.policies.make_policy`).
        registry: the real tools; the policy's internal tools are added to them.
        store: where every dispatch is logged; required by ``truncate`` and ``box``.
        thread_id: the conversation id; a new one if ``None``. Reusing a thread keeps its
            references resolvable across turns and process restarts.
        max_iterations: the most model calls in this turn.
        few_shot: include the policy's few-shot examples in the system message.
        system: a system message to use instead of the policy's.
        history: earlier messages of the thread (after the system message), if any.
        temperature: sampling temperature, if the model takes one.
        on_event: called with ``(name, data)`` as the turn progresses (for live display).
        compaction: if given, before each model call the history is compacted when the context
            passes ``compaction.threshold_tokens`` (:mod:`helpers.compaction`); each time is noted
            in ``record.compactions`` and the summary message marks the place in the transcript.

    Returns:
        The record; ``status`` is ``ok`` (answered), ``max_iterations`` (no answer within the
        limit) or ``error`` (the model endpoint failed after the client's retries, or answered
        with something that is not a chat completion). Tool outputs logged before a failure stay
        in the store; rerunning the turn in the same thread can still resolve them.

    Raises:
        ValueError: the policy needs a store and none was given.
    """
    if policy.needs_store and store is None:
        raise ValueError(f"the {policy.name} strategy needs a ToolOutputStore")
    thread_id = thread_id or new_thread_id()
    tools = registry.merged(policy.internal_tools())
    schemas = tools.schemas()
    ctx = ToolContext(store=store, thread_id=thread_id)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system or policy.instructions(few_shot=few_shot)},
        *(history or []),
        {"role": "user", "content": prompt},
    ]
    record = TurnRecord(
        model=model,
        strategy=policy.name,
        boxing=policy.boxing,
        thread_id=thread_id,
        prompt=prompt,
        messages=messages,
        tool_schemas=schemas,
    )
    emit = on_event or (lambda _name, _data: None)
    extra: dict[str, Any] = {} if temperature is None else {"temperature": temperature}

    for index in range(max_iterations):
        if compaction is not None:
            done = compact(
                messages,
                tools=schemas,
                keep_last=compaction.keep_last,
                threshold_tokens=compaction.threshold_tokens,
                summarizer=model_summarizer(client, model) if compaction.model_summary else None,
            )
            if done.compacted:
                messages[:] = done.messages
                event = {
                    "before_model_call": index,
                    "folded_calls": done.folded_calls,
                    "tokens_before": done.tokens_before,
                    "tokens_after": done.tokens_after,
                }
                record.compactions.append(event)
                emit("compaction", event)
        started = time.perf_counter()
        try:
            response = client.chat.completions.create(
                model=model, messages=messages, tools=schemas, **extra
            )
        except openai.OpenAIError as exc:
            record.status, record.error = "error", f"model call failed: {type(exc).__name__}: {exc}"
            emit("error", record.error)
            return record
        except ValueError as exc:  # the SDK lets a body that is not JSON through as-is
            record.status = "error"
            record.error = f"model call failed: the endpoint answered with malformed JSON ({exc})"
            emit("error", record.error)
            return record
        choice = response.choices[0]
        message = choice.message
        calls = list(message.tool_calls or [])
        assistant: dict[str, Any] = {"role": "assistant", "content": message.content}
        if calls:
            assistant["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.function.name, "arguments": c.function.arguments},
                }
                for c in calls
            ]
        usage = response.usage
        if usage is not None:
            prompt_tokens, completion_tokens, source = (
                usage.prompt_tokens,
                usage.completion_tokens,
                "response",
            )
        else:
            prompt_tokens = count_chat_tokens(messages, schemas)
            completion_tokens = count_tokens(message.content or "") + sum(
                count_tokens(c.function.name) + count_tokens(c.function.arguments) for c in calls
            )
            source = "counted"
        call_record = ModelCallRecord(
            index=index,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            messages_sent=len(messages),
            finish_reason=choice.finish_reason,
            tool_calls=len(calls),
            usage_source=source,
            seconds=round(time.perf_counter() - started, 4),
        )
        record.model_calls.append(call_record)
        emit("model_call", call_record)
        messages.append(assistant)
        if not calls:
            record.answer = message.content or ""
            record.status = "ok"
            emit("answer", record.answer)
            return record
        for call in calls:
            tool_record = dispatch(
                call.id, call.function.name, call.function.arguments, tools, policy, ctx
            )
            record.tool_calls.append(tool_record)
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": tool_record.result}
            )
            emit("tool_call", tool_record)

    record.status = "max_iterations"
    record.error = f"no final answer after {max_iterations} model calls"
    emit("error", record.error)
    return record


def dispatch(
    tool_call_id: str,
    name: str,
    raw_arguments: str,
    tools: ToolRegistry,
    policy: ResultPolicy,
    ctx: ToolContext,
) -> ToolCallRecord:
    """Run one tool call through the policy and the store; never raises for bad input.

    Returns a :class:`ToolCallRecord` whose ``result`` is what goes into the ``tool`` message.
    """

    def refuse(message: str, *, ran: bool = False) -> ToolCallRecord:
        return ToolCallRecord(
            id=tool_call_id,
            name=name,
            arguments=raw_arguments,
            result=error_result(message),
            result_kind="error",
            error=message,
            ran=ran,
        )

    if len(raw_arguments or "") > MAX_ARGUMENTS_CHARS:
        return refuse(
            f"arguments for {name} are {len(raw_arguments):,} chars, over the limit of "
            f"{MAX_ARGUMENTS_CHARS:,}; pass large values by reference instead"
        )
    try:
        arguments = json.loads(raw_arguments or "{}")
    except ValueError as exc:
        return refuse(f"malformed JSON arguments for {name}: {exc}")
    try:
        tool = tools.get(name)
    except UnknownToolError as exc:
        return refuse(str(exc))
    if not isinstance(arguments, dict):
        return refuse(f"{name} takes a JSON object of arguments, got {type(arguments).__name__}")
    if ctx.store is not None and not tool.internal and ctx.store.get(ctx.thread_id, tool_call_id):
        return refuse(f"tool_call_id {tool_call_id!r} was already used in this thread")
    try:
        real_arguments = policy.prepare_arguments(ctx, tool, arguments)
        tool.check_arguments(real_arguments)
    except (ReferenceRefused, ToolArgumentError) as exc:
        return refuse(f"{name} was not run: {exc}")
    try:
        output = tool.call(real_arguments, ctx)
    except Exception as exc:  # a tool's failure is the model's information, not a crash
        return refuse(f"{name} failed: {type(exc).__name__}: {exc}", ran=True)
    row = None
    if ctx.store is not None and not tool.internal:
        try:
            row = ctx.store.log_tool(ctx.thread_id, tool_call_id, name, raw_arguments, output)
        except DuplicateToolCallError as exc:
            return refuse(str(exc), ran=True)
    presented = policy.present(ctx, tool, tool_call_id, output, row)
    return ToolCallRecord(
        id=tool_call_id,
        name=name,
        arguments=raw_arguments,
        result=presented.content,
        result_kind=presented.kind,
        output_chars=len(output),
        output_sha256=sha256_text(output),
        received_sha256={
            k: sha256_text(v) for k, v in real_arguments.items() if isinstance(v, str)
        },
        ran=True,
    )
