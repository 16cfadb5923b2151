"""One agent turn: the OpenAI chat-completions tool loop, with a result policy.

An :class:`Agent` is what is built once (the client and model it asks, the result policy, the
tools, the store); a :class:`RunConfig` is how one turn runs; :func:`run_turn` runs one turn of
an agent, and :meth:`Agent.run` does the same after a thread's earlier history. The loop reads
like the one notebook 01 builds, one named phase per step (:class:`_Turn`):

1. ``offer_tools``: the tool schemas for this model call (a policy may offer its tools only once
   they are of use);
2. ``compact_if_due``: with compaction, fold the history once the context passes its threshold;
3. ``ask_model``: one request to the model (:mod:`helpers.loop.model_call`), its tool calls named
   with ids of the client's own, and the assistant message echoed with them; an endpoint that
   fails ends the turn with a clear ``error``;
4. no tool calls: the verdict, ``ok`` or ``incomplete``, and the turn ends;
5. else ``run_tool_calls``: :func:`helpers.loop.dispatch.dispatch` each call (tool → policy →
   store) and append one ``tool`` message per call, then repeat, until ``max_iterations`` model
   calls have been made.

What the calls did (a reference shown, an output fetched, a tool loaded, bytes stored) is the
loop's own state, :class:`helpers.loop.turn_state.TurnState`: the policy and the tools return it,
the loop records it, and a policy reads it only as the loop passes it in.

With a store, every message of the turn is also appended to the thread's conversation
(:meth:`ToolOutputStore.append_message`), so a later process can continue the thread
(:func:`helpers.loop.threads.load_history`).

A turn returns a :class:`helpers.loop.records.TurnRecord` and never raises for anything an
endpoint or a model sends: its ``status`` is one of :data:`helpers.loop.records.STATUSES`
(their meanings: :mod:`helpers.loop.records`).
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import openai
from sqlalchemy.exc import SQLAlchemyError

from helpers.base.limits import (
    DEFAULT_KEEP_LAST_CALLS,
    DEFAULT_MAX_ITERATIONS,
    DEFAULT_THRESHOLD_TOKENS,
    TurnLimits,
)
from helpers.context.boxing import presented_reference_id
from helpers.context.compaction import (
    SUMMARY_COMPLETION_LIMIT_TOKENS,
    CompactionRules,
    categorizer,
    compact,
    model_summarizer,
)
from helpers.context.policies import ResultPolicy
from helpers.loop.dispatch import (
    CallInProgress,
    ProgramCalls,
    dispatch,
    store_failure_message,
)
from helpers.loop.model_call import (
    RequestedCall,
    assistant_message,
    judge_final_reply,
    name_tool_calls,
    prompt_cut_by_server,
    provider_ids_in_thread,
    record_of_reply,
    request_completion,
    tool_call_ids_in,
)
from helpers.loop.records import (
    CompactionEvent,
    EventHook,
    ToolCallRecord,
    TurnAborted,
    TurnEnded,
    TurnRecord,
    new_thread_id,
    output_limit_reason,
)
from helpers.loop.turn_state import TurnState
from helpers.models.completion_limit import CompletionBudget, budget_for
from helpers.models.providers import ProviderProfile, profile_of
from helpers.models.replies import Reply, map_strings
from helpers.store.tool_outputs import ToolOutputStore
from helpers.text.redaction import configured_secrets, redact
from helpers.tooling.registry import OfferedTools, ToolContext, ToolRegistry


@dataclass(frozen=True)
class CompactionSettings:
    """When and how much to compact: past ``threshold_tokens``, keep the last ``keep_last``
    tool calls whole."""

    threshold_tokens: int = DEFAULT_THRESHOLD_TOKENS
    keep_last: int = DEFAULT_KEEP_LAST_CALLS
    model_summary: bool = False  # let the model write the summary (through the same client)
    rules: CompactionRules | None = None  # how calls are categorised, summarised and cut


#: API keys that are no secret (the offline model's and local servers' placeholders).
_NO_KEY = ("", "not-needed", "offline-no-key-needed", "none")


@dataclass(frozen=True)
class RunConfig:
    """How one turn runs, apart from what the agent is (:class:`Agent`).

    Attributes:
        max_iterations: the most model calls in the turn.
        few_shot: include the policy's few-shot examples in the system message.
        system: a system message to use instead of the policy's.
        temperature: sampling temperature, if the model takes one (``None``: the provider's
            default).
        compaction: if given, before each model call the history is compacted when the context
            passes ``compaction.threshold_tokens`` (:mod:`helpers.context.compaction`); each time
            is noted in ``record.compactions`` and the summary message marks the place in the
            transcript. ``None``: no compaction.
        limits: the caps on tool calls and stored bytes (:class:`helpers.base.limits.TurnLimits`). A
            call past a cap gets an error result and the turn goes on.
    """

    max_iterations: int = DEFAULT_MAX_ITERATIONS
    few_shot: bool = True
    system: str | None = None
    temperature: float | None = None
    compaction: CompactionSettings | None = None
    limits: TurnLimits = field(default_factory=TurnLimits)


@dataclass
class Agent:
    """What is built once and runs many turns.

    Attributes:
        client: an ``openai.OpenAI`` client (a real endpoint or the offline reference model).
        model: the model name to request.
        policy: what the model sees of tool results
            (:func:`helpers.context.strategies.build_policy`).
        registry: the real tools; the policy's internal tools are added to them.
        store: where every dispatch and every message is logged; required by ``truncate`` and
            ``box``. Tool outputs logged before a failure stay in it: rerunning the turn in the
            same thread can still resolve them.
        provider_profile: the endpoint's rules (:mod:`helpers.models.providers`: the form of tool-call
            ids, the provider fields that go back, the completion limit every request carries);
            default: the one the client was made with (``make_client`` remembers the ``.env``
            choice), else found from its base URL (:func:`helpers.models.providers.profile_of`).

    ``agent.run(prompt)`` is one turn; :func:`run_turn` is the same without history.

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
        """One turn for ``prompt`` in ``thread_id`` (a new thread if ``None``; reusing a thread
        keeps its references resolvable across turns and process restarts), after the thread's
        earlier ``history`` (the messages after the system message; to continue a stored thread,
        :func:`helpers.loop.threads.load_history`), run as ``config`` says (default:
        ``RunConfig()``); ``on_event`` sees each :data:`helpers.loop.records.TurnEvent` as the
        turn goes (for live display). Returns the record, whose ``status`` is one of
        :data:`helpers.loop.records.STATUSES`: every failure ends in a verdict, not a raise."""
        config = config or RunConfig()
        turn = _Turn.start(
            self,
            prompt,
            config=config,
            thread_id=thread_id or new_thread_id(),
            history=history or [],
            emit=on_event or (lambda _event: None),
        )
        return turn.run_loop(config.max_iterations)


def run_turn(
    prompt: str,
    agent: Agent,
    config: RunConfig | None = None,
    *,
    thread_id: str | None = None,
    on_event: EventHook | None = None,
) -> TurnRecord:
    """Run one turn of ``agent`` for ``prompt`` and return its record: ``agent.run`` without
    history (a thread's history goes through :meth:`Agent.run`).

    Args:
        prompt: the user message.
        agent: what asks and what runs (:class:`Agent`: client, model, policy, tools, store).
        config: how the turn runs (:class:`RunConfig`: ``max_iterations``, ``few_shot``,
            ``system``, ``temperature``, ``compaction``, ``limits``); default ``RunConfig()``.
        thread_id: the conversation id; a new one if ``None``. Reusing a thread keeps its
            references resolvable across turns and process restarts.
        on_event: called with each :data:`helpers.loop.records.TurnEvent` as the turn
            progresses (for live display).

    Returns:
        The :class:`helpers.loop.records.TurnRecord`; ``status`` is one of
        :data:`helpers.loop.records.STATUSES`. It never raises for what an endpoint or a model
        sends.
    """
    return agent.run(prompt, thread_id=thread_id, config=config, on_event=on_event)


def _shown_references(history: list[dict[str, Any]]) -> set[str]:
    """Reference ids the model was shown in the tool messages of ``history``."""
    return {
        ref
        for m in history
        if m.get("role") == "tool" and (ref := presented_reference_id(str(m.get("content") or "")))
    }


def internal_error_message(exc: BaseException) -> str:
    """A turn's verdict for a bug: the exception and where it was raised (file and line), and,
    with ``WORKBOOK_DEBUG=1`` set, the whole traceback on standard error (docs/cli.md)."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    if os.environ.get("WORKBOOK_DEBUG"):
        traceback.print_exception(exc, file=sys.stderr)
    return f"the turn stopped on an internal error: {type(exc).__name__}: {exc}{where}"


@dataclass
class _Turn:
    """One turn in progress: what the phases of :meth:`Agent.run` share, and the phases."""

    agent: Agent
    config: RunConfig
    tools: ToolRegistry  # every tool offered so far in this turn: all a call may run
    ctx: ToolContext  # what its tools read (the store, the thread, the secrets, the caps)
    state: TurnState  # what its calls did so far: written here and in dispatch only
    record: TurnRecord
    secrets: list[str]
    emit: EventHook
    used_ids: set[str] = field(default_factory=set)
    provider_ids_seen: set[str] = field(default_factory=set)
    calls_run: int = 0  # tool calls dispatched in this turn, programs' too (for TurnLimits)
    program_calls: ProgramCalls | None = None  # runs the tool calls of programs (code mode)
    program_fatal: str | None = None  # a program's call found the store broken
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
        )
        state = TurnState(prompt=prompt, shown_references=_shown_references(history))
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
            tool_schemas=registry.merged(policy.tools_for(state.view())).schemas(),
            history_messages=len(history),
            box_threshold_chars=policy.box_threshold_chars(),
            box_rule=policy.box_rule(),
        )
        turn = cls(
            agent=agent,
            config=config,
            tools=OfferedTools(registry.merged(policy.internal_tools())),  # by offer_tools
            ctx=ctx,
            state=state,
            record=record,
            secrets=secrets_to_hide,
            emit=emit,
        )
        turn.program_calls = ProgramCalls(
            registry.merged(policy.internal_tools()),
            policy,
            ctx,
            state,
            admit=turn.admit_program_call,
            on_record=turn.add_program_call,
        )
        # the turn's calls and its programs' calls read one context, with the program host on it
        turn.ctx = turn.program_calls.ctx = replace(ctx, program_host=turn.program_calls)
        return turn

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

    def run_loop(self, max_iterations: int) -> TurnRecord:
        """The loop of notebook 01: ask the model, run the tools it calls, until it answers (or
        ``max_iterations`` model calls pass); every failure ends in a verdict, not a raise."""
        try:
            self.add_user_message()
            for index in range(max_iterations):
                schemas = self.offer_tools()
                self.compact_if_due(schemas, index)
                try:
                    reply, calls = self.ask_model(schemas, index)
                except TurnAborted as exc:  # too long for the window: fold, then once more
                    if exc.status != "context_exceeded" or not self.compact_if_due(
                        schemas, index, to_fit=True
                    ):
                        raise
                    reply, calls = self.ask_model(schemas, index)
                if not calls or reply.finish_reason == "content_filter":
                    return self.finish(reply, calls)
                fatal = self.run_tool_calls(calls, cut=reply.finish_reason == "length")
                if fatal:
                    return self.fail(f"the turn stopped: {fatal}")
        except TurnAborted as exc:
            return self.fail(str(exc), exc.status)
        except SQLAlchemyError as exc:  # disk full, read-only, locked, corrupt: a verdict
            return self.fail(f"the turn stopped: {store_failure_message(exc)}")
        except Exception as exc:  # a bug: a verdict naming where, never a traceback (unless asked)
            return self.fail(internal_error_message(exc))
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
        self.used_ids = tool_call_ids_in(self.messages)
        self.provider_ids_seen = provider_ids_in_thread(self.store, self.record.thread_id)
        self.append({"role": "user", "content": redact(self.record.prompt, self.secrets)})

    def offer_tools(self) -> list[dict[str, Any]]:
        """The tool schemas for the next model call (a policy may offer its tools only once
        they are of use, and only the real tools a task names, with one that finds the rest:
        any tool it offers can be called)."""
        turn = self.state.view()  # what the policy decides by, read-only
        offered = self.policy.task_tools(self.registry, turn).merged(self.policy.tools_for(turn))
        for tool in offered:
            if tool.name not in self.tools or tool.internal:
                self.tools.add(tool)
        schemas = offered.schemas()
        self.record.tool_schemas = schemas
        self.record.schemas_per_call.append(schemas)
        return schemas

    def compact_if_due(
        self, schemas: list[dict[str, Any]], index: int, *, to_fit: bool = False
    ) -> bool:
        """Before model call ``index``: with ``config.compaction``, fold the history when the
        context passes its threshold (:func:`helpers.context.compaction.compact`), noting each
        time in the record and as a :class:`CompactionEvent`; returns whether the context got
        shorter.

        ``to_fit``: the endpoint refused the request as longer than its context window
        (``context_exceeded``). Every tool call of the earlier turns is folded then, the last
        ``keep_last`` too, whatever the threshold; the current turn stays whole. A thread whose
        last turn overflowed goes on this way, rather than failing every later turn: what
        anthropics/claude-code#46348 asks of an agent whose prompt is too long."""
        settings = self.config.compaction
        if settings is None:
            return False
        if settings.rules is None:  # the library's rules, knowing this registry's categories
            tools = self.registry.merged(self.policy.internal_tools())
            settings = replace(settings, rules=CompactionRules(categorize=categorizer(tools)))
        summarizer = None
        if settings.model_summary:
            limit = self.agent.profile.with_completion_limit(SUMMARY_COMPLETION_LIMIT_TOKENS)
            summarizer = model_summarizer(
                self.client, self.model, completion_limit=limit.completion_limit()
            )
        done = compact(
            self.messages,
            tools=schemas,
            keep_last=0 if to_fit else settings.keep_last,
            threshold_tokens=settings.threshold_tokens,
            force=to_fit,
            summarizer=summarizer,
            rules=settings.rules,
        )
        if done.compacted:
            self.messages[:] = done.messages
            event = CompactionEvent(index, done.folded_calls, done.tokens_before, done.tokens_after)
            self.record.compactions.append(asdict(event))
            self.emit(event)
        return done.compacted and done.tokens_after < done.tokens_before

    def ask_model(
        self, schemas: list[dict[str, Any]], index: int
    ) -> tuple[Reply, list[RequestedCall]]:
        """One model call: the reply (secrets redacted), its tool calls under the client's own
        ids, and the assistant message added to the conversation.

        Raises:
            TurnAborted: the endpoint failed or sent no usable reply.
        """
        started = time.perf_counter()
        sent = self.policy.messages_for_call(self.messages)
        budget = budget_for(
            self.client, self.model, lambda: CompletionBudget.start(self.agent.profile, self.model)
        )
        try:
            reply = request_completion(
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
        calls = name_tool_calls(reply, self.used_ids, self.provider_ids_seen, self.record, new_id)
        call_record = record_of_reply(reply, calls, sent, schemas, index, started)
        cut = reply.prompt_tokens is not None and prompt_cut_by_server(
            reply.prompt_tokens, sent, schemas
        )
        if cut:
            self.record.guard_events.append("prompt_cut_by_server")
        self.record.model_calls.append(call_record)
        self.emit(call_record)
        endpoint = str(getattr(self.client, "base_url", "") or "").rstrip("/")
        self.append(assistant_message(reply, calls, self.record, endpoint))
        return reply, calls

    def refusal_for_repeats(self, calls: list[RequestedCall]) -> str | None:
        """Why ``calls`` must not run because the model keeps making exactly these calls
        (:attr:`helpers.base.limits.TurnLimits.max_identical_replies` replies in a row), or ``None``."""
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

    def run_tool_calls(self, calls: list[RequestedCall], *, cut: bool = False) -> str | None:
        """Dispatch each call and add its result; returns why the turn must stop, if it must.

        Raises:
            TurnAborted: (``max_iterations``) the model repeats its calls, as below.

        A call past a cap of :class:`helpers.base.limits.TurnLimits` (per reply, per turn) is not
        run: its result is an error saying which cap, so the model can go on with fewer. The
        calls of a reply that repeats the previous ones too often are not run either, each
        answered with an error (so no call is left without its result), and the turn stops.
        In a reply ``cut`` at the output limit (``finish_reason`` ``length``), a call whose
        arguments are not whole JSON is not run, and its error says the reply was cut."""
        limits = self.ctx.limits
        repeated = self.refusal_for_repeats(calls)
        if repeated is not None:
            for call in calls:
                tool_record = self.refuse_unrun(call, repeated, guard="refused_repeated_calls")
                self.record.tool_calls.append(tool_record)
                self.append(
                    {"role": "tool", "tool_call_id": call.id, "content": tool_record.result}
                )
                self.emit(tool_record)
            likely = (
                "" if cut else " (a local server whose chat template drops tool results does this)"
            )
            raise TurnAborted(
                f"the turn stopped: the model made the same tool calls "
                f"({', '.join(n for n, _ in self.last_calls)}) {self.identical_replies} replies "
                f"in a row without using their results{likely}",
                "max_iterations",
            )
        for index, call in enumerate(calls):
            over = _over_call_limit(limits, index, len(calls), self.calls_run)
            if over is not None:
                tool_record = self.refuse_unrun(call, over, guard="refused_over_limit")
            elif cut and not _is_whole_json(call.arguments):
                tool_record = self.refuse_unrun(
                    call,
                    "not run: your reply stopped at your output limit (finish_reason 'length') "
                    f"inside the arguments of {call.name}, so they are cut. Write less in one "
                    "call: pass a long value by reference, or split the work.",
                )
            else:
                self.calls_run += 1
                if self.program_calls is not None:
                    self.program_calls.program_call_id = call.id
                tool_record = dispatch(
                    call.id,
                    call.name,
                    call.arguments,
                    self.tools,
                    self.policy,
                    self.ctx,
                    state=self.state,
                    provider_call_id=call.provider_id,
                )
            self.record.tool_calls.append(tool_record)
            self.append({"role": "tool", "tool_call_id": call.id, "content": tool_record.result})
            self.emit(tool_record)
            fatal = tool_record.fatal or self.program_fatal
            if fatal:
                return fatal
        return None

    def admit_program_call(self) -> str | None:
        """``None`` if a program may make one more tool call in this turn (counted), else the
        cap it would pass (:class:`helpers.base.limits.TurnLimits`)."""
        over = _over_call_limit(self.ctx.limits, 0, 1, self.calls_run)
        if over is None:
            self.calls_run += 1
        return over

    def add_program_call(self, tool_record: ToolCallRecord) -> None:
        """A program's tool call, into the record (not into the messages: its result went to
        the program)."""
        self.record.tool_calls.append(tool_record)
        self.emit(tool_record)
        self.program_fatal = self.program_fatal or tool_record.fatal

    def refuse_unrun(
        self, call: RequestedCall, message: str, *, guard: str | None = None
    ) -> ToolCallRecord:
        """``call``'s error result, saying ``message``, for a call that is not run (``guard``:
        the guard that refused it)."""
        unrun = CallInProgress.start(call.id, call.name, call.arguments, call.provider_id, self.ctx)
        return unrun.refuse(message, guard=guard)

    def finish(self, reply: Reply, calls: list[RequestedCall]) -> TurnRecord:
        """The model answered (or was filtered): the verdict."""
        setting = self.agent.profile.completion_limit_setting
        judge_final_reply(self.record, reply, unrun_calls=len(calls), limit_setting=setting)
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


def _is_whole_json(arguments: str) -> bool:
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
