"""One request to the model, and what its reply means.

:func:`request_completion` sends the messages and tool schemas of one model call and reads the
reply as real providers send it (:mod:`helpers.models.replies`): the completion limit a provider refuses
is learned and the request sent again (:mod:`helpers.models.completion_limit`), and anything else that
goes wrong ends the turn with a clear message (:class:`helpers.loop.records.TurnAborted`). Then:

- :func:`name_tool_calls`: give every tool call an id of the client's own, unique in the thread
  (providers repeat ids, send ``"0"`` every time, or none at all; the provider's is kept for
  reference);
- :func:`record_of_reply`: the call's :class:`helpers.loop.records.ModelCallRecord`, its
  ``usage`` counted locally when a server sends none;
- :func:`assistant_message`: the assistant message echoed with those ids and with the provider's
  reasoning fields, which thinking-mode providers require back;
- :func:`judge_final_reply`: for a reply without tool calls, ``ok`` or ``incomplete`` and why.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2
import openai

from helpers.loop.records import ModelCallRecord, TurnAborted, TurnRecord, new_tool_call_id
from helpers.models.completion_limit import MIN_COMPLETION_TOKENS, CompletionBudget, read_refusal
from helpers.models.providers import ModelRule, ProviderProfile
from helpers.models.replies import (
    FIELDS_FROM,
    ProviderError,
    Reply,
    error_message,
    error_rule,
    for_endpoint,
    is_context_overflow,
    parse_reply,
    tool_call_as_text,
)
from helpers.store.tool_outputs import ToolOutputStore
from helpers.text.redaction import endpoint_shown
from helpers.text.tokens import count_chat_tokens, count_tokens
from helpers.text.unicode import valid_text


@dataclass
class RequestedCall:
    """A tool call the model asked for in one reply, named with the client's own ``id``
    (:func:`name_tool_calls`); ``provider_id`` is the provider's, if it sent one, and
    ``provider_fields`` the call's fields that go back to the provider unchanged."""

    id: str
    provider_id: str | None
    name: str
    arguments: str
    provider_fields: dict[str, Any] = field(default_factory=dict)


def request_completion(
    client: openai.OpenAI,
    model: str,
    messages: list[dict[str, Any]],
    schemas: list[dict[str, Any]],
    temperature: float | None,
    provider_profile: ProviderProfile,
    budget: CompletionBudget,
) -> Reply:
    """One chat-completions request through the SDK (its retries included), read from the raw
    body so that every shape a provider sends is handled. The request carries ``budget``'s
    completion limit, only the provider fields the profile takes back from this endpoint, and
    the messages in the order and roles the provider and the model's family require
    (:func:`_in_provider_order`). A provider's documented refusal of the completion limit or
    the temperature (:func:`helpers.models.completion_limit.read_refusal`) is learned and the request
    sent again, once per kind of refusal.

    Raises:
        TurnAborted: the endpoint failed or did not send a usable chat completion.
    """
    rule = provider_profile.rule_for(model)
    base_url = str(getattr(client, "base_url", "") or "")
    shown = endpoint_shown(base_url)  # for messages: no user, password or query (a key)
    sent = for_endpoint(messages, base_url, keep=provider_profile.fields_back)
    sent = _in_provider_order(sent, provider_profile.user_after_tool_for(model), rule)
    if temperature is not None and not budget.temperature and not budget.temperature_said:
        budget.temperature_said = True
        budget.notes.append(
            f"{model} takes no temperature but its default: {budget.prefix}_TEMPERATURE is not "
            "sent (OpenAI's reasoning models)"
        )
    counted: list[int] = []

    def prompt_tokens() -> int:
        if not counted:
            counted.append(count_chat_tokens(sent, schemas))
        return counted[0]

    def fields() -> dict[str, Any]:
        warm = temperature is not None and budget.temperature
        limit = budget.request_limit(prompt_tokens() if budget.needs_prompt_count else 0)
        return {**limit, **({"temperature": temperature} if warm else {})}

    extra, pending, refused = fields(), [], set()
    while True:  # each refusal of a new kind changes the request; a kind refused twice ends it
        try:
            reply = _post_request(client, model, sent, schemas, extra)
        except openai.APIStatusError as exc:
            extra, note = _fields_after_refusal(
                exc, extra, budget, prompt_tokens, shown, model, refused
            )
            pending += [note] if note else []
            continue
        budget.notes.extend(pending)  # said once it worked
        return reply


#: What each kind of refusal (:attr:`helpers.models.completion_limit.LimitRefusal.kind`) refused.
_REFUSED_SETTING = {
    "output": "completion limit",
    "window": "completion limit",
    "per_request": "completion limit",
    "field": "completion limit's field",
    "temperature": "temperature",
}


def _fields_after_refusal(
    exc: openai.APIStatusError,
    extra: dict[str, Any],
    budget: CompletionBudget,
    prompt_tokens: Callable[[], int],
    shown: str,
    model: str,
    refused: set[str],
) -> tuple[dict[str, Any], str | None]:
    """The request fields to send once more after an HTTP error, and the note to say if that
    succeeds: when the provider refused the completion limit or the temperature in words
    :func:`helpers.models.completion_limit.read_refusal` reads, of a kind not refused before in this
    call (``refused``, updated), and sending again would change what it refused.

    Raises:
        TurnAborted: any other error, a second refusal, or one no change can help.
    """
    detail = _provider_detail(exc)
    sent_tokens = next(v for k, v in extra.items() if k != "temperature")
    refusal = read_refusal(exc.status_code, f"{exc.code} {detail}", sent_tokens)
    if refusal is None:
        if _overflows_context(exc):
            raise TurnAborted(
                f"the request is longer than the model's context window: {detail}",
                "context_exceeded",
            )
        raise TurnAborted(_http_error_message(exc, shown, model, budget.prefix))
    if refusal.kind in refused:
        raise TurnAborted(
            f"model call failed: the provider refused the {_REFUSED_SETTING[refusal.kind]} again: "
            f"{detail} (set {budget.setting} to a number it accepts)"
        )
    refused.add(refusal.kind)
    learned = budget.learn(refusal, sent_tokens, prompt_tokens())
    if learned.prompt_too_long and refusal.kind == "per_request":
        raise TurnAborted(
            f"model call failed: the prompt leaves fewer than {MIN_COMPLETION_TOKENS} of the "
            f"account's {refusal.tokens:,} tokens per request for the answer: shorten it (a "
            f"preview or boxing strategy) or use another tier ({detail})"
        )
    if learned.prompt_too_long:
        raise TurnAborted(
            "the request is longer than the model's context window: the prompt leaves fewer "
            f"than {MIN_COMPLETION_TOKENS} tokens for the answer ({detail})",
            "context_exceeded",
        )
    again = {
        **budget.retry_limit(refusal, prompt_tokens()),
        **(
            {"temperature": extra["temperature"]}
            if budget.temperature and "temperature" in extra
            else {}
        ),
    }
    if again == extra:  # nothing the refusal named would change: no retry can help
        raise TurnAborted(
            f"{_http_error_message(exc, shown, model, budget.prefix)} (the limit it names is the one "
            f"sent; set {budget.setting} to one it accepts)"
        )
    return again, learned.note


def _post_request(
    client: openai.OpenAI,
    model: str,
    sent: list[dict[str, Any]],
    schemas: list[dict[str, Any]],
    extra: dict[str, Any],
) -> Reply:
    """One request, as :func:`request_completion` sends it: ``POST /chat/completions`` with
    the body ``{"model", "messages", **extra, "tools"}`` through the SDK's own ``client.post``
    (the openai README's "Undocumented endpoints": the client's base URL, headers, retries,
    timeout and errors, as ``chat.completions.create`` has them).

    Not ``create``: it first walks every message and schema against the SDK's typed parameters
    (``maybe_transform``), which changes nothing in a body that is already JSON (the messages
    and schemas here are plain dicts, lists and strings; a test sends both ways and compares the
    bytes) and cost about 3 ms of CPU per request, more than the offline model's whole reply.

    Raises:
        openai.APIStatusError: the endpoint answered with an HTTP error (after the SDK's
            retries).
        TurnAborted: no answer, or one that is not a chat completion.
    """
    shown = endpoint_shown(str(getattr(client, "base_url", "") or ""))
    try:
        response = client.post(
            "/chat/completions",
            cast_to=httpx2.Response,
            body={"model": model, "messages": sent, **extra, "tools": schemas},  # create's order
        )
        return parse_reply(response.text, content_type=response.headers.get("content-type", ""))
    except ProviderError as exc:
        raise TurnAborted(f"model call failed: {exc}") from None
    except openai.APIStatusError:
        raise
    except openai.APITimeoutError:
        raise TurnAborted(
            f"model call failed: APITimeoutError: no answer from {shown} within the timeout "
            "(raise it with --timeout or <PROFILE>_TIMEOUT)"
        ) from None
    except openai.APIConnectionError as exc:
        cause = exc.__cause__ or exc
        raise TurnAborted(
            f"model call failed: APIConnectionError: could not reach {shown} "
            f"({type(cause).__name__}: {cause})"
        ) from None
    except openai.OpenAIError as exc:
        raise TurnAborted(f"model call failed: {type(exc).__name__}: {exc}") from None


#: What goes between a ``tool`` message and a ``user`` message for a provider that refuses a
#: user message right after tool results (:attr:`helpers.models.providers.ProviderProfile.user_after_tool`).
STOPPED_AFTER_TOOLS = "(The turn above stopped after its tool results, without an answer.)"


def _in_provider_order(
    messages: list[dict[str, Any]], user_after_tool: bool, rule: ModelRule | None
) -> list[dict[str, Any]]:
    """``messages`` as the provider takes them (the thread itself is unchanged): the
    instructions in the role the model's family reads them in (``developer`` for OpenAI's
    reasoning models, :class:`helpers.models.providers.ModelRule`), and, where the provider refuses a
    ``user`` message right after a ``tool`` message (Mistral), an assistant message saying the
    turn stopped between them (``user_after_tool`` false:
    :meth:`helpers.models.providers.ProviderProfile.user_after_tool_for`)."""
    role = rule.system_role if rule else "system"
    ordered: list[dict[str, Any]] = []
    for message in messages:
        after_tool = ordered and ordered[-1].get("role") == "tool"
        if after_tool and message.get("role") == "user" and not user_after_tool:
            ordered.append({"role": "assistant", "content": STOPPED_AFTER_TOOLS})
        if message.get("role") == "system" and role != "system":
            message = {**message, "role": role}
        ordered.append(message)
    return ordered


def _provider_detail(exc: openai.APIStatusError) -> str:
    """The provider's own message of an HTTP error, on one line."""
    return error_message(exc.body) or exc.message


def _overflows_context(exc: openai.APIStatusError) -> bool:
    """Whether an HTTP error says the request is longer than the model's context window."""
    code = getattr(exc, "code", None)
    return is_context_overflow(exc.status_code, f"{code} {_provider_detail(exc)}")


def _http_error_message(
    exc: openai.APIStatusError, base_url: str, model: str, prefix: str = "<NAME>"
) -> str:
    """The user's line for an HTTP error: the provider's own reason
    (:func:`helpers.models.replies.error_message`) and the hint that fits this error
    (:data:`helpers.models.replies.ERROR_RULES`, else one by status)."""
    detail = _provider_detail(exc)
    status = exc.status_code
    message = f"model call failed: {type(exc).__name__}: HTTP {status}: {detail}"
    rule = error_rule(status, f"{getattr(exc, 'code', None)} {detail}")
    if rule is not None:
        return f"{message} ({rule.hint.format(prefix=prefix)})"
    if status == 404:
        path = base_url.rstrip("/")
        hint = f"check the model name {model!r} and the base URL {base_url}"
        if path.endswith("/chat/completions"):  # the endpoint's address pasted whole
            root = path.removesuffix("/chat/completions")
            hint = (
                f"the base URL {base_url} names the endpoint itself: the client adds "
                f"/chat/completions (set the base URL to {root})"
            )
        elif not path.endswith("/v1") and "/v1/" not in path + "/" and "/openai" not in path:
            hint = (
                f"the base URL {base_url} lacks /v1: OpenAI-compatible servers serve "
                f"{path}/v1/chat/completions (set the base URL to {path}/v1)"
            )
        message += f" ({hint})"
    elif status == 401:
        message += " (check the API key of this profile)"
    return message


def tool_call_ids_in(messages: list[dict[str, Any]]) -> set[str]:
    """The ids of every tool call the assistant messages of ``messages`` carry."""
    return {
        str(c.get("id"))
        for m in messages
        for c in (m.get("tool_calls") or [])
        if isinstance(c, dict) and c.get("id")
    }


def provider_ids_in_thread(store: ToolOutputStore | None, thread_id: str) -> set[str]:
    """The providers' ids of the tool calls stored in ``thread_id`` (none without a store)."""
    if store is None:
        return set()
    return {r.provider_call_id for r in store.list_thread(thread_id) if r.provider_call_id}


def name_tool_calls(
    reply: Reply,
    used_ids: set[str],
    provider_ids_seen: set[str],
    record: TurnRecord,
    new_id: Callable[[], str] = new_tool_call_id,
) -> list[RequestedCall]:
    """Give each tool call of ``reply`` an id of the client's own (from ``new_id``: the form
    the provider accepts back), unique in the thread.

    The provider's id is kept for reference; when it could not have been used as the key
    (missing, empty, repeated in this reply or already used in this thread), the turn notes
    ``tool_call_id_replaced``.
    """
    calls = []
    in_reply: set[str] = set()
    for raw in reply.tool_calls:
        call_id = new_id()
        while call_id in used_ids:
            call_id = new_id()
        used_ids.add(call_id)
        provider_id = raw.provider_id
        if not provider_id or provider_id in in_reply or provider_id in provider_ids_seen:
            record.guard_events.append("tool_call_id_replaced")
        if provider_id:
            in_reply.add(provider_id)
            provider_ids_seen.add(provider_id)
        calls.append(
            RequestedCall(call_id, provider_id, raw.name, raw.arguments, raw.provider_fields)
        )
    return calls


#: A prompt shorter than this, in characters of message text and tool schemas, is never
#: called cut: the ratio below is noise on a few hundred characters.
PROMPT_CUT_MIN_CHARS = 8_000
#: More characters per reported prompt token than this means the server counted far fewer
#: tokens than it was sent: o200k_base averages about 4 characters a token in English and
#: fewer in code or JSON, so 12 leaves a wide margin.
PROMPT_CUT_CHARS_PER_TOKEN = 12


def prompt_cut_by_server(
    prompt_tokens: int, messages: list[dict[str, Any]], schemas: list[Any]
) -> bool:
    """Whether the server reports far fewer prompt tokens than it was sent: it cut the prompt
    to its window without an error, as Ollama does past ``num_ctx`` (ollama/ollama issue 8099,
    "ollama run silently truncating prompt"; its FAQ, "How can I specify the context window
    size?"). Measured in characters, so no tokenizer runs on every call."""
    sent_chars = sum(len(str(m.get("content") or "")) for m in messages) + len(json.dumps(schemas))
    return sent_chars >= PROMPT_CUT_MIN_CHARS and (
        prompt_tokens * PROMPT_CUT_CHARS_PER_TOKEN < sent_chars
    )


def record_of_reply(
    reply: Reply,
    calls: list[RequestedCall],
    messages: list[dict[str, Any]],
    schemas: list[dict[str, Any]],
    index: int,
    started: float,
) -> ModelCallRecord:
    """The :class:`ModelCallRecord` of model call ``index`` (from 0): ``reply``'s ``usage``,
    each half counted locally with o200k_base when the server sent none (``messages`` and
    ``schemas`` as sent, ``calls`` as named), and the seconds since ``started``
    (:func:`time.perf_counter`)."""
    prompt_tokens, completion_tokens = reply.prompt_tokens, reply.completion_tokens
    counted = 0
    if prompt_tokens is None:
        prompt_tokens, counted = count_chat_tokens(messages, schemas), counted + 1
    if completion_tokens is None:
        completion_tokens = (
            count_tokens(reply.content or "")
            + count_tokens(reply.reasoning_text)
            + sum(count_tokens(c.name) + count_tokens(c.arguments) for c in calls)
        )
        counted += 1
    return ModelCallRecord(
        index=index,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        messages_sent=len(messages),
        finish_reason=reply.finish_reason,
        tool_calls=len(calls),
        usage_source=("response", "partly counted", "counted")[counted],
        seconds=round(time.perf_counter() - started, 4),
        cached_tokens_reported=reply.cached_tokens,
    )


def assistant_message(
    reply: Reply, calls: list[RequestedCall], record: TurnRecord, endpoint: str
) -> dict[str, Any]:
    """The assistant message as it goes back to the model: the client's ids, and the provider's
    fields unchanged (DeepSeek's thinking mode answers 400 without its reasoning, Gemini 3
    without each call's thought signature), marked with the ``endpoint`` that sent them so they
    go back to it and to no other (:func:`helpers.models.replies.for_endpoint`)."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.provider_fields:
        message.update(reply.provider_fields)
    if calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": valid_text(c.arguments)},
                **c.provider_fields,
            }
            for c in calls
        ]
    if reply.provider_fields or any(c.provider_fields for c in calls):
        message[FIELDS_FROM] = endpoint
        record.guard_events.append("provider_fields_echoed")
    return message


#: Finish reasons that say a provider stopped the answer for a reason of its own, with the
#: provider's meaning: Gemini's ``FinishReason`` values, which its OpenAI-compatible endpoint
#: passes on (Gemini API reference, "FinishReason").
STOPPED_BY_PROVIDER = {
    "safety": "Gemini's safety filters blocked it",
    "prohibited_content": "Gemini blocked it as prohibited content",
    "blocklist": "Gemini blocked a term of its blocklist",
    "spii": "Gemini blocked it for sensitive personal information",
    "recitation": "Gemini stopped it as a recitation of its training data",
    "malformed_function_call": "the model's function call was malformed",
    "language": "Gemini does not support the language",
    "other": "the provider gave no reason",
}


def judge_final_reply(
    record: TurnRecord,
    reply: Reply,
    *,
    unrun_calls: int = 0,
    limit_setting: str = "<NAME>_MAX_COMPLETION_TOKENS",
) -> None:
    """``ok``, or ``incomplete`` with the reason, for a final message: one without tool calls,
    or one the provider's content filter stopped (its tool calls are not run). A reply cut at
    the completion limit names ``limit_setting``, and says when reasoning used the limit."""
    text = reply.content or ""
    record.answer = text
    record.reasoning = reply.reasoning_text or None
    problem = None
    stopped = STOPPED_BY_PROVIDER.get((reply.finish_reason or "").lower())
    if reply.finish_reason == "length":
        problem = "the answer was cut at the model's output limit (finish_reason 'length')"
        reasoning, written = reply.reasoning_tokens, reply.completion_tokens
        if reasoning and written and reasoning >= written and not text.strip():
            problem = (
                f"the model spent the whole completion limit on reasoning ({reasoning:,} "
                f"reasoning tokens of {written:,}) and wrote no answer (finish_reason 'length')"
            )
        problem += f"; raise {limit_setting}"
    elif stopped is not None:
        problem = (
            f"the provider stopped the answer: finish_reason {reply.finish_reason!r} ({stopped})"
        )
    elif reply.finish_reason == "content_filter":
        problem = (
            "the provider's content filter stopped the answer (finish_reason 'content_filter')"
        )
        if unrun_calls:
            problem += f"; its {unrun_calls} tool call(s) were not run"
    elif not text.strip() and reply.refusal:
        problem = f"the model refused: {reply.refusal}"
    elif not text.strip() and record.reasoning:
        problem = (
            "the final message has no content: the answer is only in the model's reasoning "
            "(shown as reasoning, not as the answer)"
        )
    elif not text.strip():
        problem = "the model's final message is empty"
    elif tool_call_as_text(text):
        problem = (
            "the model wrote a tool call as text, which the server did not parse into "
            "tool_calls: serve the model with a tool-aware chat template and tool parser "
            "(llama.cpp: --jinja; vLLM: --enable-auto-tool-choice --tool-call-parser <parser>)"
        )
    record.status = "ok" if problem is None else "incomplete"
    record.error = problem
