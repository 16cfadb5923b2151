"""Running prompt cases: one agent turn per case and strategy, validated and measured.

A *variant* names a strategy as it is run and reported: ``inline``, ``truncate``, ``box``
(opaque references, the workbook's box design), ``box-json`` (MCP resource links),
``box-tcr`` (tool-context-relay's design), ``middle`` (head + tail) and the anchors ``codex``,
``deepagents``, ``claude-code`` and ``agents-sdk`` (:mod:`helpers.anchors`).

Offline, :func:`run_personas` runs the same cases with the personas of :mod:`helpers.personas`,
each under the strategy where its mistake can happen, so a report can set each one beside the
ideal model.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import openai

from helpers.agent import CompactionSettings, TurnRecord, run_turn
from helpers.anchors import ANCHORS
from helpers.cases import Case
from helpers.llm import DEFAULT_MAX_RETRIES, ModelConfig, make_client
from helpers.offline import OfflineModel
from helpers.personas import OFFLINE_MODEL_NAME, PERSONA_SEPARATOR, Persona
from helpers.policies import (
    BOX_DESIGNS,
    DEFAULT_BOX_DESIGN,
    DEFAULT_PREVIEW_LIMIT_CHARS,
    ResultPolicy,
    make_policy,
)
from helpers.registry import ToolRegistry
from helpers.store import ToolOutputStore
from helpers.tools import default_registry
from helpers.validation import Validation, validate

#: The anchors: production agents' own policies (:mod:`helpers.anchors`).
ANCHOR_VARIANTS = tuple(ANCHORS)
#: Every strategy ``workbook compare`` runs: the workbook's, tool-context-relay's box design,
#: the head + tail reference point and the anchors.
VARIANTS = ("inline", "truncate", "box", "box-json", "box-tcr", "middle", *ANCHOR_VARIANTS)
#: The box designs between tool-context-relay's (``box-tcr``) and the workbook's (``box``), one
#: step each (the report's "what each step buys").
DESIGN_STEPS = tuple(
    f"box-{name}" for name in BOX_DESIGNS if name not in (DEFAULT_BOX_DESIGN, "tcr")
)
#: Every variant name :func:`policy_for` knows.
ALL_VARIANTS = tuple(dict.fromkeys((*VARIANTS, *DESIGN_STEPS)))


def policy_for(
    variant: str,
    *,
    threshold: int | None = None,
    limit: int = DEFAULT_PREVIEW_LIMIT_CHARS,
    boxing: str | None = None,
) -> ResultPolicy:
    """The policy a variant name stands for.

    ``box`` and ``box-json`` are the workbook's box design (:data:`DEFAULT_BOX_DESIGN`) with
    opaque references or MCP resource links; ``box-<design>`` is another design of
    :data:`~helpers.policies.BOX_DESIGNS` (``box-tcr``: tool-context-relay's); ``threshold``
    (characters, or tokens under a token design) overrides the design's. The anchors take their
    published parameters. ``boxing`` (``opaque`` or ``json``) overrides a box variant's form.

    Raises:
        ValueError: an unknown name.
    """
    if variant in ("box", "box-json"):
        boxing = boxing or ("json" if variant == "box-json" else "opaque")
        return make_policy("box", threshold=threshold, boxing=boxing, design=DEFAULT_BOX_DESIGN)
    if variant.startswith("box-") and variant[4:] in BOX_DESIGNS:
        return make_policy(
            "box", threshold=threshold, boxing=boxing or "opaque", design=variant[4:]
        )
    if variant in ANCHORS:
        return ANCHORS[variant]()
    if variant in ("inline", "truncate", "middle"):
        return make_policy(variant, limit=limit)
    raise ValueError(f"strategy must be one of {', '.join(ALL_VARIANTS)}, got {variant!r}")


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
    seconds: float = 0.0  # wall time of the turn

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
    threshold: int | None = None,
    limit: int = DEFAULT_PREVIEW_LIMIT_CHARS,
    few_shot: bool = True,
    temperature: float | None = None,
    compaction: CompactionSettings | None = None,
) -> CaseRun:
    """Run ``case.prompt`` once under ``variant`` in a fresh thread, and validate it."""
    started = time.perf_counter()
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
    seconds = time.perf_counter() - started
    return CaseRun(case, variant, record, validate(case, record), persona, seconds)


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
