"""Running prompt cases: one agent turn per case and strategy, validated and measured.

A *strategy* is the name of what the model sees of a long result, as it is run and reported;
a *policy* (:mod:`helpers.context.policies`, :mod:`helpers.context.anchors`) is the object that carries one out
(:func:`helpers.context.strategies.build_policy` gives it). The strategies: ``inline``, ``truncate``, ``box``
(opaque references, the workbook's box design), ``box-json`` (MCP resource links),
``box-tcr`` (tool-context-relay's design), ``middle`` (head + tail) and the anchors ``codex``,
``deepagents``, ``claude-code`` and ``agents-sdk`` (:mod:`helpers.context.anchors`).

Offline, :func:`run_personas` runs the same cases with the personas of :mod:`helpers.models.personas`,
each under the strategy where its mistake can happen, so a report can set each one beside the
ideal model.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypedDict, Unpack

import openai

from helpers.base.ids import ids_for
from helpers.cases.case_files import Case, CaseError
from helpers.context.policies import DEFAULT_PREVIEW_LIMIT_CHARS
from helpers.context.strategies import (
    STRATEGY_REGISTRY,
    build_policy,
    strategy_families,
)
from helpers.evaluation.validation import Validation, validate
from helpers.loop.agent import Agent, CompactionSettings, RunConfig, run_turn
from helpers.loop.records import TurnRecord
from helpers.models.llm import DEFAULT_MAX_RETRIES, ModelConfig, make_client
from helpers.models.offline import OfflineModel
from helpers.models.personas import OFFLINE_MODEL_NAME, PERSONA_SEPARATOR, Persona
from helpers.store.tool_outputs import ToolOutputStore
from helpers.tooling.registry import ToolRegistry
from helpers.tooling.tools import default_registry


def client_for_cases(
    config: ModelConfig,
    cases: Iterable[Case],
    *,
    max_retries: int = DEFAULT_MAX_RETRIES,
    timeout_s: float | None = None,
) -> openai.OpenAI:
    """A client for ``config``; offline, the model also learns the ``offline_plan`` of each of
    ``cases``, so a case file written anywhere (your own) runs like the shipped ones."""
    model = None
    if config.offline:
        model = OfflineModel()
        for case in cases:
            if case.offline_plan:
                model.add_plan(case.prompt, case.offline_plan, case_id=case.id)
    return make_client(config, max_retries=max_retries, timeout_s=timeout_s, offline_model=model)


_REFUSED_RE = re.compile(r"resulted in (\d+) tokens")


def refused_prompt_tokens(record: TurnRecord) -> int | None:
    """The size in tokens of the request a provider refused for its context window, as its
    message gives it (OpenAI: "your messages resulted in N tokens"), if the turn ended so."""
    if record.status != "context_exceeded":
        return None
    match = _REFUSED_RE.search(record.error or "")
    return int(match[1]) if match else None


@dataclass
class CaseRun:
    """One case under one strategy: the turn and its verdict."""

    case: Case
    strategy: str
    record: TurnRecord
    validation: Validation
    persona: str | None = None  # the offline persona that ran it, if any
    seconds: float = 0.0  # wall time of the turn

    @property
    def passed(self) -> bool:
        return self.validation.passed


def run_case(
    case: Case,
    strategy: str,
    *,
    client: openai.OpenAI,
    model: str,
    store: ToolOutputStore,
    registry: ToolRegistry | None = None,
    threshold: int | None = None,
    limit: int = DEFAULT_PREVIEW_LIMIT_CHARS,
    few_shot: bool = True,
    boxing: str | None = None,
    temperature: float | None = None,
    compaction: CompactionSettings | None = None,
) -> CaseRun:
    """Run ``case.prompt`` once under ``strategy`` in a fresh thread, and validate it.

    ``threshold``, ``limit`` and ``boxing`` (``opaque`` or ``json``: a box strategy's reference
    form, ``None`` for the strategy's own) go to :func:`helpers.context.strategies.build_policy`;
    ``few_shot``, ``temperature`` and ``compaction`` to the turn's
    :class:`helpers.loop.agent.RunConfig`.
    """
    check_case_strategies([case])
    started = time.perf_counter()
    policy = build_policy(strategy, threshold=threshold, limit_chars=limit, boxing=boxing)
    config = RunConfig(few_shot=few_shot, temperature=temperature, compaction=compaction)
    with ids_for(f"{case.id}/{strategy}/{model}"):  # its figures whatever ran before it
        agent = Agent(client, model, policy, registry or default_registry(), store)
        record = run_turn(case.prompt, agent, config)
    prefix = OFFLINE_MODEL_NAME + PERSONA_SEPARATOR
    persona = model[len(prefix) :] if model.startswith(prefix) else None
    seconds = time.perf_counter() - started
    return CaseRun(case, strategy, record, validate(case, record), persona, seconds)


@dataclass(frozen=True)
class SkippedCase:
    """A case not run because the registry does not offer a tool its task must call.

    A mode's whitelist (:mod:`helpers.context.modes`) withholds tools on purpose: ``explore``
    is read-only, so a task that writes a file cannot be done there by any strategy or model.
    Running it would only measure that; the case is reported as not run, with the tools.

    Attributes:
        case: the case.
        withheld: the tools its ``tool_calls`` name that the registry does not offer.
    """

    case: Case
    withheld: list[str]

    def reason(self, where: str = "this registry") -> str:
        """One line for a report: which tools ``where`` (e.g. ``"mode 'explore'"``) withholds."""
        them = "it" if len(self.withheld) == 1 else "them"
        return f"needs {', '.join(self.withheld)} ({where} withholds {them})"


def runnable_cases(
    cases: Iterable[Case], offered: ToolRegistry, known: ToolRegistry
) -> tuple[list[Case], list[SkippedCase]]:
    """Split ``cases`` into those ``offered`` can run and those it cannot: a case is skipped
    when a tool its task is expected to call (:meth:`Case.expected_tools`) is one of ``known``
    (every registered tool) that ``offered`` (e.g. a mode's registry) withholds. A tool nobody
    registered does not skip a case: its run fails and says so. Returns ``(runnable,
    skipped)``, each in the order of ``cases``."""
    runnable, skipped = [], []
    for case in cases:
        withheld = [n for n in case.expected_tools() if n in known and n not in offered]
        if withheld:
            skipped.append(SkippedCase(case, withheld))
        else:
            runnable.append(case)
    return runnable, skipped


class RunOptions(TypedDict, total=False):
    """The keyword arguments :func:`run_cases` and :func:`run_personas` pass on to
    :func:`run_case`, typed (``client`` and ``store`` are required by ``run_case``)."""

    client: openai.OpenAI
    model: str
    store: ToolOutputStore
    registry: ToolRegistry | None
    threshold: int | None
    limit: int
    few_shot: bool
    boxing: str | None
    temperature: float | None
    compaction: CompactionSettings | None


def check_case_strategies(cases: Iterable[Case]) -> list[Case]:
    """``cases`` as a list, once each case's ``strategies`` key names registered strategies or
    families only.

    Raises:
        CaseError: a case names a strategy that is not registered (a typo there would quietly
            switch its checks off); the message names the file and the known strategies.
    """
    cases = list(cases)
    for case in cases:
        known = [*STRATEGY_REGISTRY, *strategy_families()]
        unknown = [s for s in case.strategies or () if s not in known]
        if unknown:
            raise CaseError(
                f"{case.path}: key 'strategies' names {', '.join(unknown)}, not a strategy "
                f"or a family (one of {', '.join(dict.fromkeys(known))})"
            )
    return cases


def run_cases(
    cases: Iterable[Case],
    strategies: Iterable[str],
    *,
    on_done: Callable[[CaseRun], None] | None = None,
    **kwargs: Unpack[RunOptions],
) -> list[CaseRun]:
    """Every case under every strategy (case-major order); ``kwargs`` go to :func:`run_case`."""
    runs = []
    strategies = list(strategies)
    cases = check_case_strategies(cases)
    for case in cases:
        for strategy in strategies:
            run = run_case(case, strategy, **kwargs)
            runs.append(run)
            if on_done:
                on_done(run)
    return runs


def run_personas(
    cases: Iterable[Case],
    personas: Iterable[Persona],
    *,
    on_done: Callable[[CaseRun], None] | None = None,
    **kwargs: Unpack[RunOptions],
) -> list[CaseRun]:
    """Every case run by every persona, under the persona's own strategy (box or truncate).

    ``kwargs`` go to :func:`run_case` (``client`` must reach the offline model; ``model`` is
    each persona's model name). Returns the runs in persona-major order.
    """
    runs = []
    cases = list(cases)
    for persona in personas:
        strategy = persona.strategy
        options = RunOptions(**{**kwargs, "model": persona.model_name})
        runs += run_cases(cases, [strategy], on_done=on_done, **options)
    return runs
