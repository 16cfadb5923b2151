"""Where box's prompt tokens go beyond the floor, and how far an oracle would bring them.

Issue 50 asks for box at 1.2× the floor (:func:`helpers.evaluation.compare.floor_tokens`: the
prompt, the schemas of only the tools a case calls, one bare reference per long result, the
looks inside it must make). This module measures, over the cases box passed:

- :func:`excess_parts`: what box sends that the floor does not, part by part: ``tool_search``'s
  schema, the resolve tool's schema in the cases that never look inside, the schemas of real
  tools a case never calls, the box rule in the system message, and the note and preview under
  each reference;
- :func:`oracle_ratio`: box with one thing known in advance that no client can know, whether a
  case will look inside a result: the resolve tool is offered only to the cases that do. What
  that reaches is the least any rule that decides per case whether to offer the resolve tool
  can reach, everything else unchanged.

``make bench`` and ``make bench-speed`` print both under box's ratio (docs/comparison.md).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from helpers.base.ids import ids_for
from helpers.cases.case_files import Case
from helpers.context.instructions import GENERAL
from helpers.context.policies import BoxPolicy
from helpers.context.strategies import build_policy, strategy_in_role
from helpers.context.tool_search import TOOL_SEARCH_NAME
from helpers.evaluation.compare import RESOLVE_TOOL_NAMES, Comparison, bare_reference
from helpers.evaluation.runs import CaseRun
from helpers.evaluation.validation import validate
from helpers.loop.agent import Agent, RunConfig, run_turn
from helpers.store.tool_outputs import ToolOutputStore
from helpers.text.tokens import count_message_tokens, count_tools_tokens
from helpers.tooling.tools import default_registry

#: The parts :func:`excess_parts` splits box's tokens into, in words, in the order shown.
PARTS: dict[str, str] = {
    "resolve_unneeded": "the resolve tool's schema, in cases that never look inside",
    "tool_search": "`tool_search`'s schema",
    "note_preview": "the note and preview under each reference",
    "system_rule": "the box rule in the system message",
    "real_unneeded": "the schemas of real tools a case never calls",
}


def looks_inside(case: Case) -> bool:
    """Whether ``case``'s expected calls (its ``tool_calls``) include a resolve tool."""
    return any(call["tool_name"] in RESOLVE_TOOL_NAMES for call in case.tool_calls)


def excess_parts(comparison: Comparison) -> dict[str, Any]:
    """Box's prompt tokens beyond the floor, over the cases the subject strategy passed.

    Returns ``{"excess": box minus floor, "parts": {part: tokens}}`` (keys of :data:`PARTS`):
    each part is what box sent of it over all its model calls (a schema counted in every call
    that offered it, the system message beside the shared one, a tool message beside its bare
    reference). The parts do not add up to the excess: they overlap with the model calls the
    floor drops (a ``tool_search`` round, a look inside the case did not need), and the floor
    offers a needed resolve tool in every call, where box offers it only once a reference
    exists (box sends less than the floor there, which no part shows)."""
    subject = strategy_in_role("subject")
    parts = dict.fromkeys(PARTS, 0)
    excess = 0
    for case_id in comparison.case_ids():
        run = comparison.run(case_id, subject)
        floor = comparison.floor(case_id)
        if run is None or floor is None:
            continue
        excess += run.record.usage()["prompt_tokens"] - sum(floor)
        needed = {call["tool_name"] for call in run.case.tool_calls}
        needs_resolve = looks_inside(run.case)
        record = run.record
        for i, model_call in enumerate(record.model_calls):
            for schema in record.schemas_per_call[i]:
                name = schema["function"]["name"]
                if name == TOOL_SEARCH_NAME:
                    part = "tool_search"
                elif name in RESOLVE_TOOL_NAMES:
                    if needs_resolve:
                        continue  # the floor offers it too, in every call
                    part = "resolve_unneeded"
                elif name not in needed:
                    part = "real_unneeded"
                else:
                    continue
                parts[part] += count_tools_tokens([schema])
            sent = record.messages[: model_call.messages_sent]
            system = sent[0]
            parts["system_rule"] += count_message_tokens(system) - count_message_tokens(
                {**system, "content": GENERAL}
            )
            for message in sent:
                if message.get("role") == "tool":
                    bare = bare_reference(str(message.get("content") or ""))
                    parts["note_preview"] += count_message_tokens(message) - count_message_tokens(
                        {**message, "content": bare}
                    )
    return {"excess": excess, "parts": parts}


class _ResolveOracle(BoxPolicy):
    """The subject's box policy, but the resolve tool is offered only when the case will look
    inside (known from the case file, as no client can know it)."""

    def __init__(self, subject: BoxPolicy, offer_resolve: bool):
        super().__init__(boxing=subject.boxing, design=subject.design)
        self.name = subject.name
        self._offer_resolve = offer_resolve

    def tools_for(self, turn: Any) -> list[Any]:
        return super().tools_for(turn) if self._offer_resolve else []


def oracle_ratio(
    cases: Iterable[Case], *, client: Any, model: str, store: ToolOutputStore
) -> dict[str, Any]:
    """Box over its floor when the resolve tool is offered only to the cases that look inside
    (:func:`looks_inside`): ``{"ratio_to_floor", "passed", "cases"}``, as the comparison's
    totals count them. Raises ``TypeError`` if the subject strategy is not a box policy."""
    subject = strategy_in_role("subject")
    base = build_policy(subject)
    if not isinstance(base, BoxPolicy):
        raise TypeError(f"the subject strategy {subject!r} is not a box policy")
    runs = []
    for case in cases:
        policy = _ResolveOracle(base, looks_inside(case))
        started = time.perf_counter()
        with ids_for(f"{case.id}/{subject}/{model}"):  # the same ids as the comparison's run
            agent = Agent(client, model, policy, default_registry(), store)
            record = run_turn(case.prompt, agent, RunConfig())
        seconds = time.perf_counter() - started
        runs.append(CaseRun(case, subject, record, validate(case, record), None, seconds))
    totals = Comparison(runs, model, None, 600).metrics().totals[subject]
    return {"ratio_to_floor": totals.ratio_to_floor, "passed": totals.passed, "cases": totals.cases}
