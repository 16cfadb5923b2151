"""devtools/floor_gap.py: where box's tokens beyond the floor go, and the resolve-tool oracle
(issue 50's box goal)."""

from __future__ import annotations

from devtools.floor_gap import PARTS, excess_parts, looks_inside, oracle_ratio
from helpers.cases.case_files import CASES_DIR, load_case
from helpers.evaluation.compare import Comparison
from helpers.evaluation.runs import client_for_cases, run_cases
from helpers.models.llm import resolve_model
from helpers.text.tokens import count_tools_tokens

#: A case that only moves a long result (case1: a transcript passed to Deep Check) and one that
#: looks inside it (case3: and the number at its end).
CASES = ("case1", "case3")


def _runs(store):
    cases = [load_case(CASES_DIR / f"{name}.md") for name in CASES]
    client = client_for_cases(resolve_model("offline", env={}), cases)
    runs = run_cases(cases, ["box"], client=client, model="offline-reference", store=store)
    return cases, client, Comparison(runs, "offline-reference", None, 600)


def test_the_parts_count_what_box_sent_beyond_the_floor(store) -> None:
    cases, _client, comparison = _runs(store)
    assert [looks_inside(c) for c in cases] == [False, True]
    gap = excess_parts(comparison)
    box = sum(r.record.usage()["prompt_tokens"] for r in comparison.runs)
    floor = sum(sum(comparison.floor(c.id) or []) for c in cases)
    assert gap["excess"] == box - floor > 0
    assert set(gap["parts"]) == set(PARTS)
    parts = gap["parts"]
    # case1 never looks inside, yet is offered the resolve tool once its transcript is boxed
    case1 = comparison.run("case1", "box")
    offered = sum(
        count_tools_tokens([s])
        for schemas in case1.record.schemas_per_call
        for s in schemas
        if s["function"]["name"] == "internal_resource"
    )
    assert parts["resolve_unneeded"] == offered > 0  # case3's offers are the floor's too
    assert parts["tool_search"] > 0 and parts["system_rule"] > 0 and parts["note_preview"] > 0


def test_the_oracle_offers_the_resolve_tool_only_where_it_is_needed(store) -> None:
    cases, client, comparison = _runs(store)
    box = comparison.metrics().totals["box"]
    oracle = oracle_ratio(cases, client=client, model="offline-reference", store=store)
    assert (oracle["passed"], oracle["cases"]) == (2, 2)
    # only case1's calls lose the resolve tool's schema: the oracle is cheaper, not free
    assert 1 < oracle["ratio_to_floor"] < box.ratio_to_floor
