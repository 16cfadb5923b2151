"""The comparison report: numbers against a hand-checked case, the floor, and the files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from forked_cli import run_workbook
from hang import HANG_GUARD_S
from provider import scripted_client, tool_calls

from helpers.cases.case_files import Case, load_cases
from helpers.context.boxing import presented_reference_id
from helpers.context.instructions import GENERAL
from helpers.context.strategies import build_policy
from helpers.context.tool_search import TOOL_SEARCH_NAME
from helpers.evaluation.compare import Comparison, floor_tokens
from helpers.evaluation.metrics import load_comparison
from helpers.evaluation.report import comparison_markdown
from helpers.evaluation.runs import CaseRun
from helpers.evaluation.validation import validate
from helpers.loop.agent import Agent, run_turn
from helpers.text.tokens import count_chat_tokens

REFERENCE_CASES = ("case0", "case1", "case2", "case3", "case4", "web1")


def _scripted(replies, usages):
    return scripted_client(replies, usages)[0]


def _call(cid, name, args):
    return tool_calls((cid, name, json.dumps(args)))


def test_report_numbers_against_a_hand_checked_case(registry, store, tmp_path) -> None:
    case = Case(id="tiny", path=None, prompt="p", tool_calls=[{"tool_name": "yt_transcribe"}])
    runs = []
    # inline: 2 model calls of 100 and 300 prompt tokens; box: 100 and 120. The run labelled
    # "box" (the floor is counted from it) runs tool-context-relay's design, which offers every
    # tool to a prompt of "p" (the workbook's offers only the tools a task names)
    policies = {"inline": build_policy("inline"), "box": build_policy("box-tcr")}
    for strategy, usages in (("inline", [(100, 10), (300, 5)]), ("box", [(100, 10), (120, 5)])):
        client = _scripted(
            [
                _call("c1", "yt_transcribe", {"video_id": "123"}),
                {"role": "assistant", "content": "ok"},
            ],
            usages,
        )
        record = run_turn("p", Agent(client, "scripted", policies[strategy], registry, store))
        runs.append(CaseRun(case, strategy, record, validate(case, record)))
    metrics = Comparison(runs, "scripted", 256, 600).metrics()
    inline, box = (metrics.cases["tiny"].runs[v] for v in ("inline", "box"))
    assert inline.prompt_tokens_per_call == [100, 300] and inline.prompt_tokens == 400
    assert inline.peak_context_tokens == 300 and inline.completion_tokens == 15
    assert (inline.model_calls, inline.tool_calls) == (2, 1)
    assert inline.tool_output_chars_in_context > 8_000
    assert box.prompt_tokens == 220 and box.tool_output_chars_in_context < 40
    assert metrics.totals["box"].ratio_to_inline == round(220 / 400, 3)
    # the floor is counted locally over the box conversation (nothing to drop here), under the
    # system message every strategy shares and with only the schema of the tool it calls
    record = runs[1].record
    messages = [{"role": "system", "content": GENERAL}, *record.messages[1:]]
    used = [s for s in record.tool_schemas if s["function"]["name"] == "yt_transcribe"]
    expected_floor = [
        count_chat_tokens(messages[:2], used),
        count_chat_tokens(messages[:4], used),
    ]
    floor = metrics.cases["tiny"].floor
    assert floor is not None and floor.prompt_tokens_per_call == expected_floor
    assert metrics.totals["box"].ratio_to_floor == round(220 / sum(expected_floor), 3)
    assert "| tiny | 400 ✓\u00a0pass | 220 ✓\u00a0pass |" in comparison_markdown(metrics)
    # compare.json holds every figure: read back, it is the same comparison
    path = tmp_path / "compare.json"
    path.write_text(metrics.as_json_text(), encoding="utf-8")
    assert load_comparison(path) == metrics


def test_a_hand_edited_compare_json_is_refused_naming_the_field(tmp_path) -> None:
    """A report read back from disk is checked field by field: text where a number belongs, or
    a key no reader knows, is an error that says where, not a figure shown wrong."""
    metrics = Comparison([], "scripted", None, 600).metrics()
    path = tmp_path / "compare.json"
    path.write_text(metrics.as_json_text(), encoding="utf-8")
    assert load_comparison(path) == metrics  # no runs: an empty report, still a report
    document = json.loads(metrics.as_json_text())
    document["totals"] = {"box": {"prompt_tokens": "many"}}
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ValueError, match=r"totals\.box\.prompt_tokens"):
        load_comparison(path)
    document["totals"] = {}
    document["surprise"] = 1
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ValueError, match="surprise"):
        load_comparison(path)


def test_floor_drops_unneeded_resolve_calls_and_shows_bare_references(registry, store) -> None:
    policy = build_policy("box-tcr", boxing="json")
    # an earlier turn of the thread boxed a transcript
    first = run_turn(
        "p",
        Agent(
            _scripted(
                [
                    _call("c0", "yt_transcribe", {"video_id": "123"}),
                    {"role": "assistant", "content": "x"},
                ],
                [(1, 1)] * 2,
            ),
            "s",
            policy,
            registry,
            store,
        ),
    )
    old_uri = json.loads(first.tool_calls[0].result)["uri"]
    # this turn: box again, read the whole old value (not needed), ask its length (needed)
    replies = [
        _call("c1", "yt_transcribe", {"video_id": "123"}),
        _call("c2", "internal_resource_read", {"opaque_reference": old_uri}),
        _call("c3", "internal_resource_length", {"opaque_reference": old_uri}),
        {"role": "assistant", "content": "ok"},
    ]
    record = run_turn(
        "p",
        Agent(_scripted(replies, [(1, 1)] * 4), "s", policy, registry, store),
        thread_id=first.thread_id,
    )
    assert [t.result_kind for t in record.tool_calls] == ["boxed", "inline", "inline"]
    floor = floor_tokens(record, needed_tools={"yt_transcribe", "internal_resource_length"})
    assert len(floor) == 3  # the read's model call is gone
    new_uri = json.loads(record.tool_calls[0].result)["uri"]
    c1, c2 = (record.tool_calls[0].id, record.tool_calls[1].id)  # the client's ids
    kept = [
        m
        for m in record.messages
        if m.get("tool_call_id") != c2
        and not (m.get("tool_calls") and m["tool_calls"][0]["id"] == c2)
    ]
    kept = [{**m, "content": new_uri} if m.get("tool_call_id") == c1 else m for m in kept]
    kept[0] = {"role": "system", "content": GENERAL}
    used = [
        s
        for s in record.tool_schemas
        if s["function"]["name"] in ("yt_transcribe", "internal_resource_length")
    ]
    assert floor == [count_chat_tokens(kept[:end], used) for end in (2, 4, 6)]
    everything = floor_tokens(
        record, {"yt_transcribe", "internal_resource_length"}, used_tools_only=False
    )
    assert everything == [count_chat_tokens(kept[:end], record.tool_schemas) for end in (2, 4, 6)]


def test_floor_drops_tool_search_calls_and_its_schema(registry, store) -> None:
    """Loading a tool is no step of the task: the floor keeps no ``tool_search`` call, alone in
    its model call or beside a task call (that call stays), and offers no ``tool_search`` schema,
    even with every tool the run offered."""
    replies = [
        _call("c1", TOOL_SEARCH_NAME, {"query": "yt_transcribe"}),
        tool_calls(
            ("c2", "yt_transcribe", json.dumps({"video_id": "123"})),
            ("c3", TOOL_SEARCH_NAME, json.dumps({"query": "deep_check"})),
        ),
        {"role": "assistant", "content": "ok"},
    ]
    policy = build_policy("box")  # the workbook's design: a prompt naming no tool gets tool_search
    agent = Agent(_scripted(replies, [(1, 1)] * 3), "s", policy, registry, store)
    record = run_turn("Do it for 123.", agent)
    names = [t.name for t in record.tool_calls]
    assert names == [TOOL_SEARCH_NAME, "yt_transcribe", TOOL_SEARCH_NAME]
    assert record.tool_calls[1].result_kind == "boxed"
    _, user, _, _, both, transcript, _ = record.messages[:7]
    task_call = [c for c in both["tool_calls"] if c["function"]["name"] == "yt_transcribe"]
    ref = presented_reference_id(transcript["content"])
    kept = [
        {"role": "system", "content": GENERAL},
        user,
        {**both, "tool_calls": task_call},
        {**transcript, "content": f"internal://{ref}"},
    ]
    offered = {s["function"]["name"]: s for call in record.schemas_per_call for s in call}
    assert {TOOL_SEARCH_NAME, "yt_transcribe", "deep_check"} <= set(offered)
    floor = floor_tokens(record, needed_tools={"yt_transcribe"})
    # the first model call (a tool_search alone) is gone; the second keeps its task call only
    assert floor == [count_chat_tokens(kept[:end], [offered["yt_transcribe"]]) for end in (2, 4)]
    everything = floor_tokens(record, {"yt_transcribe"}, used_tools_only=False)
    tools = [s for name, s in offered.items() if name != TOOL_SEARCH_NAME]
    assert everything == [count_chat_tokens(kept[:end], tools) for end in (2, 4)]


def test_workbook_compare_at_a_tenth_of_the_scale(tmp_path) -> None:
    """Every case under every strategy, the large documents and the context window scaled down
    together (a tenth), the scaling run up to 100 KB: what a user reads in the report holds."""
    env = {
        **os.environ,
        "WORKBOOK_PROFILE": "offline",
        "NO_COLOR": "1",
        "OFFLINE_CONTEXT_WINDOW": "12000",
        "WORKBOOK_DOCUMENT_SCALE": "0.1",
        "WORKBOOK_VAR_DIR": str(tmp_path / "var"),
    }
    out = tmp_path / "report"
    args = ["compare", "--out", str(out), "--no-personas", "--scaling-max-bytes", "100000"]
    done = run_workbook(args, env=env)
    assert done.returncode == 0, done.stderr
    metrics = load_comparison(out / "compare.json")
    md = (out / "compare.md").read_text()
    assert md.startswith("# Truncation vs boxing")
    for png in ("compare.png", "scaling.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    large = {
        "unicode_save",
        "unicode_lookup",
        "unicode_check",
        "unicode_fanout",
        "iso639_save",
        "sql_all",
    }
    assert large <= set(metrics.cases) and len(metrics.cases) == 19
    for case_id, entry in metrics.cases.items():
        runs = entry.runs
        for strategy in ("box", "box-json", "box-tcr"):
            assert runs[strategy].passed, (case_id, strategy, runs[strategy].reasons)
        for strategy in ("inline", "truncate"):
            m = runs[strategy]
            if case_id in large:
                assert not m.passed, (case_id, strategy)
            else:  # a regular case passes, unless it outgrows the scaled-down window (pipe1)
                assert m.passed or m.context_overflow, (case_id, strategy, m.reasons)
        if case_id in large:
            inline = runs["inline"]
            assert inline.context_overflow and (inline.refused_prompt_tokens or 0) > 12_000
            assert runs["box"].sinks_exact in (True, None)
        assert entry.box_goal is not None and entry.box_goal.met, (case_id, entry.box_goal)
        assert entry.floor is not None
        assert entry.floor.prompt_tokens <= runs["box"].prompt_tokens
        for strategy in metrics.totals:
            if strategy in runs:
                m = runs[strategy]
                assert m.usd_cached is not None and m.usd_uncached is not None
                assert 0 <= m.usd_cached <= m.usd_uncached + 1e-9, (case_id, strategy)
    for anchor in ("codex", "deepagents", "claude-code", "agents-sdk", "middle"):
        assert anchor in metrics.totals
    assert metrics.totals["box"].ratio_to_floor is not None
    assert [row.design for row in metrics.design_steps] == [
        "tcr-original",
        "tcr",
        "one-tool",
        "short-prompt",
        "lazy-tools",
        "token-threshold",
        "preview",
        "workbook",
    ]
    assert (metrics.design_steps[1].tokens_saved or 0) > 0  # one schema instead of five
    scaling = metrics.scaling
    assert scaling is not None
    assert scaling.sizes_bytes == [1_000, 3_000, 10_000, 30_000, 100_000]
    assert scaling.breaks["inline"].startswith("breaks at")  # a 12,000-token window
    assert scaling.breaks["box"].startswith("passes at every size")
    assert "## How cost grows with one result" in md and "met on every case" in md
    # dollar amounts are text: JupyterLab and GitHub read a pair of bare $ as TeX math
    assert "| \\$" in md and not re.search(r"(?<!\\)\$\d", md)


def test_workbook_cases_all_fails_only_on_the_output_limit_and_exits_1() -> None:
    """``--strategy all`` runs inline, truncate and box: every case passes but where the model
    must copy a value longer than one response holds into a tool call (inline and truncate on
    pipe1), and then the failure names that limit and the exit code is 1."""
    env = {**os.environ, "WORKBOOK_PROFILE": "offline", "NO_COLOR": "1"}
    ok = subprocess.run(
        [sys.executable, "-m", "helpers.cli", "cases", "--strategy", "all", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_GUARD_S,
    )
    data = json.loads(ok.stdout)
    failed = [r for r in data["runs"] if not r["passed"]]
    assert len(data["runs"]) == 3 * len(load_cases()) and data["failed"] == len(failed)
    assert {(r["case"], r["strategy"]) for r in failed} == {
        ("pipe1", "inline"),
        ("pipe1", "truncate"),
    }
    assert all(r["reasons"][0].startswith("the model's output limit") for r in failed), failed
    assert ok.returncode == 1
    bad = subprocess.run(
        [sys.executable, "-m", "helpers.cli", "cases", "--strategy", "middle", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_GUARD_S,
    )
    assert bad.returncode == 1 and json.loads(bad.stdout)["failed"] > 0


def test_several_models_write_the_matrix_as_markdown(tmp_path) -> None:
    env = {**os.environ, "WORKBOOK_PROFILE": "offline", "NO_COLOR": "1"}
    out = tmp_path / "matrix.md"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "helpers.cli",
            "cases",
            "data/cases/case[01].md",
            "--model",
            "offline-a",
            "--model",
            "offline-b",
            "--no-few-shot",
            "--markdown",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_GUARD_S,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = out.read_text().splitlines()
    assert lines[0] == "| Model | Prompt Id | Strategy | Few-shot | Validation |"
    assert (
        "| offline-a | case0 | box | - | ✓\u00a0passed |" in lines
        and "| offline-b | case1 | box | - | ✓\u00a0passed |" in lines
    )
    assert len(lines) == 2 + 4
