"""The box designs: each step from tool-context-relay's settings to the workbook's changes one
thing, and each thing works as it says (token threshold, one resolve tool, tools offered once a
reference exists, a preview under the reference)."""

from __future__ import annotations

import json
from dataclasses import asdict
from itertools import pairwise

import pytest

from helpers.cases.case_files import load_cases
from helpers.context.boxing import presented_reference_id
from helpers.context.policies import BOX_DESIGNS, BOX_PREVIEW_CHARS, BoxPolicy, head_lines
from helpers.context.strategies import build_policy
from helpers.evaluation.runs import run_case
from helpers.loop.agent import Agent, run_turn
from helpers.text.tokens import count_tokens

CASES = {case.id: case for case in load_cases()}


def test_each_design_changes_one_thing_from_the_one_before() -> None:
    designs = list(BOX_DESIGNS.values())
    assert [d.name for d in designs[:2]] == ["tcr-original", "tcr"]
    assert designs[-1].name == "workbook"
    original, tcr = designs[:2]
    assert (original.threshold_chars, original.resolve, original.offer_tools) == (
        256,
        "five",
        "always",
    )
    assert (original.instructions, tcr.instructions) == ("original", "full")
    for before, after in pairwise(designs):
        a, b = asdict(before), asdict(after)
        changed = {k for k in a if a[k] != b[k]} - {"name", "step"}
        assert len(changed) == 1 or changed == {"threshold_chars"}, (after.name, changed)
        assert after.step


def test_tool_context_relay_prompt_is_its_own_and_the_paraphrase_is_shorter() -> None:
    """box-tcr-original sends tool-context-relay's prompt word for word (its rules and examples,
    as its source has them); box-tcr the workbook's paraphrase, which is far shorter."""
    from helpers.context.policies import tcr_instructions

    original = BoxPolicy(design="tcr-original").instructions()
    assert original == tcr_instructions()
    assert original.startswith("- Be concise.\n- You may answer directly without tools")
    assert "Tool arguments/results may be ordinary short values" in original
    assert "Examples (follow exactly):" in original
    assert "Examples (follow exactly):" not in BoxPolicy(design="tcr-original").instructions(
        few_shot=False
    )
    paraphrase = BoxPolicy(design="tcr").instructions()
    assert count_tokens(paraphrase) * 2 < count_tokens(original)


def test_a_token_threshold_counts_what_a_result_costs() -> None:
    policy = BoxPolicy(design="token-threshold")
    prose = "word " * 900  # 4,500 chars, 900 tokens: stays inline
    assert count_tokens(prose) <= 1_000 and not policy.is_long(prose)
    digits = "".join(f"{i:x}" for i in range(2_000))  # 6,800 chars of dense text: boxed
    assert count_tokens(digits) > 1_000 and policy.is_long(digits)
    assert BoxPolicy(design="tcr").is_long("x" * 257) and not BoxPolicy().is_long("x" * 256)
    assert BoxPolicy(threshold=50, design="token-threshold").is_long("word " * 60)
    with pytest.raises(ValueError, match="box design must be one of"):
        BoxPolicy(design="nope")


def test_the_resolve_tool_is_offered_once_a_reference_exists(client, store, registry) -> None:
    record = run_turn(
        CASES["case3"].prompt, Agent(client, "m", build_policy("box"), registry, store)
    )
    assert record.ok
    offered = [[s["function"]["name"] for s in schemas] for schemas in record.schemas_per_call]
    assert "internal_resource" not in offered[0]  # no reference yet: not offered
    assert all("internal_resource" in names for names in offered[1:])
    assert not any(n.startswith("internal_resource_") for names in offered for n in names)


def test_the_workbook_design_shows_a_preview_under_the_reference(client, store) -> None:
    run = run_case(CASES["case1"], "box", client=client, model="m", store=store)
    assert run.passed and run.validation.sinks_exact is True
    boxed = run.record.tool_calls[0]
    ref, note, preview = boxed.result.split("\n", 2)
    assert presented_reference_id(boxed.result) == ref.removeprefix("internal://")
    assert note == "[10,244 chars of text/plain; it begins:]"
    # whole lines only, within BOX_PREVIEW_CHARS: no line cut in the middle
    assert 0 < len(preview) <= BOX_PREVIEW_CHARS and preview.endswith("\n")
    # the model passed only the reference on; the tool got the whole transcript
    assert json.loads(run.record.tool_calls[1].arguments) == {"text": ref}


def test_the_preview_keeps_whole_lines_within_its_limit() -> None:
    text = "title line\nsecond line\n" + "x" * 50
    assert head_lines(text, 25) == "title line\nsecond line\n"
    assert head_lines(text, 22) == "title line\n"  # the second line would end past the limit
    assert head_lines("y" * 300, 120) == "y" * 120  # one line longer than the limit: its head
    assert head_lines(text, 0) == ""


def test_a_title_in_the_preview_needs_no_look_inside(client, store) -> None:
    run = run_case(CASES["web3"], "box", client=client, model="m", store=store)
    assert run.passed
    assert [t.name for t in run.record.tool_calls] == ["get_page"]


def test_one_resolve_tool_answers_as_the_five_do(client, store) -> None:
    run = run_case(CASES["sql3"], "box", client=client, model="m", store=store)
    assert run.passed, run.validation.reasons  # the case names internal_resource_grep
    call = run.record.tool_calls[1]
    assert call.name == "internal_resource" and json.loads(call.arguments)["op"] == "grep"
    tcr = run_case(CASES["sql3"], "box-tcr", client=client, model="m", store=store)
    assert tcr.record.tool_calls[1].result == call.result


def test_a_bad_op_is_an_error_result_and_the_turn_goes_on(store) -> None:
    from helpers.context.resolve_tools import resolve_tools
    from helpers.tooling.registry import ToolArgumentError, ToolContext

    tool = resolve_tools("one")[0]
    store.ensure_thread("t")
    row = store.log_tool("t", "c1", "x", {}, "hello\nworld\n")
    ctx = ToolContext(store=store, thread_id="t")
    ref = f"internal://{row.ref_id}"
    assert (
        tool.call({"opaque_reference": ref, "op": "slice", "start": -6, "count": 5}, ctx) == "world"
    )
    assert json.loads(tool.call({"opaque_reference": ref, "op": "length"}, ctx)) == {
        "length_chars": 12
    }
    with pytest.raises(ToolArgumentError, match="must be one of 'length', 'slice'"):
        tool.call({"opaque_reference": ref, "op": "delete"}, ctx)


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_box_meets_its_goal_on_every_shipped_case(client, store, case_id) -> None:
    """At most 1.05× the prompt tokens of the cheaper of inline and truncate."""
    from helpers.evaluation.compare import BOX_GOAL_RATIO

    case = CASES[case_id]
    tokens = {}
    for strategy in ("inline", "truncate", "box"):
        run = run_case(case, strategy, client=client, model="m", store=store)
        assert run.passed or strategy != "box", run.validation.reasons
        if run.passed:
            tokens[strategy] = run.record.usage()["prompt_tokens"]
    rivals = [tokens[v] for v in ("inline", "truncate") if v in tokens]
    if rivals:  # else only box passes (the goal's verdict: met), as compare.box_verdict says
        assert tokens["box"] <= BOX_GOAL_RATIO * min(rivals), tokens
