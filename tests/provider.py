"""The tests' one fake provider: a scripted OpenAI-compatible server, on loopback (real HTTP,
real shapes) or in-process (:meth:`ScriptedProvider.transport`, :func:`scripted_client`).

Real providers are messy in ways the offline model never is. :class:`ScriptedProvider` is a
standard-library HTTP server on 127.0.0.1 (the plumbing the offline model shares,
:mod:`helpers.models.loopback`) that answers each ``POST …/chat/completions`` with the
next step of a script, and records every request (path, headers, JSON body) so a test can check
what the client really sent.

A step is a function of the request body returning a :class:`Answer` (any status, any body, any
content type) or a ``dict`` (a JSON body, HTTP 200). Helpers build the common bodies:
:func:`completion`, :func:`tool_call`, and readers of the conversation such as :func:`last_tool`.
Server habits that apply to every response are flags: ``zero_ids`` (every tool-call id is
``"0"``), ``thinking`` (DeepSeek's thinking mode: a ``reasoning_content`` on every message, and
HTTP 400 when an assistant message with tool calls comes back without it).
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx2
import openai

from helpers.cli import main
from helpers.models.loopback import LoopbackServer, Reply, Request, mock_transport
from helpers.models.personas import PERSONAS
from helpers.models.providers import ToolCallIdFormat, profile_named

#: DeepSeek's thinking mode, as the offline persona ``deepseek-thinking`` has it: one copy of
#: the provider's rule and its error text (api-docs.deepseek.com, thinking mode, tool calls).
DEEPSEEK = PERSONAS["deepseek-thinking"]


#: Gemini 3's answer when a tool call comes back without its thought signature (Gemini API
#: docs, "Thought signatures").
GEMINI_MISSING = (
    "Function call is missing a thought_signature in functionCall parts. This is required for "
    "tools to work correctly."
)
#: Mistral's answer to a tool-call id that is not 9 characters [a-zA-Z0-9] (quoted in
#: langchain-ai/langchain#24668).
MISTRAL_BAD_ID = "Tool call id was {id} but must be a-z, A-Z, 0-9, with a length of 9."
#: Mistral's answer to a user message right after tool results (zed-industries/zed#37021,
#: yetone/avante.nvim#2695).
MISTRAL_ORDER = "Unexpected role 'user' after role 'tool'"
#: Mistral's own id rule, as its profile declares it (the scripted provider's ``ids=``).
MISTRAL_IDS = profile_named("mistral").tool_call_ids

#: The fields a strict server (Mistral) accepts on a message and on a tool call.
MESSAGE_FIELDS = frozenset({"role", "content", "tool_calls", "tool_call_id", "name", "prefix"})
TOOL_CALL_FIELDS = frozenset({"id", "type", "function", "index"})


#: One HTTP response of a step: the plumbing's :class:`~helpers.models.loopback.Reply`
#: (status, body, content type, headers, ``delay_s``).
Answer = Reply


Step = Callable[[dict[str, Any]], Any]


def tool_call(
    name: str, arguments: Any, call_id: Any = "call_p1", *, as_object: bool = False
) -> dict[str, Any]:
    """One tool call as a provider sends it. ``arguments``: a ``str`` is sent verbatim (JSON
    text), ``None`` as ``null``, anything else as its JSON text (or, with ``as_object``, as the
    object itself, as some local servers do). ``call_id=...`` leaves the id out."""
    if isinstance(arguments, str) or arguments is None or as_object:
        sent = arguments
    else:
        sent = json.dumps(arguments)
    call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": sent}}
    if call_id is not ...:
        call["id"] = call_id
    return call


def completion(
    content: Any = None,
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    finish_reason: str | None = None,
    usage: Any = (10, 5),
    message_extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``chat.completion`` body. ``usage``: ``(prompt, completion)``, a dict (sent as is), or
    ``...`` to leave it out."""
    message: dict[str, Any] = {"role": "assistant", "content": content, **(message_extra or {})}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    body: dict[str, Any] = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted-model",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
    }
    if isinstance(usage, tuple):
        body["usage"] = {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        }
    elif usage is not ...:
        body["usage"] = usage
    return body


def tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``tool`` messages of a request, in order."""
    return [m for m in request["messages"] if m.get("role") == "tool"]


def last_tool(request: dict[str, Any]) -> str:
    """The content of the last ``tool`` message of a request; of a boxed result shown with a
    note and a preview, its first line: the reference, as a model copies it."""
    content = str(tool_messages(request)[-1]["content"])
    if content.startswith("internal://") and "\n" in content:
        return content.split("\n", 1)[0]
    return content


class ScriptedProvider:
    """The server: ``with ScriptedProvider(steps) as provider: provider.base_url``.

    Args:
        steps: answered in order; the last one repeats.
        prefix: the path the API lives under (``/v1``); other paths get a 404.
        zero_ids: every tool-call id in a response becomes ``"0"``.
        thinking: behave like DeepSeek's thinking mode (see the module docstring).
        reasoning_details: add OpenRouter's ``reasoning_details`` to every message.
        thought_signatures: behave like Gemini 3: every tool call carries
            ``extra_content.google.thought_signature``, and a request whose assistant tool
            call lacks it gets HTTP 400 (:data:`GEMINI_MISSING`).
        strict: behave like Mistral (and Groq): a message or tool-call field outside the
            chat-completions schema gets HTTP 422 ``extra_forbidden``.
        ids: the provider's own tool-call id rule (a profile's ``tool_call_ids``, e.g.
            ``profile_named("mistral").tool_call_ids``): its responses carry ids it makes, and
            a request holding an id of another form gets HTTP 400 with ``bad_id`` (Mistral's
            :data:`MISTRAL_BAD_ID` by default). ``None``: any id is taken.
        bad_id: the refusal's message, ``{id}`` the id refused.
        tool_order: behave like Mistral: a ``user`` message right after a ``tool`` message
            gets HTTP 400 (:data:`MISTRAL_ORDER`).
    """

    def __init__(
        self,
        steps: list[Step],
        *,
        prefix: str = "/v1",
        zero_ids: bool = False,
        thinking: bool = False,
        reasoning_details: bool = False,
        thought_signatures: bool = False,
        strict: bool = False,
        ids: ToolCallIdFormat | None = None,
        bad_id: str = MISTRAL_BAD_ID,
        tool_order: bool = False,
    ):
        self.steps = steps
        self.prefix = prefix
        self.zero_ids = zero_ids
        self.thinking = thinking
        self.reasoning_details = reasoning_details
        self.thought_signatures = thought_signatures
        self.strict = strict
        self.ids = ids
        self.bad_id = bad_id
        self.tool_order = tool_order
        self.requests: list[dict[str, Any]] = []
        self.chat_bodies: list[dict[str, Any]] = []  # each chat request's JSON body, as it came
        self._lock = threading.Lock()
        self.server: LoopbackServer | None = None  # loopback HTTP, opened by ``with``

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1`` (with the configured prefix)."""
        assert self.server is not None, "enter the provider (with ...) to serve it on loopback"
        return self.server.base_url

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of the chat requests received, in order."""
        return [r["json"] for r in self.requests if r["path"].endswith("/chat/completions")]

    def _respond(self, request: Request) -> Answer:
        path, headers = request.path, request.headers
        try:
            body = json.loads(request.body or b"{}")
        except ValueError:
            body = None
        with self._lock:
            self.requests.append({"path": path, "headers": headers, "json": body})
            expected = self.prefix.rstrip("/") + "/chat/completions"
            if path.split("?")[0].rstrip("/") != expected:
                return Answer({"error": {"message": f"no route {path}"}}, status=404)
            self.chat_bodies.append(body)
            missing = DEEPSEEK.refusal(body.get("messages", [])) if self.thinking else None
            if missing is not None:
                return Answer({"error": {"message": missing}}, status=400)
            refused = self._refusal(body)
            if refused is not None:
                return refused
            step = self.steps[min(len(self.chat_requests), len(self.steps)) - 1]
        result = step(body)
        answer = result if isinstance(result, Answer) else Answer(result)
        if isinstance(answer.body, dict):
            self._habits(answer.body)
        return answer

    def _refusal(self, body: dict[str, Any]) -> Answer | None:
        """The 400 or 422 a Gemini-like or strict server answers this request with, if any."""
        messages = body.get("messages", [])
        for index, message in enumerate(messages):
            calls = message.get("tool_calls") or []
            after_tool = index > 0 and messages[index - 1].get("role") == "tool"
            if self.tool_order and after_tool and message.get("role") == "user":
                error = {"object": "error", "message": MISTRAL_ORDER, "type": "invalid_request"}
                return Answer(error, 400)
            if self.strict:
                extra = sorted(set(message) - MESSAGE_FIELDS) + sorted(
                    {k for c in calls for k in c} - TOOL_CALL_FIELDS
                )
                if extra:
                    detail = {
                        "type": "extra_forbidden",
                        "loc": ["body", "messages", index, extra[0]],
                    }
                    return Answer({"object": "error", "message": {"detail": [detail]}}, 422)
            if self.ids is not None:
                ids = [c.get("id") for c in calls] + [message.get("tool_call_id")] * (
                    message.get("role") == "tool"
                )
                bad = next((i for i in ids if not self.ids.accepts(str(i))), None)
                if bad is not None:
                    error = {"object": "error", "message": self.bad_id.format(id=bad)}
                    return Answer({**error, "type": "invalid_request_error"}, 400)
            if self.thought_signatures and any(
                not (c.get("extra_content") or {}).get("google", {}).get("thought_signature")
                for c in calls
            ):
                return Answer({"error": {"code": 400, "message": GEMINI_MISSING}}, 400)
        return None

    def _habits(self, body: dict[str, Any]) -> None:
        for choice in body.get("choices") or []:
            message = choice.get("message") if isinstance(choice, dict) else None
            if not isinstance(message, dict):
                continue
            if self.zero_ids:
                for call in message.get("tool_calls") or []:
                    call["id"] = "0"
            if self.ids is not None:
                for call in message.get("tool_calls") or []:
                    call["id"] = self.ids.make()
            if self.thought_signatures:
                for n, call in enumerate(message.get("tool_calls") or []):
                    signature = {"google": {"thought_signature": f"c2lnLTE{n}"}}
                    call.setdefault("extra_content", signature)
            if self.thinking:
                message.setdefault("reasoning_content", "Thinking about the next step.")
            if self.reasoning_details:
                message.setdefault(
                    "reasoning_details",
                    [{"type": "reasoning.text", "text": "step by step", "signature": "sig-1"}],
                )

    def transport(self) -> httpx2.MockTransport:
        """The same provider in-process: an ``httpx2`` transport that answers each request as
        the loopback server would (no socket, no delay)."""
        return mock_transport(self._respond)

    def client(self) -> openai.OpenAI:
        """A real ``openai`` client talking to this provider in-process (no retries)."""
        return openai.OpenAI(
            base_url="http://scripted.invalid/v1",
            api_key="k",
            max_retries=0,
            http_client=httpx2.Client(transport=self.transport()),
        )

    def __enter__(self) -> ScriptedProvider:
        self.server = LoopbackServer(self._respond, prefix=self.prefix).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.server is not None:
            self.server.stop()


# -- a hostile model and endpoint ------------------------------------------------------------

#: Text that acts instead of showing, in every sink: script and event-handler HTML, Markdown
#: images and links, autolinks, TeX, ANSI / OSC 8 / OSC 52 / title escapes, C1 controls, bidi
#: overrides and invisible characters, a carriage return, rich markup and emoji codes.
CANARIES = {
    "script": "<script>window.__pwned=1</script>",
    "onerror": '<img src=x onerror="window.__pwned=1">',
    "md_image": "![x](http://127.0.0.1:9/leak.png)",
    "md_link": "[click](javascript:alert(1))",
    "autolinks": "<https://evil.example> https://evil.example/x www.evil.example a@evil.example",
    "tex": "$\\href{javascript:alert(1)}{x}$",
    "ansi": "\x1b[2J\x1b[31mFAKE: all cases passed",
    "osc8": "\x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\",
    "osc52": "\x1b]52;c;ZWNobyBQV05FRA==\x07",
    "title": "\x1b]0;pwned\x07",
    "c1": "\x9b2J\x9d0;x\x9c",
    "bidi": "\u202eevil\u202c \u2066x\u2069 zero\u200bwidth \ufeff tag\U000e0041",
    "cr": "line\roverwritten",
    "rich": "[bold red]markup[/] [link=http://evil.example]x[/link] :smile:",
}
HOSTILE = " ".join(CANARIES.values())

#: What a hostile model or endpoint answers, each carrying :data:`HOSTILE`: a refusal, an answer,
#: an answer only in the reasoning, an HTTP 400 error body, an error inside a 200 (OpenRouter's
#: "upstream said: …"), and an HTML error page.
HOSTILE_REPLIES: tuple[Any, ...] = (
    completion(None, message_extra={"refusal": HOSTILE}),
    completion(HOSTILE),
    completion("", message_extra={"reasoning_content": HOSTILE}),
    Answer({"error": {"message": HOSTILE, "type": "invalid_request_error"}}, status=400),
    Answer({"error": {"message": f"upstream said: {HOSTILE}", "code": 502}}),
    Answer(f"<html><body><h1>{HOSTILE}</h1></body></html>", 400, "text/html"),
)


def hostile_replies() -> Step:
    """A step answering each request with the next of :data:`HOSTILE_REPLIES`, round and round."""
    count = itertools.count()

    def step(_request: dict[str, Any]) -> Any:
        return HOSTILE_REPLIES[next(count) % len(HOSTILE_REPLIES)]

    return step


# -- the same provider in-process, replaying given assistant messages ---------------------------


def scripted_client(
    replies: list[dict[str, Any]], usages: list[tuple[int, int]] | None = None
) -> tuple[openai.OpenAI, list[dict[str, Any]]]:
    """``(client, requests)``: a real ``openai`` client whose provider (in-process, through
    :meth:`ScriptedProvider.transport`) answers with ``replies`` in turn (the last repeats), each
    with its ``(prompt, completion)`` usage; ``requests`` fills with each chat request body."""

    def reply(i: int) -> Step:
        prompt, completion_tokens = usages[i] if usages else (1, 1)
        body = {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "scripted",
            "choices": [{"index": 0, "message": replies[i], "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt + completion_tokens,
            },
        }
        return lambda _request: copy.deepcopy(body)

    provider = ScriptedProvider([reply(i) for i in range(len(replies))])
    return provider.client(), provider.chat_bodies


def tool_calls(*calls: tuple[str, str, str]) -> dict[str, Any]:
    """An assistant message with tool calls given as (id, name, JSON arguments text)."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
            for cid, name, args in calls
        ],
    }


# -- `workbook ask --json` against a provider ------------------------------------------------

SECRET = "sk-live-Zq8Xv2Lp9Rt4Wm6Kc1Hy3Nb5Df7Gj0Ts"
PROMPT = "Transcribe video 123 and pass it to Deep Check."
TRANSCRIBE = completion(tool_calls=[tool_call("yt_transcribe", {"video_id": "123"})])


@dataclass
class Run:
    code: int
    data: dict[str, Any]
    out: str
    err: str
    db: str

    @property
    def calls(self) -> list[dict[str, Any]]:
        return self.data["tool_calls"]

    def named(self, name: str) -> list[dict[str, Any]]:
        return [c for c in self.calls if c["name"] == name]


def ask_runner(tmp_path, monkeypatch, capsys):
    """Run ``workbook ask PROMPT --json`` in-process against a provider; check the invariants."""
    db = f"sqlite:///{tmp_path / 'store.sqlite'}"

    def run(
        provider: ScriptedProvider | None,
        *flags: str,
        env: dict[str, str] | None = None,
        prompt: str = PROMPT,
    ) -> Run:
        monkeypatch.setenv("WORKBOOK_PROFILE", "local")
        monkeypatch.setenv("LOCAL_MODEL", "scripted-model")
        monkeypatch.setenv("LOCAL_API_KEY", SECRET)
        if provider is not None:
            monkeypatch.setenv("LOCAL_BASE_URL", provider.base_url)
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
        code = main(["ask", prompt, "--json", "--db", db, "--max-retries", "0", *flags])
        captured = capsys.readouterr()
        assert captured.out.count("\n") == 1, captured.out  # exactly one line: one JSON object
        data = json.loads(captured.out)
        assert isinstance(data, dict) and "status" in data
        assert SECRET not in captured.out and SECRET not in captured.err
        for path in tmp_path.glob("store.sqlite*"):
            assert SECRET.encode() not in path.read_bytes()
        return Run(code, data, captured.out, captured.err, db)

    return run


# -- a provider's rules about the completion limit, as each documents them --------------------


def server_prompt_tokens(body: dict[str, Any], ratio: float = 1.2) -> int:
    """The prompt as a server whose tokenizer is not o200k_base counts it: the client's own
    count times ``ratio`` (a Llama or Qwen tokenizer counts English text about that much
    more)."""
    from helpers.text.tokens import count_chat_tokens

    return math.ceil(count_chat_tokens(body.get("messages", []), body.get("tools")) * ratio)


def _limit_sent(body: dict[str, Any]) -> tuple[str | None, int | None]:
    for name in ("max_completion_tokens", "max_tokens"):
        if isinstance(body.get(name), int):
            return name, body[name]
    return None, None


def openai_error(message: str, status: int = 400, code: Any = None, **extra: Any) -> Answer:
    """An error as OpenAI (and servers that copy its shape) send it."""
    error = {"message": message, "type": "invalid_request_error", "param": None, "code": code}
    return Answer({"error": {**error, **extra}}, status=status)


def limit_rules(
    step: Step,
    *,
    style: str,
    window: int | None = None,
    most_output: int | None = None,
    per_request: int | None = None,
    field: str | None = None,
) -> Step:
    """``step`` behind a provider that refuses a completion limit that does not fit, in the
    words of ``style``:

    - ``"vllm"``: prompt + limit over ``window`` (vllm-project/vllm#42474);
    - ``"vllm-old"`` and ``"openai-window"``: the same, "you requested N tokens (P in the
      messages, C in the completion)" (vllm-project/vllm#20409; OpenAI's gpt-4);
    - ``"openai-output"``: a limit over ``most_output`` (gpt-3.5-turbo, gpt-4-turbo);
    - ``"anthropic"``: the same as Anthropic words it ("max_tokens: 8192 > 4096, …");
    - ``"groq-tpm"``: prompt + limit over ``per_request`` tokens per minute, HTTP 413;
    - ``"reasoning"``: ``max_tokens`` refused, ``field`` (``max_completion_tokens``) required,
      and any temperature refused (OpenHands/OpenHands#4131).
    """

    def guarded(body: dict[str, Any]) -> Any:
        name, sent = _limit_sent(body)
        prompt = server_prompt_tokens(body)
        if style == "reasoning" and "temperature" in body:
            return openai_error(
                f"Unsupported value: 'temperature' does not support {body['temperature']} with "
                "this model. Only the default (1) value is supported.",
                code="unsupported_value",
            )
        if style == "reasoning" and name != field:
            return openai_error(
                f"Unsupported parameter: '{name}' is not supported with this model. Use "
                f"'{field}' instead.",
                code="unsupported_parameter",
            )
        if sent is None:
            return step(body)
        if style == "vllm" and window and prompt + sent > window:
            message = (
                f"'max_tokens' or 'max_completion_tokens' is too large: {sent}. This model's "
                f"maximum context length is {window} tokens and your request has {prompt} input "
                f"tokens ({sent} > {window} - {prompt})."
            )
            return Answer({"object": "error", "message": message, "type": "BadRequestError",
                           "param": None, "code": 400}, status=400)  # fmt: skip
        if style in ("vllm-old", "openai-window") and window and prompt + sent > window:
            message = (
                f"This model's maximum context length is {window} tokens. However, you "
                f"requested {prompt + sent} tokens ({prompt} in the messages, {sent} in the "
                "completion). Please reduce the length of the messages or completion."
            )
            return openai_error(message, code="context_length_exceeded")
        if style == "openai-output" and most_output and sent > most_output:
            return openai_error(
                f"max_tokens is too large: {sent}. This model supports at most {most_output} "
                f"completion tokens, whereas you provided {sent}."
            )
        if style == "anthropic" and most_output and sent > most_output:
            message = (
                f"max_tokens: {sent} > {most_output}, which is the maximum allowed number of "
                "output tokens for claude-3-haiku-20240307"
            )
            error = {"type": "invalid_request_error", "message": message}
            return Answer({"type": "error", "error": error}, status=400)
        if style == "groq-tpm" and per_request and prompt + sent > per_request:
            message = (
                "Request too large for model `llama-3.1-8b-instant` in organization "
                "`org_01scripted` service tier `on_demand` on tokens per minute (TPM): Limit "
                f"{per_request}, Requested {prompt + sent}, please reduce your message size and "
                "try again. Need more tokens? Upgrade to Dev Tier today at "
                "https://console.groq.com/settings/billing"
            )
            error = {"message": message, "type": "tokens", "code": "rate_limit_exceeded"}
            return Answer({"error": error}, status=413)
        return step(body)

    return guarded
