"""Prompt cases: frontmatter parsing and validation, including proof that validators fail."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from helpers.cases.case_files import CaseError, load_case, load_cases
from helpers.evaluation.runs import run_case
from helpers.models.offline import OfflineModel, offline_client

REFERENCE_CASES = ("case0", "case1", "case2", "case3", "case4", "web1")


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bad.md"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("---\nid: [unclosed\n---\nprompt", "bad YAML frontmatter"),
        ("---\nid: x\nexpect: 1\n---\nprompt", "unknown key(s) expect"),
        ("---\ntool_calls: []\n---\nprompt", "missing key 'id'"),
        ("---\nid: x\n---\n", "the prompt"),
        ("---\nid: x\ntool_calls:\n  - opaque_id_result: true\n---\np", "key 'tool_calls[0]'"),
        (
            "---\nid: x\ntool_calls:\n  - {tool_name: a, opaque: true}\n---\np",
            "unknown key(s) opaque",
        ),
        (
            "---\nid: x\ntool_calls:\n  - {tool_name: a, allow_multiple: maybe}\n---\np",
            "allow_multiple",
        ),
        ("---\nid: x\nstrategies: [Box!]\n---\np", "key 'strategies'"),
        ("---\nid: x\nsink_exact:\n  - {tool_name: a}\n---\np", "key 'sink_exact[0]'"),
        ("---\nid: x\noffline_plan:\n  - {call: a}\n---\np", "key 'offline_plan'"),
    ],
)
def test_bad_case_files_name_the_file_and_key(tmp_path, text, message) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(CaseError) as err:
        load_case(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_all_shipped_cases_load() -> None:
    ids = {c.id for c in load_cases()}
    assert set(REFERENCE_CASES) <= ids
    assert {"sql1", "sql2", "sql3", "web2", "pipe1", "two1"} <= ids


def _case(case_id):
    return next(c for c in load_cases() if c.id == case_id)


def _run(case, strategy, store, plan=None):
    model = OfflineModel({case.prompt: plan or case.offline_plan})
    return run_case(
        case, strategy, client=offline_client(model), model="offline-reference", store=store
    )


@pytest.mark.parametrize("case_id", REFERENCE_CASES)
def test_reference_cases_pass_under_box(case_id, store) -> None:
    run = _run(_case(case_id), "box", store)
    assert run.passed, run.validation.reasons


def test_wrong_order_fails(store) -> None:
    case = copy.deepcopy(_case("case1"))
    case.tool_calls.reverse()
    run = _run(case, "box", store)
    assert (
        not run.passed
        and "expected calls ['deep_check', 'yt_transcribe']" in run.validation.summary()
    )


def test_forbidden_tool_fails(store) -> None:
    case = _case("case2")
    plan = copy.deepcopy(case.offline_plan)
    plan.insert(1, {"call": "deep_check", "args": {"text": {"result": 1}}})
    plan[-1] = {"answer": "done"}
    run = _run(case, "box", store, plan)
    assert "forbidden tool(s) called: deep_check" in run.validation.summary()


def test_full_read_fails_where_a_slice_was_expected(store) -> None:
    case = _case("case3")
    plan = [*case.offline_plan[:2], {"read": 1, "as": "ending"}, {"answer": "{ending|last_number}"}]
    run = _run(case, "box", store, plan)
    reasons = run.validation.summary()
    assert "forbidden tool(s) called: internal_resource_read" in reasons
    assert "expected calls" in reasons  # the slice never came


def test_plain_value_where_a_reference_was_expected_fails(store) -> None:
    case = copy.deepcopy(_case("case1"))
    case.strategies = None  # apply the box expectations to an inline run
    run = _run(case, "inline", store)
    reasons = run.validation.summary()
    assert (
        "yt_transcribe: expected its result to be a reference, the model saw a inline value"
        in reasons
    )
    assert "deep_check: expected a reference as input, got plain values" in reasons


def test_reference_where_plain_value_was_expected_fails(store) -> None:
    case = copy.deepcopy(_case("case0"))
    run = run_case(
        case,
        "box",
        client=offline_client(
            OfflineModel(
                {
                    case.prompt: [
                        {"call": "yt_transcribe", "args": {"video_id": "123"}},
                        {"call": "deep_check", "args": {"text": {"result": 1}}},
                        {"answer": "{result2}"},
                    ]
                }
            )
        ),
        model="m",
        store=store,
    )
    assert "expected its result to be no reference" in run.validation.summary()


def test_sink_not_byte_exact_fails(store) -> None:
    for case_id in ("case1", "case2", "case4"):
        run = _run(_case(case_id), "middle", store)
        assert not run.passed and run.validation.sinks_exact is False
        assert "is not byte-exact yt_transcribe output" in run.validation.summary()


def test_web1_count_mode_allows_more_greps_but_not_fewer(store) -> None:
    case = _case("web1")
    twice = [
        case.offline_plan[0],
        {**case.offline_plan[1], "as": "a"},
        {**case.offline_plan[1], "as": "images"},
        case.offline_plan[2],
    ]
    assert _run(case, "box", store, twice).passed  # allow_multiple: more greps are fine
    none = [case.offline_plan[0], {"answer": 'alt="Logo"'}]
    assert (
        "expected internal_resource_grep 1+ time(s), got 0"
        in _run(case, "box", store, none).validation.summary()
    )


def test_case_without_expectations_allows_no_tool_calls(tmp_path, store) -> None:
    case = load_case(
        _write(
            tmp_path,
            "---\nid: chat\noffline_plan:\n  - call: yt_transcribe\n    args: {video_id: '999'}\n  - answer: hi\n---\nSay hi.",
        )
    )
    assert "no tool calls allowed" in _run(case, "box", store).validation.summary()


def test_answer_contains(store) -> None:
    case = _case("case3")
    plan = [*case.offline_plan[:3], {"answer": "I do not know."}]
    assert "answer lacks 'is 6065'" in _run(case, "box", store, plan).validation.summary()


def test_a_case_naming_an_unregistered_strategy_is_refused_before_anything_runs(tmp_path) -> None:
    """A typo in ``strategies`` would switch the case's checks off quietly: the registry refuses
    it when the case runs, naming the file and the known strategies."""
    from helpers.cases.case_files import CaseError
    from helpers.evaluation.runs import run_cases

    path = _write(tmp_path, "---\nid: x\nstrategies: [bxo]\n---\np")
    [case] = load_cases(str(path))
    with pytest.raises(
        CaseError, match=r"names bxo, not a strategy or a family \(one of inline, truncate, box"
    ):
        run_cases([case], ["box"], client=None, model="m", store=None)  # type: ignore[arg-type]
