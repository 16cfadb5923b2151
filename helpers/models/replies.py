"""The model's reply as real providers send it: every shape read, or a clear reason why not.

The OpenAI SDK parses a chat completion leniently: a body that is not JSON comes back as a
string, ``choices`` may be ``null``, a tool call may lack its ``id``, ``arguments`` may be
``null``, ``usage`` may be ``{}``. Real providers send all of these (OpenRouter answers HTTP 200
with ``{"error": {...}}`` when an upstream fails; some local servers send HTML from the wrong
path, number tool calls ``"0"`` in every response, or put the answer in ``reasoning_content``).
So the agent reads the raw body itself (:func:`parse_reply`) and gets either a :class:`Reply`
whose every field has a known type, or a :class:`ProviderError` whose message says what came back.

Reasoning fields (``reasoning_content`` from DeepSeek and vLLM, ``reasoning`` and
``reasoning_details`` from OpenRouter) are kept as they came, because thinking-mode providers
require them back on the assistant message in later requests: DeepSeek answers HTTP 400
"Missing `reasoning_content` field in the assistant message" otherwise (its *Thinking Mode*
guide, section "Tool Calls").
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import Any

from helpers.text.unicode import valid_text

#: Assistant-message fields a provider may send that must be sent back unchanged.
PROVIDER_FIELDS = ("reasoning_content", "reasoning", "reasoning_details")
#: Fields of one tool call a provider sends and needs back: Gemini's ``extra_content``, whose
#: ``google.thought_signature`` must come back with the call, or Gemini 3 answers HTTP 400
#: "Function call is missing a thought_signature" (Gemini API docs, "Thought signatures",
#: OpenAI compatibility).
TOOL_CALL_PROVIDER_FIELDS = ("extra_content",)
#: The key an assistant message carrying provider fields is marked with: the endpoint (base
#: URL) that sent them. It is never sent to any provider (:func:`for_endpoint`).
FIELDS_FROM = "_provider_fields_from"


#: What providers say when a request is longer than the model's context window, lower-cased:
#: OpenAI's ``context_length_exceeded`` code and "maximum context length" message; Anthropic's
#: "prompt is too long"; llama.cpp's server, 400 "request (N tokens) exceeds the available
#: context size" (its error type ``exceed_context_size_error``) and 500 "Context size has been
#: exceeded" when generation runs out of room (ggml-org/llama.cpp, tools/server); Gemini's 400
#: "The input token count (N) exceeds the maximum number of tokens allowed (M)".
CONTEXT_OVERFLOW_PHRASES = (
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "context window",
    "prompt is too long",
    "too many tokens",
    "exceed_context_size_error",
    "exceeds the available context size",
    "context size has been exceeded",
    "exceeds the maximum number of tokens",
)
#: HTTP statuses a context overflow comes with: 400 and 413 (request too large) from most
#: servers, 500 from llama.cpp's server when the context fills during generation.
CONTEXT_OVERFLOW_STATUSES = (400, 413, 500)


def is_context_overflow(status: int, text: str) -> bool:
    """Whether an HTTP error (``status``, and its code and message as ``text``) says that the
    request did not fit the model's context window (:data:`CONTEXT_OVERFLOW_PHRASES`)."""
    if status not in CONTEXT_OVERFLOW_STATUSES:
        return False
    lowered = text.lower()
    return any(phrase in lowered for phrase in CONTEXT_OVERFLOW_PHRASES)


#: How a model writes a tool call in its text when the server does not turn it into
#: ``tool_calls`` (no tool-aware chat template, no tool parser): Hermes and Qwen's
#: ``<tool_call>``, Phi's ``<|tool_call|>``, Mistral's ``[TOOL_CALLS]``, Llama 3.1's
#: ``<|python_tag|>`` and ``<function=…>``.
TOOL_CALL_TEXT_MARKERS = (
    "<tool_call>",
    "<|tool_call|>",
    "[TOOL_CALLS]",
    "<|python_tag|>",
    "<function=",
)
_CALL_JSON_RE = re.compile(r'^\s*\{\s*"name"\s*:\s*"[^"]+"\s*,\s*"(arguments|parameters)"\s*:')


def tool_call_as_text(content: str) -> bool:
    """Whether a final message's text is a tool call the server left unparsed: a marker of
    :data:`TOOL_CALL_TEXT_MARKERS`, or a whole JSON object ``{"name": …, "arguments": …}``.
    vLLM parses tool calls only when started with ``--enable-auto-tool-choice
    --tool-call-parser <parser>`` (its "Tool Calling" docs); llama.cpp's server only with
    ``--jinja`` (its docs/function-calling.md)."""
    return any(marker in content for marker in TOOL_CALL_TEXT_MARKERS) or bool(
        _CALL_JSON_RE.match(content)
    )


#: Characters of the provider's own message kept in an error, and of the upstream's reason or
#: the model's failed tool call beside it.
ERROR_MESSAGE_CHARS = 500
ERROR_PART_CHARS = 300


def error_message(body: Any) -> str:
    """The provider's own message in an error body, on one line: ``{"error": {"message"}}``,
    ``{"detail"}``, a list of such objects (Gemini's OpenAI-compatible endpoint sends
    ``[{"error": {...}}]``), or the body as text; at most :data:`ERROR_MESSAGE_CHARS`
    characters. Beside it, what the provider puts elsewhere:

    - OpenRouter's upstream reason, ``error.metadata.raw`` (text or JSON text) and
      ``error.metadata.provider_name`` (OpenRouter docs, "Errors"; its generic message
      "Provider returned error" alone says nothing: open-webui/computer#293);
    - Groq's ``error.failed_generation``, the model's tool call it could not parse (Groq docs,
      "Tool use", ``tool_use_failed``).

    Each part is cut at :data:`ERROR_PART_CHARS` characters."""
    if isinstance(body, list) and body and isinstance(body[0], dict):
        body = body[0]
    detail = ""
    error: Any = None
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            found = error.get("message") or error.get("detail") or body.get("detail")
            detail = found if isinstance(found, str) else json.dumps(found or error)
        else:
            detail = str(error)
    elif body is not None:
        detail = str(body)
    detail = _one_line(detail, ERROR_MESSAGE_CHARS)
    if isinstance(error, dict):
        metadata = error.get("metadata")
        if isinstance(metadata, dict) and metadata.get("raw"):
            detail += f" ({_upstream_reason(metadata)})"
        failed = error.get("failed_generation")
        if isinstance(failed, str) and failed.strip():
            detail += f" (the model's tool call as it came: {_one_line(failed, ERROR_PART_CHARS)})"
    return detail


def _one_line(text: str, chars: int) -> str:
    return " ".join(text.split())[:chars]


#: Characters of OpenRouter's ``metadata.raw`` parsed as JSON (the rest is never shown).
RAW_READ_CHARS = 65_536


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    """A JSON number as a float, refused when it does not fit one (``1e999999``)."""
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text[:20]} does not fit a float")
    return value


def _upstream_reason(metadata: dict[str, Any]) -> str:
    """OpenRouter's ``metadata``: ``"<provider_name> said: <reason>"``."""
    raw = metadata.get("raw")
    reason: Any = raw
    if isinstance(raw, str):
        try:  # as sent: no NaN or Infinity made up, no depth past the parser's
            reason = json.loads(
                raw[:RAW_READ_CHARS], parse_constant=_refuse_constant, parse_float=_finite
            )
        except (ValueError, RecursionError):
            reason = raw
    if isinstance(reason, (dict, list)):
        try:
            reason = error_message(reason) or json.dumps(reason)
        except (ValueError, RecursionError):
            reason = raw
    name = metadata.get("provider_name")
    who = f"{_one_line(name, 60)} said" if isinstance(name, str) and name.strip() else "upstream"
    return f"{who}: {_one_line(str(reason), ERROR_PART_CHARS)}"


@dataclass(frozen=True)
class ErrorRule:
    """What the workbook knows about one documented provider error: how to recognise it (an
    HTTP status and a phrase of the code or message, lower case), the hint that fits it, and
    whether a retry can help (the ``openai`` SDK retries 408, 409, 429 and 5xx; a rule with
    ``retry=False`` stops that, :func:`helpers.models.llm.make_client`)."""

    name: str
    statuses: tuple[int, ...]
    phrases: tuple[str, ...]
    hint: str
    retry: bool
    source: str

    def matches(self, status: int, text: str) -> bool:
        """Whether an HTTP error (``status``; its code and message as ``text``) is this one."""
        lowered = text.lower()
        return status in self.statuses and any(p in lowered for p in self.phrases)


ERROR_RULES: tuple[ErrorRule, ...] = (
    ErrorRule(
        "user_after_tool",
        (400, 422),
        ("unexpected role 'user' after role 'tool'",),
        "Mistral's rule, also behind OpenRouter: a thread whose last turn stopped after its "
        "tool results needs a message between them; set {prefix}_PROVIDER_PROFILE=mistral, "
        "whose requests put one there",
        False,
        "zed-industries/zed#37021; charmbracelet/crush#279",
    ),
    ErrorRule(
        "no_tool_endpoints",
        (404,),
        ("no endpoints found that support tool use",),
        "no provider OpenRouter routes this model to supports tool calling: choose a model "
        "listed with tools (openrouter.ai/models?supported_parameters=tools)",
        False,
        "OpenRouter docs, Tool calling: only models with the tools parameter accept tools",
    ),
    ErrorRule(
        "tool_use_failed",
        (400,),
        ("tool_use_failed",),
        "the model wrote a tool call the provider could not parse (shown above): run the turn "
        "again, or choose a model that calls tools reliably",
        False,
        "Groq docs, Tool use: tool_use_failed with the model's output in failed_generation",
    ),
    ErrorRule(
        "needs_jinja",
        (500, 400),
        ("--jinja",),
        "start llama-server with --jinja, which tool calling needs: no retry helps until then",
        False,
        "ggml-org/llama.cpp, docs/function-calling.md: tools require --jinja",
    ),
    ErrorRule(
        "daily_quota",
        (429,),
        (
            "free-models-per-day",
            "per day",
            "per-day",
            "(tpd)",
            "(rpd)",
            "per month",
            "monthly",
            "insufficient_quota",
        ),
        "the account's daily or monthly allowance is spent: no retry helps before it resets; "
        "use another key or profile, or the offline model (--profile offline)",
        False,
        "OpenRouter docs, Limits (free-models-per-day); Groq docs, Rate limits (TPD, RPD); "
        "OpenAI docs, Error codes (insufficient_quota)",
    ),
)


def error_rule(status: int, text: str) -> ErrorRule | None:
    """The :data:`ERROR_RULES` entry an HTTP error (``status``; its code and message as
    ``text``) is, or ``None``."""
    return next((rule for rule in ERROR_RULES if rule.matches(status, text)), None)


def map_strings(value: Any, change: Any) -> Any:
    """``value`` (any JSON value) with ``change`` applied to every string in it, keys included."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {change(str(k)): map_strings(v, change) for k, v in value.items()}
    if isinstance(value, list):
        return [map_strings(v, change) for v in value]
    return value


class ProviderError(Exception):
    """The endpoint answered with something that is not a usable chat completion."""


@dataclass(frozen=True)
class ReplyToolCall:
    """One tool call as the provider sent it.

    ``provider_id`` is the provider's id (``None`` when missing or not a string); ``name`` is
    ``""`` when missing; ``arguments`` is the JSON text of the arguments (``""`` when ``null``;
    an arguments *object*, as some local servers send, is turned into its JSON text);
    ``provider_fields`` holds :data:`TOOL_CALL_PROVIDER_FIELDS` as sent, to send back as is.
    """

    provider_id: str | None
    name: str
    arguments: str
    provider_fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Reply:
    """One chat-completion choice, normalised.

    Attributes:
        content: the text of the message (content parts joined), or ``None``.
        tool_calls: the tool calls, in order.
        finish_reason: as sent (``stop``, ``tool_calls``, ``length``, ``content_filter``, …).
        prompt_tokens, completion_tokens: from ``usage``; ``None`` when missing, null or not a
            whole number (the agent then counts them itself).
        cached_tokens: the prompt tokens the provider served from its cache, as ``usage``
            reports them: ``prompt_tokens_details.cached_tokens`` (OpenAI's API reference, "The
            chat completion object"; OpenRouter's "Usage Accounting" uses the same field), else
            ``prompt_cache_hit_tokens`` (DeepSeek's guide "Context Caching"); ``None`` when the
            response says neither.
        provider_fields: :data:`PROVIDER_FIELDS` present on the message, to send back as is.
        refusal: the model's refusal text, if any (OpenAI's ``refusal``).
        reasoning_tokens: the completion tokens the model spent reasoning,
            ``usage.completion_tokens_details.reasoning_tokens`` (OpenAI's API reference; OpenRouter's
            "Reasoning Tokens"); ``None`` when not reported.
    """

    content: str | None
    tool_calls: list[ReplyToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    provider_fields: dict[str, Any] = field(default_factory=dict)
    refusal: str | None = None
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None

    def map_text(self, change: Any) -> Reply:
        """A copy with ``change`` applied to the content, the refusal, the provider fields and
        each tool call's provider id, name, arguments and provider fields (e.g. to redact a secret the model or the
        provider echoed: an id is provider text like any other)."""
        return replace(
            self,
            content=None if self.content is None else change(self.content),
            refusal=None if self.refusal is None else change(self.refusal),
            provider_fields=map_strings(self.provider_fields, change),
            tool_calls=[
                ReplyToolCall(
                    None if c.provider_id is None else change(c.provider_id),
                    change(c.name),
                    change(c.arguments),
                    map_strings(c.provider_fields, change),
                )
                for c in self.tool_calls
            ],
        )

    @property
    def reasoning_text(self) -> str:
        """The model's reasoning as plain text ("" if none): ``reasoning_content``, else
        ``reasoning``, else the text of ``reasoning_details``."""
        for key in ("reasoning_content", "reasoning"):
            value = self.provider_fields.get(key)
            if isinstance(value, str) and value.strip():
                return value
        details = self.provider_fields.get("reasoning_details")
        if isinstance(details, list):
            parts = [
                str(d.get("text") or d.get("summary") or "") for d in details if isinstance(d, dict)
            ]
            return "\n".join(p for p in parts if p)
        return ""


def _snippet(text: str, width: int = 120) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _text_of(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(
            str(part.get("text") or "")
            for part in content
            if isinstance(part, dict) and part.get("type", "text") in ("text", "output_text")
        )
    return str(content)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _cached_tokens(usage: dict[str, Any]) -> int | None:
    """The cached prompt tokens a ``usage`` object reports (see :attr:`Reply.cached_tokens`)."""
    details = usage.get("prompt_tokens_details")
    if isinstance(details, dict) and _count(details.get("cached_tokens")) is not None:
        return _count(details.get("cached_tokens"))
    return _count(usage.get("prompt_cache_hit_tokens"))


def _reasoning_tokens(usage: dict[str, Any]) -> int | None:
    """The reasoning tokens a ``usage`` object reports (see :attr:`Reply.reasoning_tokens`)."""
    details = usage.get("completion_tokens_details")
    return _count(details.get("reasoning_tokens")) if isinstance(details, dict) else None


def _tool_call(raw: Any) -> ReplyToolCall:
    if not isinstance(raw, dict):
        return ReplyToolCall(None, "", "")
    function = raw.get("function") if isinstance(raw.get("function"), dict) else {}
    provider_id = raw.get("id") if isinstance(raw.get("id"), str) else None
    name = valid_text(function["name"]) if isinstance(function.get("name"), str) else ""
    arguments = function.get("arguments")
    if arguments is None:
        text = ""
    elif isinstance(arguments, str):
        text = arguments
    else:  # an object (or another JSON value) instead of JSON text
        text = json.dumps(arguments, ensure_ascii=False)
    fields = {k: raw[k] for k in TOOL_CALL_PROVIDER_FIELDS if isinstance(raw.get(k), dict)}
    return ReplyToolCall(provider_id, name, text, fields)


def parse_reply(body: str, *, content_type: str = "application/json") -> Reply:
    """Read a ``/chat/completions`` response body (HTTP 2xx) into a :class:`Reply`.

    Args:
        body: the response body as text.
        content_type: the response's ``Content-Type`` (only used in messages).

    Raises:
        ProviderError: the body is not JSON, not an object, carries an ``error`` and no choices,
            has no choices, or its first choice has no message.
    """
    try:
        data = json.loads(body)
    except ValueError:
        kind = content_type.split(";")[0].strip() or "no content type"
        what = "malformed JSON" if kind.endswith("json") else "a body that is not JSON"
        raise ProviderError(
            f"the endpoint answered with {what} ({kind}, {len(body)} characters: "
            f"{_snippet(body)!r}); is the base URL an OpenAI-compatible API?"
        ) from None
    if not isinstance(data, dict):
        raise ProviderError(
            f"the endpoint answered with JSON that is not an object: {_snippet(body)!r}"
        )
    choices = data.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    # an error after the model started is a 200 whose body (or first choice) holds the error,
    # next to choices that end with finish_reason "error" (OpenRouter's API reference, "Errors
    # and Debugging": "any error occurred while the LLM is producing the output will be emitted
    # in the response body")
    error = data.get("error") or (first.get("error") if isinstance(first, dict) else None)
    if not error and isinstance(first, dict) and first.get("finish_reason") == "error":
        error = "the response ended with finish_reason 'error' and no message"
    if error:  # the provider's message, and OpenRouter's upstream reason (error_message)
        code = (error.get("code") or error.get("type")) if isinstance(error, dict) else None
        detail = f" (code {code})" if code else ""
        message = error_message({"error": error}) if isinstance(error, dict) else str(error)
        raise ProviderError(f"the provider reported an error in a 200 response: {message}{detail}")
    if not isinstance(choices, list) or not choices:
        shown = "null" if choices is None else json.dumps(choices)[:40]
        raise ProviderError(
            f"the response has no choices (choices: {shown}); the provider returned no message"
        )
    choice = choices[0] if isinstance(choices[0], dict) else {}
    message = choice.get("message")
    if not isinstance(message, dict):
        raise ProviderError("the response's first choice has no message")
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    raw_calls = message.get("tool_calls")
    if raw_calls is not None and not isinstance(raw_calls, list):
        raise ProviderError(
            f"the message's tool_calls is a {type(raw_calls).__name__}, not a list: "
            f"{_snippet(json.dumps(raw_calls, ensure_ascii=False))!r}"
        )
    finish = choice.get("finish_reason")
    refusal = message.get("refusal")
    content = _text_of(message.get("content"))
    # text the provider cut mid-character is made valid (U+FFFD), except tool arguments, which
    # the agent refuses to run on (see helpers.loop.dispatch.dispatch)
    return Reply(
        content=None if content is None else valid_text(content),
        tool_calls=[_tool_call(c) for c in raw_calls or []],
        finish_reason=finish if isinstance(finish, str) else None,
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
        cached_tokens=_cached_tokens(usage),
        reasoning_tokens=_reasoning_tokens(usage),
        provider_fields=map_strings(
            {k: message[k] for k in PROVIDER_FIELDS if message.get(k) is not None}, valid_text
        ),
        refusal=valid_text(refusal) if isinstance(refusal, str) and refusal else None,
    )


def for_endpoint(
    messages: list[dict[str, Any]], endpoint: str, *, keep: Collection[str] | None = None
) -> list[dict[str, Any]]:
    """``messages`` as they may be sent to ``endpoint`` (a base URL): provider fields
    (:data:`PROVIDER_FIELDS` on a message, :data:`TOOL_CALL_PROVIDER_FIELDS` on its tool calls)
    go back only to the endpoint that sent them (the :data:`FIELDS_FROM` mark), never to
    another: after a DeepSeek turn Groq answers 400 "property 'reasoning_content' is
    unsupported" and Mistral 422 ``extra_forbidden``. Of the fields that endpoint sent, only
    those named in ``keep`` go back (its provider profile's ``fields_back``; ``None``: all).
    The mark itself is never sent. A message without a mark (written by hand, or stored before
    marks) is sent as it is. The list and its messages are not changed; changed messages are
    copies.
    """
    sent = []
    for message in messages:
        if FIELDS_FROM not in message:
            sent.append(message)
            continue
        copy = {k: v for k, v in message.items() if k != FIELDS_FROM}
        own = str(message[FIELDS_FROM]).rstrip("/") == endpoint.rstrip("/")
        dropped = {
            f
            for f in (*PROVIDER_FIELDS, *TOOL_CALL_PROVIDER_FIELDS)
            if not own or (keep is not None and f not in keep)
        }
        for key in dropped:
            copy.pop(key, None)
        if dropped and isinstance(copy.get("tool_calls"), list):
            copy["tool_calls"] = [
                {k: v for k, v in c.items() if k not in dropped} if isinstance(c, dict) else c
                for c in copy["tool_calls"]
            ]
        sent.append(copy)
    return sent
