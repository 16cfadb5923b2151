"""The offline reference model: it speaks the OpenAI wire protocol, so the real ``openai`` client
drives every notebook and test with no network and no key, and it answers exactly the prompts of
the workbook's cases.

**What it is for.** It tests the client (the agent loop, previews, boxing, unboxing, the store),
not a model's judgement: it carries out the plan of each known prompt (the cases'
``offline_plan``, matched word for word after whitespace is normalised) as an ideal model would
(:mod:`helpers.models.offline_plan`). Any other prompt gets an answer saying it has no plan,
naming the nearest known prompts (:meth:`OfflineModel.nearest`, the one similarity the model and
``workbook ask`` share) and how to configure a real model. It enforces a context window and
answers a longer request as OpenAI does (HTTP 400, ``context_length_exceeded``).

**How it answers.** It is stateless, like a real endpoint: for each request it replays its plan
from the last user message, feeding each earlier tool result back in, until it reaches the first
step not yet taken, and sends that step as the next assistant message. ``usage`` is counted with
o200k_base (:mod:`helpers.text.tokens`).

**Plugging it in.** :func:`offline_client` gives an ``openai.OpenAI`` whose ``httpx2`` client
has a ``MockTransport`` calling :meth:`OfflineModel.respond`; :class:`helpers.models.offline_server.
OfflineServer` serves the same model over loopback HTTP with the standard library, for the real
network path and its faults.
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx2
import openai

from helpers.cases.plans import Plan, PlanError, check_plan
from helpers.context.tool_search import TOOL_SEARCH_NAME
from helpers.models.loopback import Reply, Request, mock_transport
from helpers.models.offline_plan import Call, classify, interpret
from helpers.models.personas import (
    IDEAL,
    OFFLINE_MODEL_NAME,
    Persona,
    UnknownPersonaError,
    persona_for_model,
)
from helpers.models.providers import (
    OFFLINE_COMPLETION_LIMIT_TOKENS,
    OFFLINE_CONTEXT_WINDOW_TOKENS,
    OFFLINE_HOST,
)
from helpers.text.tokens import count_chat_tokens, count_tokens, encode, encoding

OFFLINE_BASE_URL = f"http://{OFFLINE_HOST}/v1"

#: The answer to a prompt the model has no plan for; ``{nearest}`` is filled in with the nearest
#: known prompts (:func:`no_plan_answer`).
NO_PLAN_ANSWER = (
    "I am the offline reference model, and I have no plan for this prompt: I carry out only the "
    "prompts of the workbook's cases (data/cases/), word for word.{nearest}\nTo ask anything "
    "else, configure a real model in .env (see .env.example: an OpenAI or OpenRouter key, or a "
    "local OpenAI-compatible server) and choose it with --profile or WORKBOOK_PROFILE."
)


def normalize_prompt(text: str) -> str:
    """Whitespace-insensitive key for matching a prompt to its plan."""
    return " ".join(text.split())


__all__ = [
    "NO_PLAN_ANSWER",
    "OFFLINE_BASE_URL",
    "SUGGESTIONS",
    "ContextLengthExceeded",
    "OfflineModel",
    "PlanError",
    "PromptIndex",
    "Suggestion",
    "WireError",
    "no_plan_answer",
    "normalize_prompt",
    "offline_client",
    "offline_transport",
    "prompt_terms",
]

# -- the prompts it knows, and the nearest ones to a prompt it does not -------------------------

#: How many known prompts an answer without a plan names, at most.
SUGGESTIONS = 3
#: How much of a prompt is read to find the nearest known prompts, in characters (over ten times
#: the longest case prompt): the rest of a longer prompt, perhaps a hostile megabyte, is never
#: looked at, so a suggestion costs the same time and memory whatever the prompt's length.
SUGGEST_READ_CHARS = 4_000

_WORD_RE = re.compile(r"[^\W_]+")
#: A quoted value without spaces ('123', "transcript.txt", `json.dumps`), kept whole as a term.
_QUOTED_RE = re.compile(r"""(['"`])([^'"`\s]{1,80})\1""")
_SUFFIXES = ("ing", "ed", "es", "e", "s")
_STEM_CHARS = 6


def _stem(word: str) -> str:
    """A crude stem of a lower-case word: words with a digit stay whole ("123", "sqlite3");
    otherwise one suffix of :data:`_SUFFIXES` goes (leaving at least 3 letters), a doubled last
    letter is halved, and the first 6 letters are kept, so "transcribe" and "transcript",
    "save" and "saving", "file" and "files" meet."""
    if any(c.isdigit() for c in word):
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if len(word) > 3 and word[-1] == word[-2]:
        word = word[:-1]
    return word[:_STEM_CHARS]


def prompt_terms(text: str) -> frozenset[str]:
    """The terms of a prompt that :class:`PromptIndex` compares: its words, case-folded and
    crudely stemmed (numbers kept whole), and its quoted values kept whole (``'transcript.txt'``).

    Args:
        text: any text; only its first :data:`SUGGEST_READ_CHARS` characters are read.

    Returns:
        The set of terms (at most one per word of what is read; empty for text without words).
    """
    head = text[:SUGGEST_READ_CHARS].casefold()
    terms = {_stem(word) for word in _WORD_RE.findall(head)}
    terms.update(match[2] for match in _QUOTED_RE.finditer(head))
    return frozenset(terms)


@dataclass(frozen=True)
class Suggestion:
    """A known prompt near one the offline model has no plan for.

    Attributes:
        case_id: the id of the case the prompt comes from (``None`` for a plan added without one).
        prompt: the prompt, whitespace normalised (what to send to have its plan carried out).
        score: how near it is, from 0 (no term shared) to 1 (the same terms): the cosine of the
            two prompts' IDF-weighted term sets.
    """

    case_id: str | None
    prompt: str
    score: float

    def to_json(self) -> dict[str, Any]:
        """``{"case_id", "prompt", "score"}``, the score rounded to 3 decimals."""
        return {"case_id": self.case_id, "prompt": self.prompt, "score": round(self.score, 3)}

    def line(self) -> str:
        """One line for a person: ``case1: Generate a transcript …``."""
        return f"{self.case_id}: {self.prompt}" if self.case_id else self.prompt


class PromptIndex:
    """The known prompts, for finding the nearest ones to any text: IDF-weighted term overlap.

    Each prompt is a set of terms (:func:`prompt_terms`); a term is weighted by its inverse
    document frequency, ``ln(1 + N / df)`` over the ``N`` known prompts (a term in every prompt,
    such as "the", weighs least; a term no known prompt has weighs as the rarest). The score of a
    known prompt is the cosine of the two weighted sets: shared weight squared over the product of
    the two norms, in [0, 1]. A known prompt is suggested only if it shares a term that tells
    prompts apart (one held by at most half of them, or by one): "Write a poem" shares only "a"
    with the cases, and gets no suggestion. Deterministic: terms are summed in sorted order, and
    ties keep the order the prompts were given in.

    Args:
        prompts: ``(case id or None, prompt)`` pairs, in the order ties are broken.
    """

    def __init__(self, prompts: Iterable[tuple[str | None, str]]):
        self.entries = [
            (case_id, normalize_prompt(prompt), prompt_terms(prompt)) for case_id, prompt in prompts
        ]
        count = len(self.entries)
        df = Counter(term for _, _, terms in self.entries for term in terms)
        self.idf = {term: math.log(1 + count / n) for term, n in df.items()}
        self.unknown_idf = math.log(1 + count) if count else 1.0
        self.telling = frozenset(t for t, n in df.items() if n <= max(1, count / 2))
        self.norms = [
            math.sqrt(sum(self.idf[t] ** 2 for t in sorted(terms))) for _, _, terms in self.entries
        ]

    def nearest(self, text: str, k: int = SUGGESTIONS) -> list[Suggestion]:
        """The ``k`` known prompts nearest to ``text``, best first; only those that share a
        term telling prompts apart with it.

        Args:
            text: any text (untrusted); only its first :data:`SUGGEST_READ_CHARS` characters are
                read, so time and memory are bounded whatever its length.
            k: the most suggestions returned.

        Returns:
            At most ``k`` suggestions, scores in (0, 1], non-increasing.
        """
        query = sorted(prompt_terms(text))
        weights = [self.idf.get(t, self.unknown_idf) for t in query]
        query_norm = math.sqrt(sum(w * w for w in weights))
        if not query_norm:
            return []
        scored = []
        for i, (case_id, prompt, terms) in enumerate(self.entries):
            common = [(t, w) for t, w in zip(query, weights, strict=True) if t in terms]
            shared = sum(w * w for _, w in common)
            if any(t in self.telling for t, _ in common) and self.norms[i] > 0:
                score = min(1.0, shared / (query_norm * self.norms[i]))
                scored.append((-score, i, Suggestion(case_id, prompt, score)))
        scored.sort(key=lambda item: item[:2])
        return [suggestion for _, _, suggestion in scored[: max(0, k)]]


def no_plan_answer(suggestions: Iterable[Suggestion]) -> str:
    """The offline model's answer to a prompt it has no plan for (:data:`NO_PLAN_ANSWER`), naming
    ``suggestions`` (best first), or saying none of its prompts is near."""
    lines = [f"{n}. {s.line()}" for n, s in enumerate(suggestions, 1)]
    if lines:
        nearest = "\nThe nearest prompts I know, best first (send one as it is):\n" + "\n".join(
            lines
        )
    else:
        nearest = " None of the prompts I know is near yours."
    return NO_PLAN_ANSWER.format(nearest=nearest)


# -- the model ----------------------------------------------------------------------------------


class WireError(ValueError):
    """A request the API would reject (HTTP 400), with an OpenAI-style message."""

    code: str | None = None
    param: str | None = None


class ContextLengthExceeded(WireError):
    """The request is longer than the model's context window (OpenAI's 400
    ``context_length_exceeded``)."""

    code = "context_length_exceeded"
    param = "messages"


#: The context window of the offline model, in tokens, unless configured otherwise (the window of
#: OpenAI's gpt-4o and gpt-4o-mini).
DEFAULT_CONTEXT_WINDOW_TOKENS = OFFLINE_CONTEXT_WINDOW_TOKENS
#: The most completion tokens the offline model writes in one response, whatever a request asks
#: (gpt-4o's 16,384): a longer completion is cut, ``finish_reason: "length"``.
MAX_OUTPUT_TOKENS = OFFLINE_COMPLETION_LIMIT_TOKENS


def _check_pairing(messages: list[Mapping[str, Any]]) -> None:
    """Reject what the API rejects: a tool message that answers no pending tool call, or a
    tool call left without its tool message."""
    pending: set[str] = set()
    for i, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                raise WireError(
                    f"Invalid parameter: messages[{i}] with role 'tool' must be a response to a "
                    f"preceding message with 'tool_calls' (tool_call_id {call_id!r})."
                )
            pending.discard(call_id)
            continue
        if pending:
            raise WireError(
                "An assistant message with 'tool_calls' must be followed by tool messages "
                f"responding to each 'tool_call_id'. Missing: {', '.join(sorted(pending))}."
            )
        if role == "assistant":
            pending = {c.get("id") for c in message.get("tool_calls") or []}


def _search_query(arguments: Any) -> str | None:
    """The ``query`` of a ``tool_search`` call's arguments (JSON text), if it has one."""
    try:
        query = json.loads(arguments or "{}").get("query")
    except (ValueError, AttributeError):
        return None
    return query if isinstance(query, str) else None


class OfflineModel:
    """The offline reference model: plans by prompt, answering chat-completions requests.

    Args:
        plans: ``{prompt: plan}``; default: every ``offline_plan`` of the shipped cases
            (``data/cases/``, the large ones included).
        case_ids: ``{prompt: case id}``, the ids its suggestions name; default: the cases' ids
            when ``plans`` is the default, else none.
        name: the model name it reports when a request names none.
        context_window_tokens: the longest request it takes (messages plus tool schemas, in
            o200k_base tokens); a longer one is refused as OpenAI refuses it: HTTP 400,
            ``context_length_exceeded``.
        max_output_tokens: the most completion tokens one response holds (o200k_base tokens),
            whatever a request asks; a longer completion is cut, ``finish_reason: "length"``.
    """

    def __init__(
        self,
        plans: Mapping[str, Plan] | None = None,
        *,
        case_ids: Mapping[str, str] | None = None,
        name: str = OFFLINE_MODEL_NAME,
        context_window_tokens: int = DEFAULT_CONTEXT_WINDOW_TOKENS,
        max_output_tokens: int = MAX_OUTPUT_TOKENS,
    ):
        if plans is None:
            from helpers.cases.case_files import ALL_CASES, load_cases

            cases = [case for case in load_cases(ALL_CASES) if case.offline_plan]
            plans = {case.prompt: case.offline_plan or [] for case in cases}
            if case_ids is None:
                case_ids = {case.prompt: case.id for case in cases}
        #: ``{prompt, whitespace normalised: plan}``: the prompts it answers, exactly these.
        self.plans = {normalize_prompt(p): check_plan(plan) for p, plan in plans.items()}
        #: ``{prompt, whitespace normalised: case id}``.
        self.case_ids = {normalize_prompt(p): i for p, i in (case_ids or {}).items()}
        self.name = name
        self.context_window_tokens = context_window_tokens
        self.max_output_tokens = max_output_tokens
        self._index: tuple[tuple[Any, ...], PromptIndex] | None = None

    def add_plan(self, prompt: str, plan: Plan, case_id: str | None = None) -> None:
        """Teach the model one more prompt (``case_id``: the id its suggestions name)."""
        key = normalize_prompt(prompt)
        self.plans[key] = check_plan(plan)
        if case_id is not None:
            self.case_ids[key] = case_id

    def plan_for(self, prompt: str) -> Plan | None:
        """The plan the model carries out for ``prompt`` (matched word for word after whitespace
        is normalised), or ``None``: then it answers :func:`no_plan_answer`."""
        return self.plans.get(normalize_prompt(prompt))

    def nearest(self, prompt: str, k: int = SUGGESTIONS) -> list[Suggestion]:
        """The ``k`` prompts it knows nearest to ``prompt``, best first
        (:meth:`PromptIndex.nearest`: bounded in time and memory whatever the prompt)."""
        key = (tuple(self.plans), tuple(self.case_ids.items()))
        if self._index is None or self._index[0] != key:
            index = PromptIndex((self.case_ids.get(p), p) for p in self.plans)
            self._index = (key, index)
        return self._index[1].nearest(prompt, k)

    def next_message(
        self,
        messages: list[Mapping[str, Any]],
        persona: Persona = IDEAL,
        tools: Iterable[str] = (),
    ) -> dict[str, Any]:
        """The assistant message the plan calls for next, given the conversation so far and the
        names of the ``tools`` the request offers."""
        last_user = max(
            (i for i, m in enumerate(messages) if m.get("role") == "user"), default=None
        )
        if last_user is None:
            return persona.reply({"role": "assistant", "content": "Please ask me something."})
        prompt = messages[last_user].get("content")
        if isinstance(prompt, list):
            prompt = " ".join(str(p.get("text", "")) for p in prompt if isinstance(p, dict))
        prompt = str(prompt or "")
        plan = self.plan_for(prompt)
        if plan is None:
            answer = no_plan_answer(self.nearest(prompt))
            return persona.reply({"role": "assistant", "content": answer})
        tool_results = {
            m.get("tool_call_id"): str(m.get("content") or "")
            for m in messages[last_user:]
            if m.get("role") == "tool"
        }
        tools = frozenset(tools)
        searched = {
            _search_query(call["function"].get("arguments"))
            for message in messages[last_user + 1 :]
            for call in message.get("tool_calls") or []
            if call["function"]["name"] == TOOL_SEARCH_NAME
        }
        steps = interpret(plan, persona, tools)
        try:
            wanted = next(steps)
            for message in messages[last_user + 1 :]:
                for call in message.get("tool_calls") or []:
                    name = call["function"]["name"]
                    if name == TOOL_SEARCH_NAME:  # loading a tool is not a step of the plan
                        continue
                    if name != wanted.name:
                        return {
                            "role": "assistant",
                            "content": f"The offline reference model lost its place: its plan "
                            f"called {wanted.name} but the conversation shows {name}.",
                        }
                    call_id = call["id"]
                    wanted = steps.send(classify(call_id, tool_results.get(call_id, "")))
        except StopIteration as done:
            return persona.reply({"role": "assistant", "content": str(done.value)})
        query = wanted.name.replace("_", " ")
        if wanted.name not in tools and TOOL_SEARCH_NAME in tools and query not in searched:
            # the tool the plan needs is not offered: load it first, by what it does (once: a
            # tool search cannot load, e.g. one a mode withholds, is then called all the same)
            wanted = Call(TOOL_SEARCH_NAME, {"query": query})
        arguments = json.dumps(wanted.arguments, ensure_ascii=False)
        call_id = persona.tool_call_id()
        return persona.reply(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": wanted.name, "arguments": arguments},
                    }
                ],
            },
        )

    def complete(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Answer a ``/chat/completions`` request body with a ``chat.completion`` object.

        The requested model name chooses the persona (:mod:`helpers.models.personas`):
        ``offline-reference:<persona>``; any other name is the ideal model.

        Raises:
            WireError: the request is malformed, breaks tool-call pairing, names an unknown
                persona, or (persona ``deepseek-thinking``) sends back an assistant message with
                tool calls but without its ``reasoning_content`` (HTTP 400, as DeepSeek does).
        """
        messages = request.get("messages")
        if not isinstance(messages, list) or not messages:
            raise WireError("'messages' must be a non-empty array")
        if request.get("stream"):
            raise WireError("the offline reference model does not stream; send stream=false")
        try:
            persona = persona_for_model(request.get("model"))
        except UnknownPersonaError as exc:
            raise WireError(str(exc)) from None
        _check_pairing(messages)
        refused = persona.refusal(messages)
        if refused is not None:
            raise WireError(refused)
        tools = request.get("tools") or []
        prompt_tokens = count_chat_tokens(messages, tools)
        if prompt_tokens > self.context_window_tokens:
            raise ContextLengthExceeded(
                f"This model's maximum context length is {self.context_window_tokens} tokens. "
                f"However, your messages resulted in {prompt_tokens} tokens. Please reduce the "
                "length of the messages."
            )
        names = [t.get("function", {}).get("name", "") for t in tools if isinstance(t, dict)]
        message = self.next_message(messages, persona, names)
        asked = _completion_limit(request)
        limit = self.max_output_tokens if asked is None else min(asked, self.max_output_tokens)
        completion_tokens, cut = _fit(message, limit)
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        _log_usage(prompt_tokens, completion_tokens)
        return {
            "id": "chatcmpl-" + secrets.token_hex(12),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model") or self.name,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "length" if cut else finish,
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def respond(self, method: str, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
        """One HTTP exchange: ``(status, JSON body)`` for ``method path`` with ``body``."""
        path = path.split("?", 1)[0].rstrip("/")
        if method == "GET" and path.endswith("/models"):
            return 200, {"object": "list", "data": [{"id": self.name, "object": "model"}]}
        if method != "POST" or not path.endswith("/chat/completions"):
            return 404, api_error(f"no route for {method} {path}", "not_found_error")
        try:
            request = json.loads(body or b"{}")
            if not isinstance(request, dict):
                raise WireError("the request body must be a JSON object")
            return 200, self.complete(request)
        except WireError as exc:
            return 400, api_error(str(exc), "invalid_request_error", exc.code, exc.param)
        except ValueError as exc:  # PlanError and bad JSON alike
            return 400, api_error(str(exc), "invalid_request_error")


#: Set to a file path, every answer's usage is appended there as one JSON line (the instructor
#: guide measures what each notebook costs this way).
USAGE_LOG_ENV = "WORKBOOK_USAGE_LOG"


def _completion_limit(request: Mapping[str, Any]) -> int | None:
    """The completion limit a request carries, in tokens (``max_completion_tokens``, else the
    older ``max_tokens``, as OpenAI reads them), or ``None``.

    Raises:
        WireError: the limit is not a whole number of at least 1 (OpenAI's HTTP 400).
    """
    for key in ("max_completion_tokens", "max_tokens"):
        value = request.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise WireError(f"{key} must be an integer of at least 1, not {value!r}")
        return value
    return None


def _fit(message: dict[str, Any], limit: int | None) -> tuple[int, bool]:
    """Cut ``message`` in place to ``limit`` completion tokens, as a provider stops at the
    limit: reasoning, then content, then each tool call's name and arguments, in the order they
    are written; what does not fit is cut or dropped. Returns ``(completion tokens, cut)``."""
    budget = limit if limit is not None else -1
    used = 0
    cut = False

    def take(text: str) -> str:
        nonlocal used, cut
        tokens = encode(text)
        if budget < 0 or used + len(tokens) <= budget:
            used += len(tokens)
            return text
        head = tokens[: max(0, budget - used)]
        used += len(head)
        cut = True
        return encoding().decode(head)

    for key in ("reasoning_content", "content"):
        if message.get(key):
            message[key] = take(message[key])
    kept = []
    for call in message.get("tool_calls") or []:
        if cut:
            break
        function = call["function"]
        name_tokens = count_tokens(function["name"])
        if budget >= 0 and used + name_tokens > budget:
            cut = True
            break
        used += name_tokens
        function["arguments"] = take(function["arguments"])
        kept.append(call)
    if kept:
        message["tool_calls"] = kept
    else:
        message.pop("tool_calls", None)
    return used, cut


def _log_usage(prompt_tokens: int, completion_tokens: int) -> None:
    path = os.environ.get(USAGE_LOG_ENV)
    if not path:
        return
    line = json.dumps({"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens})
    with open(path, "a", encoding="utf-8") as log:
        log.write(line + "\n")


def api_error(
    message: str, kind: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    """An error body in OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}``
    (platform.openai.com/docs/guides/error-codes)."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


# -- plugging it into the openai client ---------------------------------------------------------


def offline_transport(model: OfflineModel | None = None) -> httpx2.MockTransport:
    """An ``httpx2`` transport that answers every request from ``model`` in-process (the
    plumbing every fake provider shares: :func:`helpers.models.loopback.mock_transport`)."""
    model = model or OfflineModel()

    def respond(request: Request) -> Reply:
        status, payload = model.respond(request.method, request.path, request.body)
        return Reply(payload, status=status)

    return mock_transport(respond)


def offline_client(model: OfflineModel | None = None, *, max_retries: int = 0) -> openai.OpenAI:
    """A real ``openai.OpenAI`` client whose requests go to the offline model, in-process."""
    return openai.OpenAI(
        base_url=OFFLINE_BASE_URL,
        api_key="offline-no-key-needed",
        max_retries=max_retries,
        http_client=httpx2.Client(transport=offline_transport(model)),
    )
