"""One agent turn: the OpenAI chat-completions tool loop, with a result policy.

The loop reads like the one notebook 01 builds, one named phase per step:

1. :func:`_ask_model`: send the messages and tool schemas; read the reply as real providers send
   it (:mod:`helpers.replies`), or end the turn with a clear ``error``;
2. :func:`_name_tool_calls`: give every tool call an id of the client's own, unique in the thread
   (providers repeat ids, send ``"0"`` every time, or none at all; the provider's is kept for
   reference);
3. :func:`_assistant_message`: echo the assistant message with those ids and with the provider's
   reasoning fields, which thinking-mode providers require back;
4. no tool calls: :func:`_verdict` decides ``ok`` or ``incomplete`` and the turn ends;
5. else :func:`dispatch` each call and append one ``tool`` message per call, then repeat, until
   ``max_iterations`` model calls have been made.

Each dispatch follows one path, tool → policy → store → messages:

1. parse the JSON arguments the model sent;
2. find the tool among those offered to the model so far in this turn (a tool tool search
   never offered nor loaded does not run, even when the model knows its name);
3. ``policy.prepare_arguments``: the guards (:mod:`helpers.guards`) and unboxing (box strategy);
4. run the tool with checked arguments;
5. log the full output to the store (when there is one);
6. ``policy.present``: the full result, a preview, or a reference;
7. append the ``tool`` message.

Anything that goes wrong in 1-4 (malformed JSON, unknown tool, refused reference, bad
arguments, the tool raising) becomes a JSON error tool result, ``{"error": "..."}``, and the turn
goes on: the model reads the error and can try again.

With a store, every message of the turn is also appended to the thread's conversation
(:meth:`ToolOutputStore.append_message`), so a later process can continue the thread
(:func:`helpers.loop.threads.load_history`).

:func:`run_turn` returns a :class:`TurnRecord` and never raises for anything an endpoint or a
model sends: every model call with its ``usage``, every tool call with the arguments as the model
sent them and the result as the model saw it, the answer, and a ``status``:

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
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import openai
from sqlalchemy.exc import SQLAlchemyError

from helpers import ids
from helpers.completion_limit import (
    MIN_COMPLETION_TOKENS,
    CompletionBudget,
    budget_for,
    read_refusal,
)
from helpers.context.boxing import canonicalize_references, presented_reference_id
from helpers.context.compaction import (
    DEFAULT_KEEP_LAST_CALLS,
    DEFAULT_THRESHOLD_TOKENS,
    CompactionRules,
    categorizer,
    compact,
    model_summarizer,
)
from helpers.context.policies import ResultPolicy
from helpers.context.read_back import ResultKind
from helpers.guards import GuardRefusal
from helpers.limits import TurnLimits
from helpers.providers import CALL_HEX, ModelRule, ProviderProfile, profile_of
from helpers.redaction import configured_secrets, endpoint_shown, redact
from helpers.replies import (
    FIELDS_FROM,
    ProviderError,
    Reply,
    error_message,
    error_rule,
    for_endpoint,
    has_unpaired_surrogate,
    is_context_overflow,
    map_strings,
    parse_reply,
    tool_call_as_text,
    valid_text,
)
from helpers.tokens import count_chat_tokens, count_tokens
from helpers.tooling.registry import (
    OfferedTools,
    Tool,
    ToolArgumentError,
    ToolContext,
    ToolRegistry,
    UnknownToolError,
)
from helpers.tooling.store import (
    DuplicateToolCallError,
    StoreQuotaExceeded,
    ToolOutput,
    ToolOutputStore,
)

DEFAULT_MAX_ITERATIONS = 8
#: Turn statuses (see the module docstring).
STATUSES = ("ok", "incomplete", "max_iterations", "context_exceeded", "error")


@dataclass(frozen=True)
class CompactionSettings:
    """When and how much to compact: past ``threshold_tokens``, keep the last ``keep_last``
    tool calls whole."""

    threshold_tokens: int = DEFAULT_THRESHOLD_TOKENS
    keep_last: int = DEFAULT_KEEP_LAST_CALLS
    model_summary: bool = False  # let the model write the summary (through the same client)
    rules: CompactionRules | None = None  # how calls are categorised, summarised and cut


#: The longest arguments JSON text a tool call may carry, in characters; longer is refused
#: (large values should travel as references).
MAX_ARGUMENTS_CHARS = 1_000_000


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
    the guards (:data:`helpers.guards.GUARDS`) that repaired or refused this call.
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
    #: (a completion limit a provider refused, :mod:`helpers.completion_limit`), in words
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


def _shown_references(history: list[dict[str, Any]]) -> set[str]:
    """Reference ids the model was shown in the tool messages of ``history``."""
    return {
        ref
        for m in history
        if m.get("role") == "tool" and (ref := presented_reference_id(str(m.get("content") or "")))
    }


def new_thread_id() -> str:
    """A fresh, unguessable thread id: ``thread_<16 hex>``."""
    return "thread_" + ids.token_hex(8)


def new_tool_call_id() -> str:
    """A fresh tool-call id of the client's own: ``call_<24 hex>`` (29 characters, within the
    40 that OpenAI accepts and the ``[A-Za-z0-9_-]`` that stricter providers require; Mistral's
    stricter form is :data:`helpers.providers.ALPHANUMERIC_9`)."""
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

_NO_KEY = ("", "not-needed", "offline-no-key-needed", "none")


class _TurnFailed(Exception):
    """The turn cannot go on; the message is for the user (the turn ends with ``status``)."""

    def __init__(self, message: str, status: str = "error"):
        super().__init__(message)
        self.status = status


@dataclass
class _ToolCall:
    """A tool call of one reply, named with the client's own id."""

    id: str
    provider_id: str | None
    name: str
    arguments: str
    provider_fields: dict[str, Any] = field(default_factory=dict)


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
    limits: TurnLimits | None = None,
    provider_profile: ProviderProfile | None = None,
) -> TurnRecord:
    """Run one agent turn for ``prompt`` and return its :class:`TurnRecord`.

    Args:
        prompt: the user message.
        client: an ``openai.OpenAI`` client (a real endpoint or the offline reference model).
        model: the model name to request.
        policy: what the model sees of tool results (:func:`helpers.context.strategies.build_policy`).
        registry: the real tools; the policy's internal tools are added to them.
        store: where every dispatch and every message is logged; required by ``truncate`` and
            ``box``.
        thread_id: the conversation id; a new one if ``None``. Reusing a thread keeps its
            references resolvable across turns and process restarts.
        max_iterations: the most model calls in this turn.
        few_shot: include the policy's few-shot examples in the system message.
        system: a system message to use instead of the policy's.
        history: earlier messages of the thread (after the system message), if any; to continue
            a stored thread, pass :func:`helpers.loop.threads.load_history`.
        temperature: sampling temperature, if the model takes one.
        on_event: called with each :data:`TurnEvent` as the turn progresses (for live display).
        compaction: if given, before each model call the history is compacted when the context
            passes ``compaction.threshold_tokens`` (:mod:`helpers.context.compaction`); each time is noted
            in ``record.compactions`` and the summary message marks the place in the transcript.
        limits: the caps on tool calls and stored bytes (:class:`helpers.limits.TurnLimits`;
            default: its defaults). A call past a cap gets an error result and the turn goes on.
        provider_profile: the endpoint's rules (:mod:`helpers.providers`: the form of
            tool-call ids, the provider fields that go back, the completion limit every request
            carries); default: the one the client was made with (``make_client`` remembers the
            ``.env`` choice), else found from its base URL (:func:`helpers.providers.profile_of`).

    Returns:
        The record; ``status`` is one of :data:`STATUSES` (see the module docstring). Tool
        outputs logged before a failure stay in the store; rerunning the turn in the same thread
        can still resolve them.

    Raises:
        ValueError: the policy needs a store and none was given.
    """
    agent = Agent(client, model, policy, registry, store, provider_profile)
    config = RunConfig(
        max_iterations=max_iterations,
        few_shot=few_shot,
        system=system,
        temperature=temperature,
        compaction=compaction,
        limits=limits or TurnLimits(),
    )
    return agent.run(prompt, thread_id=thread_id, history=history, config=config, on_event=on_event)


@dataclass(frozen=True)
class RunConfig:
    """How one turn runs, apart from what the agent is (:class:`Agent`): the most model calls
    (``max_iterations``), the system message (the policy's, with its few-shot examples if
    ``few_shot``, unless ``system`` replaces it), the sampling ``temperature`` (``None``: the
    provider's default), history ``compaction`` (``None``: none) and the caps on tool calls and
    stored bytes (``limits``). Each field is as :func:`run_turn` documents it."""

    max_iterations: int = DEFAULT_MAX_ITERATIONS
    few_shot: bool = True
    system: str | None = None
    temperature: float | None = None
    compaction: CompactionSettings | None = None
    limits: TurnLimits = field(default_factory=TurnLimits)


@dataclass
class Agent:
    """What is built once and runs many turns: the ``client`` and ``model`` it asks, the
    ``policy`` that decides what the model sees of tool results, the real tools
    (``registry``), the ``store`` every dispatch and message is logged to, and the endpoint's
    rules (``provider_profile``; default: the client's, :func:`helpers.providers.profile_of`).

    ``agent.run(prompt)`` is one turn (:func:`run_turn` builds an agent for one turn).

    Raises:
        ValueError: the policy needs a store and none was given.
    """

    client: openai.OpenAI
    model: str
    policy: ResultPolicy
    registry: ToolRegistry
    store: ToolOutputStore | None = None
    provider_profile: ProviderProfile | None = None

    def __post_init__(self) -> None:
        if self.policy.needs_store and self.store is None:
            raise ValueError(f"the {self.policy.name} strategy needs a ToolOutputStore")
        if self.provider_profile is None:
            self.provider_profile = profile_of(self.client)

    @property
    def profile(self) -> ProviderProfile:
        """The endpoint's rules (set by ``__post_init__``, never ``None`` after it)."""
        assert self.provider_profile is not None
        return self.provider_profile

    def run(
        self,
        prompt: str,
        *,
        thread_id: str | None = None,
        history: list[dict[str, Any]] | None = None,
        config: RunConfig | None = None,
        on_event: EventHook | None = None,
    ) -> TurnRecord:
        """One turn for ``prompt`` in ``thread_id`` (a new thread if ``None``), after the
        thread's earlier ``history`` (:func:`helpers.loop.threads.load_history`), run as
        ``config`` says; ``on_event`` sees each :data:`TurnEvent`. Returns the record, whose
        ``status`` is one of :data:`STATUSES`: every failure ends in a verdict, not a raise."""
        config = config or RunConfig()
        turn = _Turn.start(
            self,
            prompt,
            config=config,
            thread_id=thread_id or new_thread_id(),
            history=history or [],
            emit=on_event or (lambda _event: None),
        )
        return turn.run(config.max_iterations)


@dataclass
class _Turn:
    """One turn in progress: what the phases of :func:`run_turn` share, and the phases."""

    agent: Agent
    config: RunConfig
    tools: ToolRegistry  # every tool offered so far in this turn: all a call may run
    ctx: ToolContext
    record: TurnRecord
    secrets: list[str]
    emit: EventHook
    used_ids: set[str] = field(default_factory=set)
    provider_ids_seen: set[str] = field(default_factory=set)
    calls_run: int = 0  # tool calls dispatched in this turn (for TurnLimits)
    last_calls: tuple[tuple[str, str], ...] = ()  # the previous reply's calls, canonical
    identical_replies: int = 0  # replies in a row with exactly those calls

    @classmethod
    def start(
        cls,
        agent: Agent,
        prompt: str,
        *,
        config: RunConfig,
        thread_id: str,
        history: list[dict[str, Any]],
        emit: EventHook,
    ) -> _Turn:
        """The system message, the history (secrets redacted) and an empty record."""
        policy, registry = agent.policy, agent.registry
        secrets_to_hide = [
            *configured_secrets(),
            *[k for k in [getattr(agent.client, "api_key", None)] if k and k not in _NO_KEY],
        ]
        ctx = ToolContext(
            store=agent.store,
            thread_id=thread_id,
            secrets=tuple(secrets_to_hide),
            limits=config.limits,
            prompt=prompt,
        )
        ctx.shown_references.update(_shown_references(history))
        system = config.system or policy.instructions(few_shot=config.few_shot)
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system},
            # a secret configured after an earlier turn was stored still never goes to the model
            *(map_strings(m, lambda text: redact(text, secrets_to_hide)) for m in history),
        ]
        record = TurnRecord(
            model=agent.model,
            strategy=policy.name,
            boxing=policy.boxing,
            thread_id=thread_id,
            prompt=prompt,
            messages=messages,
            tool_schemas=registry.merged(policy.tools_for(ctx)).schemas(),
            history_messages=len(history),
            box_threshold_chars=policy.box_threshold_chars(),
            box_rule=policy.box_rule(),
        )
        return cls(
            agent=agent,
            config=config,
            tools=OfferedTools(registry.merged(policy.internal_tools())),  # by offer_tools
            ctx=ctx,
            record=record,
            secrets=secrets_to_hide,
            emit=emit,
        )

    @property
    def client(self) -> openai.OpenAI:
        return self.agent.client

    @property
    def model(self) -> str:
        return self.agent.model

    @property
    def policy(self) -> ResultPolicy:
        return self.agent.policy

    @property
    def registry(self) -> ToolRegistry:
        return self.agent.registry

    @property
    def store(self) -> ToolOutputStore | None:
        return self.agent.store

    def run(self, max_iterations: int) -> TurnRecord:
        """The loop of notebook 01: ask the model, run the tools it calls, until it answers (or
        ``max_iterations`` model calls pass); every failure ends in a verdict, not a raise."""
        try:
            self.add_user_message()
            for index in range(max_iterations):
                schemas = self.offer_tools()
                self.compact_if_due(schemas, index)
                reply, calls = self.ask_model(schemas, index)
                if not calls or reply.finish_reason == "content_filter":
                    return self.finish(reply, calls)
                fatal = self.run_tool_calls(calls, cut=reply.finish_reason == "length")
                if fatal:
                    return self.fail(f"the turn stopped: {fatal}")
        except _TurnFailed as exc:
            return self.fail(str(exc), exc.status)
        except SQLAlchemyError as exc:  # disk full, read-only, locked, corrupt: a verdict
            return self.fail(f"the turn stopped: {_store_failure(exc)}")
        except Exception as exc:  # a bug: a verdict, never a traceback
            return self.fail(f"the turn stopped on an internal error: {type(exc).__name__}: {exc}")
        return self.out_of_iterations(max_iterations)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.record.messages

    def append(self, message: dict[str, Any]) -> None:
        """Add a message to the conversation and log it to the thread."""
        self.messages.append(message)
        if self.store is not None:
            self.store.append_message(self.record.thread_id, message)

    def add_user_message(self) -> None:
        """Open the thread (in the store) and add the prompt, secrets redacted."""
        if self.store is not None:
            self.store.ensure_thread(self.record.thread_id)
        self.used_ids = _ids_in(self.messages)
        self.provider_ids_seen = _provider_ids_in(self.store, self.record.thread_id)
        self.append({"role": "user", "content": redact(self.record.prompt, self.secrets)})

    def offer_tools(self) -> list[dict[str, Any]]:
        """The tool schemas for the next model call (a policy may offer its tools only once
        they are of use, and only the real tools a task names, with one that finds the rest:
        any tool it offers can be called)."""
        offered = self.policy.task_tools(self.registry, self.ctx)
        offered = offered.merged(self.policy.tools_for(self.ctx))
        for tool in offered:
            if tool.name not in self.tools or tool.internal:
                self.tools.add(tool)
        schemas = offered.schemas()
        self.record.tool_schemas = schemas
        self.record.schemas_per_call.append(schemas)
        return schemas

    def compact_if_due(self, schemas: list[dict[str, Any]], index: int) -> None:
        if self.config.compaction is not None:
            settings = self.config.compaction
            if settings.rules is None:  # the library's rules, knowing this registry's categories
                tools = self.registry.merged(self.policy.internal_tools())
                rules = CompactionRules(categorize=categorizer(tools))
                settings = replace(settings, rules=rules)
            _maybe_compact(
                self.messages,
                schemas,
                settings,
                self.client,
                self.model,
                index,
                self.record,
                self.emit,
            )

    def ask_model(self, schemas: list[dict[str, Any]], index: int) -> tuple[Reply, list[_ToolCall]]:
        """One model call: the reply (secrets redacted), its tool calls under the client's own
        ids, and the assistant message added to the conversation.

        Raises:
            _TurnFailed: the endpoint failed or sent no usable reply.
        """
        started = time.perf_counter()
        sent = self.policy.messages_for_call(self.messages)
        budget = budget_for(
            self.client, self.model, lambda: CompletionBudget.start(self.agent.profile, self.model)
        )
        try:
            reply = _ask_model(
                self.client,
                self.model,
                sent,
                schemas,
                self.config.temperature,
                self.agent.profile,
                budget,
            )
        finally:  # what the budget learned is said once, in the turn that learned it
            self.record.notices += budget.notes
            budget.notes.clear()
        if self.secrets:  # a key the model repeats goes no further: not to a tool either
            reply = reply.map_text(lambda text: redact(text, self.secrets))
        new_id = self.agent.profile.ids_for(self.model).make
        calls = _name_tool_calls(reply, self.used_ids, self.provider_ids_seen, self.record, new_id)
        call_record = _model_call_record(reply, calls, sent, schemas, index, started)
        if reply.prompt_tokens is not None and _prompt_cut(reply.prompt_tokens, sent, schemas):
            self.record.guard_events.append("prompt_cut_by_server")
        self.record.model_calls.append(call_record)
        self.emit(call_record)
        endpoint = str(getattr(self.client, "base_url", "") or "").rstrip("/")
        self.append(_assistant_message(reply, calls, self.record, endpoint))
        return reply, calls

    def repeated(self, calls: list[_ToolCall]) -> str | None:
        """Why ``calls`` must not run because the model keeps making exactly these calls
        (:attr:`helpers.limits.TurnLimits.max_identical_replies` replies in a row), or ``None``."""
        signature = tuple((c.name, _canonical_arguments(c.arguments)) for c in calls)
        same = signature == self.last_calls
        self.identical_replies = self.identical_replies + 1 if same else 1
        self.last_calls = signature
        cap = self.ctx.limits.max_identical_replies
        if cap is None or self.identical_replies < cap:
            return None
        names = ", ".join(dict.fromkeys(c.name for c in calls))
        return (
            f"not run: {names} with the same arguments, {self.identical_replies} replies in a "
            "row; its result is above in the conversation. Use it, or answer with what you have."
        )

    def run_tool_calls(self, calls: list[_ToolCall], *, cut: bool = False) -> str | None:
        """Dispatch each call and add its result; returns why the turn must stop, if it must.

        Raises:
            _TurnFailed: (``max_iterations``) the model repeats its calls, as below.

        A call past a cap of :class:`helpers.limits.TurnLimits` (per reply, per turn) is not
        run: its result is an error saying which cap, so the model can go on with fewer. The
        calls of a reply that repeats the previous ones too often are not run either, each
        answered with an error (so no call is left without its result), and the turn stops.
        In a reply ``cut`` at the output limit (``finish_reason`` ``length``), a call whose
        arguments are not whole JSON is not run, and its error says the reply was cut."""
        limits = self.ctx.limits
        repeated = self.repeated(calls)
        if repeated is not None:
            for call in calls:
                tool_record = self.unrun(call).refuse(repeated, guard="refused_repeated_calls")
                self.record.tool_calls.append(tool_record)
                self.append(
                    {"role": "tool", "tool_call_id": call.id, "content": tool_record.result}
                )
                self.emit(tool_record)
            likely = (
                "" if cut else " (a local server whose chat template drops tool results does this)"
            )
            raise _TurnFailed(
                f"the turn stopped: the model made the same tool calls "
                f"({', '.join(n for n, _ in self.last_calls)}) {self.identical_replies} replies "
                f"in a row without using their results{likely}",
                "max_iterations",
            )
        for index, call in enumerate(calls):
            over = _over_call_limit(limits, index, len(calls), self.calls_run)
            unrun = self.unrun(call)
            if over is not None:
                tool_record = unrun.refuse(over, guard="refused_over_limit")
            elif cut and not _parses(call.arguments):
                tool_record = unrun.refuse(
                    "not run: your reply stopped at your output limit (finish_reason 'length') "
                    f"inside the arguments of {call.name}, so they are cut. Write less in one "
                    "call: pass a long value by reference, or split the work."
                )
            else:
                self.calls_run += 1
                tool_record = dispatch(
                    call.id,
                    call.name,
                    call.arguments,
                    self.tools,
                    self.policy,
                    self.ctx,
                    provider_call_id=call.provider_id,
                )
            self.record.tool_calls.append(tool_record)
            self.append({"role": "tool", "tool_call_id": call.id, "content": tool_record.result})
            self.emit(tool_record)
            if tool_record.fatal:
                return tool_record.fatal
        return None

    def unrun(self, call: _ToolCall) -> _Call:
        """``call`` as a dispatch not started yet: what refusing it needs."""
        return _Call(
            call.id, call.name, call.arguments, call.provider_id, self.ctx, len(self.ctx.guards)
        )

    def finish(self, reply: Reply, calls: list[_ToolCall]) -> TurnRecord:
        """The model answered (or was filtered): the verdict."""
        setting = self.agent.profile.completion_limit_setting
        _verdict(self.record, reply, unrun_calls=len(calls), limit_setting=setting)
        self.emit(TurnEnded(self.record.status, self.record.answer))
        return self.record

    def fail(self, message: str, status: str = "error") -> TurnRecord:
        """End the turn without an answer. A turn that ran out of model calls after responses
        cut at the output limit inside tool calls is ``incomplete``: that limit decided it."""
        limit = output_limit_reason(self.record.model_calls)
        if limit and status == "max_iterations":
            status, message = "incomplete", f"{limit}; {message}"
        self.record.status, self.record.error = status, redact(message, self.secrets)
        self.emit(TurnEnded(self.record.status, self.record.error))
        return self.record

    def out_of_iterations(self, max_iterations: int) -> TurnRecord:
        """No answer within ``max_iterations`` model calls: the workbook's cap, named as such
        when the strategy stands for an agent with its own, higher limit."""
        own = self.policy.own_step_limit
        return self.fail(
            f"no final answer after {max_iterations} model calls"
            + (f" (stopped by the workbook's cap, not the agent: {own})" if own else ""),
            "max_iterations",
        )


# -- the phases of a turn -------------------------------------------------------------------


def _parses(arguments: str) -> bool:
    """Whether ``arguments`` is whole JSON (``""`` counts as no arguments)."""
    try:
        json.loads(arguments or "{}")
    except (ValueError, RecursionError):
        return False
    return True


def _canonical_arguments(arguments: str) -> str:
    """A call's arguments text with key order and spacing aside (the text itself if not JSON)."""
    try:
        return json.dumps(json.loads(arguments), sort_keys=True)
    except ValueError:
        return arguments


def _over_call_limit(limits: TurnLimits, index: int, in_reply: int, run: int) -> str | None:
    """Why call ``index`` of a reply of ``in_reply`` calls may not run (``run`` calls ran
    before it in the turn), or ``None``."""
    per_reply, per_turn = limits.max_tool_calls_per_reply, limits.max_tool_calls_per_turn
    if per_reply is not None and index >= per_reply:
        return (
            f"not run: this reply made {in_reply} tool calls, over the limit of {per_reply} per "
            f"reply; the first {per_reply} ran. Make at most {per_reply} calls at a time."
        )
    if per_turn is not None and run >= per_turn:
        return (
            f"not run: this turn has made {run} tool calls, the limit per turn. Answer with what "
            "you have."
        )
    return None


def _maybe_compact(
    messages: list[dict[str, Any]],
    schemas: list[dict[str, Any]],
    settings: CompactionSettings,
    client: openai.OpenAI,
    model: str,
    index: int,
    record: TurnRecord,
    emit: EventHook,
) -> None:
    done = compact(
        messages,
        tools=schemas,
        keep_last=settings.keep_last,
        threshold_tokens=settings.threshold_tokens,
        summarizer=model_summarizer(client, model) if settings.model_summary else None,
        rules=settings.rules,
    )
    if done.compacted:
        messages[:] = done.messages
        event = CompactionEvent(index, done.folded_calls, done.tokens_before, done.tokens_after)
        record.compactions.append(asdict(event))
        emit(event)


def _ask_model(
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
    the temperature (:func:`helpers.completion_limit.read_refusal`) is learned and the request
    sent again, once per kind of refusal.

    Raises:
        _TurnFailed: the endpoint failed or did not send a usable chat completion.
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
            reply = _send(client, model, sent, schemas, extra)
        except openai.APIStatusError as exc:
            extra, note = _after_refusal(exc, extra, budget, prompt_tokens, shown, model, refused)
            pending += [note] if note else []
            continue
        budget.notes.extend(pending)  # said once it worked
        return reply


#: What each kind of refusal (:attr:`helpers.completion_limit.LimitRefusal.kind`) refused.
_REFUSED = {
    "output": "completion limit",
    "window": "completion limit",
    "per_request": "completion limit",
    "field": "completion limit's field",
    "temperature": "temperature",
}


def _after_refusal(
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
    :func:`helpers.completion_limit.read_refusal` reads, of a kind not refused before in this
    call (``refused``, updated), and sending again would change what it refused.

    Raises:
        _TurnFailed: any other error, a second refusal, or one no change can help.
    """
    detail = _detail(exc)
    sent_tokens = next(v for k, v in extra.items() if k != "temperature")
    refusal = read_refusal(exc.status_code, f"{exc.code} {detail}", sent_tokens)
    if refusal is None:
        if _is_context_overflow(exc):
            raise _TurnFailed(
                f"the request is longer than the model's context window: {detail}",
                "context_exceeded",
            )
        raise _TurnFailed(_status_message(exc, shown, model, budget.prefix))
    if refusal.kind in refused:
        raise _TurnFailed(
            f"model call failed: the provider refused the {_REFUSED[refusal.kind]} again: "
            f"{detail} (set {budget.setting} to a number it accepts)"
        )
    refused.add(refusal.kind)
    learned = budget.learn(refusal, sent_tokens, prompt_tokens())
    if learned.prompt_too_long and refusal.kind == "per_request":
        raise _TurnFailed(
            f"model call failed: the prompt leaves fewer than {MIN_COMPLETION_TOKENS} of the "
            f"account's {refusal.tokens:,} tokens per request for the answer: shorten it (a "
            f"preview or boxing strategy) or use another tier ({detail})"
        )
    if learned.prompt_too_long:
        raise _TurnFailed(
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
        raise _TurnFailed(
            f"{_status_message(exc, shown, model, budget.prefix)} (the limit it names is the one "
            f"sent; set {budget.setting} to one it accepts)"
        )
    return again, learned.note


def _send(
    client: openai.OpenAI,
    model: str,
    sent: list[dict[str, Any]],
    schemas: list[dict[str, Any]],
    extra: dict[str, Any],
) -> Reply:
    """One request, as :func:`_ask_model` sends it.

    Raises:
        openai.APIStatusError: the endpoint answered with an HTTP error (after the SDK's
            retries).
        _TurnFailed: no answer, or one that is not a chat completion.
    """
    shown = endpoint_shown(str(getattr(client, "base_url", "") or ""))
    try:
        raw = client.chat.completions.with_raw_response.create(
            model=model, messages=sent, tools=schemas, **extra
        )
        response = raw.http_response
        return parse_reply(response.text, content_type=response.headers.get("content-type", ""))
    except ProviderError as exc:
        raise _TurnFailed(f"model call failed: {exc}") from None
    except openai.APIStatusError:
        raise
    except openai.APITimeoutError:
        raise _TurnFailed(
            f"model call failed: APITimeoutError: no answer from {shown} within the timeout "
            "(raise it with --timeout or <PROFILE>_TIMEOUT)"
        ) from None
    except openai.APIConnectionError as exc:
        cause = exc.__cause__ or exc
        raise _TurnFailed(
            f"model call failed: APIConnectionError: could not reach {shown} "
            f"({type(cause).__name__}: {cause})"
        ) from None
    except openai.OpenAIError as exc:
        raise _TurnFailed(f"model call failed: {type(exc).__name__}: {exc}") from None


#: What goes between a ``tool`` message and a ``user`` message for a provider that refuses a
#: user message right after tool results (:attr:`helpers.providers.ProviderProfile.user_after_tool`).
STOPPED_AFTER_TOOLS = "(The turn above stopped after its tool results, without an answer.)"


def _in_provider_order(
    messages: list[dict[str, Any]], user_after_tool: bool, rule: ModelRule | None
) -> list[dict[str, Any]]:
    """``messages`` as the provider takes them (the thread itself is unchanged): the
    instructions in the role the model's family reads them in (``developer`` for OpenAI's
    reasoning models, :class:`helpers.providers.ModelRule`), and, where the provider refuses a
    ``user`` message right after a ``tool`` message (Mistral), an assistant message saying the
    turn stopped between them (``user_after_tool`` false:
    :meth:`helpers.providers.ProviderProfile.user_after_tool_for`)."""
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


def _detail(exc: openai.APIStatusError) -> str:
    """The provider's own message of an HTTP error, on one line."""
    return error_message(exc.body) or exc.message


def _is_context_overflow(exc: openai.APIStatusError) -> bool:
    code = getattr(exc, "code", None)
    return is_context_overflow(exc.status_code, f"{code} {_detail(exc)}")


def _status_message(
    exc: openai.APIStatusError, base_url: str, model: str, prefix: str = "<NAME>"
) -> str:
    """The user's line for an HTTP error: the provider's own reason
    (:func:`helpers.replies.error_message`) and the hint that fits this error
    (:data:`helpers.replies.ERROR_RULES`, else one by status)."""
    detail = _detail(exc)
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


def _ids_in(messages: list[dict[str, Any]]) -> set[str]:
    return {
        str(c.get("id"))
        for m in messages
        for c in (m.get("tool_calls") or [])
        if isinstance(c, dict) and c.get("id")
    }


def _provider_ids_in(store: ToolOutputStore | None, thread_id: str) -> set[str]:
    if store is None:
        return set()
    return {r.provider_call_id for r in store.list_thread(thread_id) if r.provider_call_id}


def _name_tool_calls(
    reply: Reply,
    used_ids: set[str],
    provider_ids_seen: set[str],
    record: TurnRecord,
    new_id: Callable[[], str] = new_tool_call_id,
) -> list[_ToolCall]:
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
        calls.append(_ToolCall(call_id, provider_id, raw.name, raw.arguments, raw.provider_fields))
    return calls


#: A prompt shorter than this, in characters of message text and tool schemas, is never
#: called cut: the ratio below is noise on a few hundred characters.
PROMPT_CUT_MIN_CHARS = 8_000
#: More characters per reported prompt token than this means the server counted far fewer
#: tokens than it was sent: o200k_base averages about 4 characters a token in English and
#: fewer in code or JSON, so 12 leaves a wide margin.
PROMPT_CUT_CHARS_PER_TOKEN = 12


def _prompt_cut(prompt_tokens: int, messages: list[dict[str, Any]], schemas: list[Any]) -> bool:
    """Whether the server reports far fewer prompt tokens than it was sent: it cut the prompt
    to its window without an error, as Ollama does past ``num_ctx`` (ollama/ollama issue 8099,
    "ollama run silently truncating prompt"; its FAQ, "How can I specify the context window
    size?"). Measured in characters, so no tokenizer runs on every call."""
    sent_chars = sum(len(str(m.get("content") or "")) for m in messages) + len(json.dumps(schemas))
    return sent_chars >= PROMPT_CUT_MIN_CHARS and (
        prompt_tokens * PROMPT_CUT_CHARS_PER_TOKEN < sent_chars
    )


def _model_call_record(
    reply: Reply,
    calls: list[_ToolCall],
    messages: list[dict[str, Any]],
    schemas: list[dict[str, Any]],
    index: int,
    started: float,
) -> ModelCallRecord:
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


def _assistant_message(
    reply: Reply, calls: list[_ToolCall], record: TurnRecord, endpoint: str
) -> dict[str, Any]:
    """The assistant message as it goes back to the model: the client's ids, and the provider's
    fields unchanged (DeepSeek's thinking mode answers 400 without its reasoning, Gemini 3
    without each call's thought signature), marked with the ``endpoint`` that sent them so they
    go back to it and to no other (:func:`helpers.replies.for_endpoint`)."""
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


def _verdict(
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


# -- one tool call --------------------------------------------------------------------------


def _holds_unpaired_surrogate(value: Any) -> bool:
    found = False

    def check(text: str) -> str:
        nonlocal found
        found = found or has_unpaired_surrogate(text)
        return text

    map_strings(value, check)
    return found


def dispatch(
    tool_call_id: str,
    name: str,
    raw_arguments: str,
    tools: ToolRegistry,
    policy: ResultPolicy,
    ctx: ToolContext,
    *,
    provider_call_id: str | None = None,
) -> ToolCallRecord:
    """Run one tool call through the policy and the store; never raises (but for Ctrl-C).

    Args:
        tool_call_id: the call's id (the client's own when called by :func:`run_turn`).
        name: the tool the model named.
        raw_arguments: the arguments JSON text as the model sent it ("" means ``{}``).
        tools: the tools offered to the model (real and internal).
        policy: the result policy.
        ctx: the store, the thread, and the secrets to redact from outputs.
        provider_call_id: the provider's id for the call, stored for reference.

    Returns:
        A :class:`ToolCallRecord` whose ``result`` is what goes into the ``tool`` message. Bad
        input of any kind (malformed or too deep JSON, text that is not valid Unicode, unknown
        tools, refused references, wrong arguments), a tool that fails in any way (``SystemExit``
        included) and a broken store all end here as an error result; a store failure also sets
        ``fatal``, so the turn stops instead of going on without its outputs.

    Raises:
        KeyboardInterrupt: Ctrl-C still stops the turn.
    """
    call = _Call(tool_call_id, name, raw_arguments or "", provider_call_id, ctx, len(ctx.guards))
    try:
        return _dispatch(call, tools, policy)
    except KeyboardInterrupt:
        raise
    except SQLAlchemyError as exc:
        message = _store_failure(exc)
        record = call.refuse(f"{name}: {message}; nothing of this call was kept")
        record.fatal = message
        return record
    except BaseException as exc:  # a bug, MemoryError, RecursionError: an error result
        return call.refuse(f"{name} could not be dispatched: {type(exc).__name__}: {exc}")


def _store_failure(exc: BaseException) -> str:
    reason = " ".join(str(exc).split("\n")[0].split())[:300]
    return f"the tool-output store failed ({type(exc).__name__}: {reason})"


@dataclass
class _Call:
    """One dispatch in progress: what is needed to answer it with an error at any point."""

    id: str
    name: str
    raw_arguments: str
    provider_id: str | None
    ctx: ToolContext
    guards_before: int

    def guards(self) -> list[str]:
        fired = self.ctx.guards[self.guards_before :]
        del self.ctx.guards[self.guards_before :]
        return fired

    def refuse(
        self, message: str, *, ran: bool = False, guard: str | None = None
    ) -> ToolCallRecord:
        return ToolCallRecord(
            id=self.id,
            name=self.name,
            arguments=valid_text(self.raw_arguments),
            result=error_result(message),
            result_kind="error",
            error=message,
            ran=ran,
            provider_id=self.provider_id,
            guards=self.guards() + ([guard] if guard else []),
        )


#: The deepest nesting of lists and objects a tool call's arguments may have.
MAX_ARGUMENT_DEPTH = 32


def _depth(value: Any, limit: int) -> int:
    """Nesting depth of a JSON value, counted up to ``limit + 1`` (no deeper recursion)."""
    if limit < 0 or not isinstance(value, dict | list):
        return 0
    items = value.values() if isinstance(value, dict) else value
    return 1 + max((_depth(v, limit - 1) for v in items), default=0)


#: What a server that passes the Harmony format of gpt-oss through puts before a tool's name
#: (its recipient ``functions.<name>``; cubist38/mlx-openai-server pull request 51).
HARMONY_TOOL_PREFIX = "functions."


def _named_tool(tools: ToolRegistry, name: str, ctx: ToolContext) -> Tool:
    """The tool ``name`` names; ``functions.<tool>`` names ``<tool>`` when no tool has the
    whole name (guard ``tool_name_unprefixed``).

    Raises:
        UnknownToolError: no such tool (or not in this mode), with the model's name in it.
    """
    try:
        return tools.get(name)
    except UnknownToolError:
        bare = name.removeprefix(HARMONY_TOOL_PREFIX)
        if bare == name:
            raise
        try:
            tool = tools.get(bare)
        except UnknownToolError as exc:
            raise UnknownToolError(f"{exc} (read {name!r} as {bare!r})") from None
        ctx.guards.append("tool_name_unprefixed")
        return tool


def _unwrapped_arguments(arguments: Any, ctx: ToolContext) -> Any:
    """``arguments``, or the object inside when they came as a JSON string holding a JSON
    object (double-encoded, as Qwen2.5-7B-Instruct sends them: FoundationAgents/OpenManus pull
    request 989; guard ``arguments_double_encoded``). Only the whole arguments: a string value
    inside them stays a string."""
    if not isinstance(arguments, str):
        return arguments
    try:
        inner = json.loads(arguments)
    except (ValueError, RecursionError):
        return arguments
    if not isinstance(inner, dict):
        return arguments
    ctx.guards.append("arguments_double_encoded")
    return inner


def _dispatch(call: _Call, tools: ToolRegistry, policy: ResultPolicy) -> ToolCallRecord:
    """Run one tool call in phases, each of which may end it with an error result: read the
    arguments and find the tool, unbox and check them (the policy), run the tool, keep the
    output (the store), present it to the model (the policy)."""
    read = _read_call(call, tools)
    if isinstance(read, ToolCallRecord):
        return read
    tool, arguments = read
    name, refuse = tool.name, call.refuse
    try:
        tool.check_arguments(_shape_only(arguments))
        real_arguments = policy.prepare_arguments(call.ctx, tool, arguments)
        tool.check_arguments(real_arguments)
    except GuardRefusal as exc:
        return refuse(f"{name} was not run: {exc}", guard=exc.guard)
    except ToolArgumentError as exc:
        return refuse(f"{name} was not run: {exc}")
    try:
        output = tool.call(real_arguments, call.ctx)
    except KeyboardInterrupt:
        raise
    except GuardRefusal as exc:  # a resolve tool refusing its reference before doing anything
        return refuse(f"{name} was not run: {exc}", guard=exc.guard)
    except BaseException as exc:  # a tool's failure (SystemExit too) is the model's information
        return refuse(f"{name} failed: {type(exc).__name__}: {exc}", ran=True)
    # what the model and the store get: valid text, no configured secret in it
    output = redact(valid_text(output), call.ctx.secrets)
    row = _keep_output(call, tool, output)
    if isinstance(row, ToolCallRecord):
        return row
    presented = policy.present(call.ctx, tool, call.id, output, row)
    if row is not None and not output.endswith("\n"):  # the store hashed it already
        output_sha = output_trimmed = row.sha256
    else:
        output_sha, output_trimmed = ids.content_sha256_and_trimmed(output)
    received = {
        k: ids.content_sha256_and_trimmed(v)
        for k, v in real_arguments.items()
        if isinstance(v, str)
    }
    return ToolCallRecord(
        id=call.id,
        name=name,
        arguments=call.raw_arguments,
        result=presented.content,
        result_kind=presented.kind,
        output_chars=len(output),
        output_sha256=output_sha,
        received_sha256={k: full for k, (full, _) in received.items()},
        output_sha256_trimmed=output_trimmed,
        received_sha256_trimmed={k: trimmed for k, (_, trimmed) in received.items()},
        ran=True,
        provider_id=call.provider_id,
        guards=call.guards(),
    )


def _not_text(name: str) -> str:
    return (
        f"arguments for {name} hold text that is not valid Unicode (an unpaired surrogate such "
        "as \\ud83d, half of an emoji cut in two); nothing was run: send the arguments again "
        "as valid text"
    )


def _read_call(call: _Call, tools: ToolRegistry) -> tuple[Tool, dict[str, Any]] | ToolCallRecord:
    """The tool a call names and its arguments as a JSON object (a wrapping unwrapped), or the
    error result refusing it: text that is not valid Unicode, arguments too long or too deep,
    malformed JSON, an unknown tool, not an object, a ``tool_call_id`` already used."""
    ctx, name, refuse, raw = call.ctx, call.name, call.refuse, call.raw_arguments
    if has_unpaired_surrogate(raw):
        return refuse(_not_text(name))
    if len(raw) > MAX_ARGUMENTS_CHARS:
        return refuse(
            f"arguments for {name} are {len(raw):,} chars, over the limit of "
            f"{MAX_ARGUMENTS_CHARS:,}; pass large values by reference instead"
        )
    try:
        arguments = json.loads(raw or "{}")
    except ValueError as exc:
        return refuse(f"malformed JSON arguments for {name}: {exc}")
    except RecursionError:
        return refuse(f"arguments for {name} are nested too deeply to read")
    try:
        tool = _named_tool(tools, name, ctx)
    except UnknownToolError as exc:
        return refuse(str(exc))
    name = tool.name
    arguments = _unwrapped_arguments(arguments, ctx)
    if not isinstance(arguments, dict):
        return refuse(f"{name} takes a JSON object of arguments, got {type(arguments).__name__}")
    if _depth(arguments, MAX_ARGUMENT_DEPTH) > MAX_ARGUMENT_DEPTH:
        return refuse(f"arguments for {name} are nested more than {MAX_ARGUMENT_DEPTH} levels deep")
    if _holds_unpaired_surrogate(arguments):
        return refuse(_not_text(name))
    if ctx.store is not None and not tool.internal and ctx.store.get(ctx.thread_id, call.id):
        return refuse(f"tool_call_id {call.id!r} was already used in this thread")
    return tool, arguments


def _keep_output(call: _Call, tool: Tool, output: str) -> ToolOutput | ToolCallRecord | None:
    """Log a real tool's output to the store (``None``: an internal tool, or no store), or the
    error result saying why it was not kept: over the turn's or the thread's byte limit
    (:class:`helpers.limits.TurnLimits`), or a ``tool_call_id`` already stored."""
    ctx, name, refuse = call.ctx, tool.name, call.refuse
    if ctx.store is None or tool.internal:
        return None
    stored_bytes = len(output.encode("utf-8")) + len(call.raw_arguments.encode("utf-8"))
    turn_cap = ctx.limits.max_stored_bytes_per_turn
    if turn_cap is not None and ctx.stored_bytes + stored_bytes > turn_cap:
        return refuse(
            f"{name} ran, but its output was not kept: this turn has stored "
            f"{ctx.stored_bytes:,} bytes, and {stored_bytes:,} more would pass the limit of "
            f"{turn_cap:,} bytes per turn. Answer with what you have, or ask for less "
            "(a smaller query, one page at a time).",
            ran=True,
            guard="refused_over_limit",
        )
    try:
        row = ctx.store.log_tool(
            ctx.thread_id,
            call.id,
            name,
            call.raw_arguments,
            output,
            provider_call_id=call.provider_id,
            max_thread_bytes=ctx.limits.max_stored_bytes_per_thread,
        )
    except DuplicateToolCallError as exc:
        return refuse(str(exc), ran=True)
    except StoreQuotaExceeded as exc:
        return refuse(
            f"{name} ran, but {exc}. Start a new thread, or prune this one's outputs "
            "(workbook outputs prune --thread …).",
            ran=True,
            guard="refused_over_limit",
        )
    ctx.stored_bytes += stored_bytes
    return row


def _shape_only(arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments with every whole reference counted as the string it stands for, so their
    shape can be checked before anything is unboxed (a resource-link object is a string here)."""
    try:
        return canonicalize_references(arguments)
    except GuardRefusal:
        return arguments  # a malformed reference: the policy refuses it with its reason
