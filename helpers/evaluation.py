"""Running prompt cases: one agent turn per case and strategy, validated and measured.

A *variant* names a strategy as it is run and reported: ``inline``, ``truncate``, ``box``
(opaque references), ``box-json`` (MCP resource links) and ``middle`` (head + tail, the
reference point coding agents use for logs).

Offline, :func:`run_personas` runs the same cases with the personas of :mod:`helpers.personas`,
each under the strategy where its mistake can happen, so a report can set each one beside the
ideal model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import openai

from helpers.agent import CompactionSettings, TurnRecord, run_turn
from helpers.cases import Case
from helpers.llm import DEFAULT_MAX_RETRIES, ModelConfig, make_client
from helpers.offline import OfflineModel
from helpers.personas import OFFLINE_MODEL_NAME, PERSONA_SEPARATOR, Persona
from helpers.policies import (
    DEFAULT_BOX_THRESHOLD_CHARS,
    DEFAULT_PREVIEW_LIMIT_CHARS,
    ResultPolicy,
    make_policy,
)
from helpers.registry import ToolRegistry
from helpers.store import ToolOutputStore
from helpers.tools import default_registry
from helpers.validation import Validation, validate

VARIANTS = ("inline", "truncate", "box", "box-json", "middle")


def policy_for(
    variant: str,
    *,
    threshold: int = DEFAULT_BOX_THRESHOLD_CHARS,
    limit: int = DEFAULT_PREVIEW_LIMIT_CHARS,
) -> ResultPolicy:
    """The policy a variant name stands for. Raises ``ValueError`` for an unknown name."""
    if variant == "box-json":
        return make_policy("box", threshold=threshold, boxing="json")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    return make_policy(variant, threshold=threshold, limit=limit)


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
                model.add_plan(case.prompt, case.offline_plan)
    return make_client(config, max_retries=max_retries, timeout_s=timeout_s, offline_model=model)


@dataclass
class CaseRun:
    """One case under one variant: the turn and its verdict."""

    case: Case
    variant: str
    record: TurnRecord
    validation: Validation
    persona: str | None = None  # the offline persona that ran it, if any

    @property
    def passed(self) -> bool:
        return self.validation.passed


def run_case(
    case: Case,
    variant: str,
    *,
    client: openai.OpenAI,
    model: str,
    store: ToolOutputStore,
    registry: ToolRegistry | None = None,
    threshold: int = DEFAULT_BOX_THRESHOLD_CHARS,
    limit: int = DEFAULT_PREVIEW_LIMIT_CHARS,
    few_shot: bool = True,
    temperature: float | None = None,
    compaction: CompactionSettings | None = None,
) -> CaseRun:
    """Run ``case.prompt`` once under ``variant`` in a fresh thread, and validate it."""
    record = run_turn(
        case.prompt,
        client=client,
        model=model,
        policy=policy_for(variant, threshold=threshold, limit=limit),
        registry=registry or default_registry(),
        store=store,
        few_shot=few_shot,
        temperature=temperature,
        compaction=compaction,
    )
    prefix = OFFLINE_MODEL_NAME + PERSONA_SEPARATOR
    persona = model[len(prefix) :] if model.startswith(prefix) else None
    return CaseRun(case, variant, record, validate(case, record), persona)


def run_cases(
    cases: Iterable[Case],
    variants: Iterable[str],
    *,
    on_done: Callable[[CaseRun], None] | None = None,
    **kwargs: object,
) -> list[CaseRun]:
    """Every case under every variant (case-major order); ``kwargs`` go to :func:`run_case`."""
    runs = []
    variants = list(variants)
    for case in cases:
        for variant in variants:
            run = run_case(case, variant, **kwargs)  # type: ignore[arg-type]
            runs.append(run)
            if on_done:
                on_done(run)
    return runs


def run_personas(
    cases: Iterable[Case],
    personas: Iterable[Persona],
    *,
    on_done: Callable[[CaseRun], None] | None = None,
    **kwargs: object,
) -> list[CaseRun]:
    """Every case run by every persona, under the persona's own strategy (box or truncate).

    ``kwargs`` go to :func:`run_case` (``client`` must reach the offline model; ``model`` is
    each persona's model name). Returns the runs in persona-major order.
    """
    runs = []
    cases = list(cases)
    for persona in personas:
        variant = persona.strategy
        runs += run_cases(cases, [variant], model=persona.model_name, on_done=on_done, **kwargs)
    return runs
