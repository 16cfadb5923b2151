"""The agent turn through the real openai client: the offline model, and scripted bad models."""

from __future__ import annotations

import hashlib
import json

import httpx2
import openai
import pytest
from provider import scripted_client, tool_calls

from helpers.base.limits import TurnLimits
from helpers.cases.case_files import load_cases
from helpers.context.strategies import build_policy
from helpers.loop.agent import Agent, RunConfig, run_turn
from helpers.tooling.outbox import read_outbox
from helpers.tooling.tools import yt_transcribe

CASE1 = "Generate a transcript of the YouTube video with video_id='123' and then pass it to Deep Check for analysis."
LONG = yt_transcribe("123")


def _turn(prompt, client, registry, store, strategy, **kw):
    return run_turn(
        prompt, Agent(client, "offline-reference", build_policy(strategy, **kw), registry, store)
    )


def test_case1_under_each_strategy(client, registry, store) -> None:
    sha = hashlib.sha256(LONG.encode()).hexdigest()[:16]
    records = {
        s: _turn(CASE1, client, registry, store, s) for s in ("inline", "truncate", "box-tcr")
    }
    for strategy, rec in records.items():
        assert rec.ok, (strategy, rec.error)
        assert f"received {len(LONG)} chars" in rec.answer and sha in rec.answer
    box = records["box-tcr"]
    assert [t.name for t in box.tool_calls] == ["yt_transcribe", "deep_check"]
    ref = box.tool_calls[0].result
    assert ref.startswith("internal://") and json.loads(box.tool_calls[1].arguments) == {
        "text": ref
    }
    trunc = records["truncate"]
    assert [t.name for t in trunc.tool_calls] == [
        "yt_transcribe",
        "fetch_tool_output",
        "deep_check",
    ]
    assert json.loads(trunc.tool_calls[2].arguments) == {"text": LONG}
    assert json.loads(records["inline"].tool_calls[1].arguments) == {"text": LONG}
    p = {s: r.usage()["prompt_tokens"] for s, r in records.items()}
    assert p["box-tcr"] < p["truncate"] and p["box-tcr"] < p["inline"]
    for rec in records.values():  # usage is real: one model call per step, tokens counted
        assert rec.usage()["calls"] == len(rec.model_calls) == len(rec.tool_calls) + 1


def test_short_transcript_is_never_boxed_or_truncated(client, registry, store) -> None:
    prompt = CASE1.replace("'123'", "'999'")
    for strategy in ("inline", "truncate", "box"):
        rec = _turn(prompt, client, registry, store, strategy)
        assert rec.ok and [t.result_kind for t in rec.tool_calls] == ["inline", "inline"]
        assert json.loads(rec.tool_calls[1].arguments) == {"text": yt_transcribe("999")}


def test_every_case_runs_under_every_strategy(client, registry, store) -> None:
    """Every regular case completes under each strategy, but where the model must copy a value
    longer than one response holds (gpt-4o's 16,384 output tokens) into a tool call: there the
    call is cut and refused, never under box (the reference is copied instead)."""
    for case in load_cases():
        for strategy in ("inline", "truncate", "box"):
            rec = _turn(case.prompt, client, registry, store, strategy)
            if any(c.cut_in_call for c in rec.model_calls):
                assert strategy != "box", case.id
                continue
            assert rec.ok, (case.id, strategy, rec.error)
            assert not [t for t in rec.tool_calls if t.result_kind == "error"], (case.id, strategy)


def test_routing_writes_the_byte_exact_transcript(client, registry, store) -> None:
    case2 = next(c for c in load_cases() if c.id == "case2")
    for strategy in ("inline", "truncate", "box"):
        assert _turn(case2.prompt, client, registry, store, strategy).ok
        assert read_outbox("transcript.txt") == LONG


def test_case3_reads_only_a_slice_under_box(client, registry, store) -> None:
    case3 = next(c for c in load_cases() if c.id == "case3")
    rec = _turn(case3.prompt, client, registry, store, "box-tcr")
    names = [t.name for t in rec.tool_calls]
    assert "internal_resource_read_slice" in names and "internal_resource_read" not in names
    assert rec.answer.endswith(f"is {LONG.split()[-1]}.")


def test_bad_tool_calls_become_error_results_and_the_turn_goes_on(registry, store) -> None:
    client, seen = scripted_client(
        [
            tool_calls(
                ("c1", "deep_check", '{"text": "unterminated'),
                ("c2", "no_such_tool", "{}"),
                ("c3", "deep_check", '{"txt": "x"}'),
                ("c4", "get_page", '{"url": "https://nowhere.invalid/"}'),
                ("c5", "deep_check", '["not", "an", "object"]'),
                ("c6", "deep_check", '{"text": "fine"}'),
            ),
            {"role": "assistant", "content": "done"},
        ]
    )
    rec = run_turn("x", Agent(client, "scripted", build_policy("box-tcr"), registry, store))
    assert rec.ok and rec.answer == "done"
    errors = [json.loads(t.result).get("error", "") for t in rec.tool_calls[:5]]
    assert "malformed JSON arguments" in errors[0]
    assert "unknown tool 'no_such_tool'" in errors[1] and "deep_check" in errors[1]
    assert (
        "missing required argument(s): text" in errors[2]
        and "unexpected argument(s): txt" in errors[2]
    )
    assert "get_page failed: PageNotFound: 404" in errors[3]
    assert "JSON object" in errors[4]
    assert rec.tool_calls[5].result_kind == "inline"
    # the model saw one tool message per call, paired with the client's id for it, in the
    # second request; the provider's ids are kept on the records
    echoed = next(m for m in seen[1]["messages"] if m.get("tool_calls"))
    tool_msgs = [m for m in seen[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == [c["id"] for c in echoed["tool_calls"]]
    assert [t.id for t in rec.tool_calls] == [m["tool_call_id"] for m in tool_msgs]
    assert [t.provider_id for t in rec.tool_calls] == ["c1", "c2", "c3", "c4", "c5", "c6"]


def test_max_iterations_stops_a_looping_model(registry, store) -> None:
    client, _ = scripted_client([tool_calls(("c", "yt_transcribe", '{"video_id": "999"}'))])
    # the same provider id every time: each call still runs under an id of its own
    rec = run_turn(
        "x",
        Agent(client, "scripted", build_policy("truncate"), registry, store),
        RunConfig(max_iterations=3, limits=TurnLimits(max_identical_replies=None)),
    )
    assert rec.status == "max_iterations" and rec.answer is None and len(rec.model_calls) == 3
    assert all(t.ran and t.result_kind == "inline" for t in rec.tool_calls)
    assert len({t.id for t in rec.tool_calls}) == 3
    assert rec.guard_counts() == {"tool_call_id_replaced": 2}


def test_endpoint_failure_is_a_failed_record_not_a_crash(registry, store) -> None:
    def handler(request):
        return httpx2.Response(500, json={"error": {"message": "boom"}})

    client = openai.OpenAI(
        base_url="http://x.invalid/v1",
        api_key="k",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    rec = run_turn("x", Agent(client, "m", build_policy("inline"), registry))
    assert rec.status == "error" and "InternalServerError" in rec.error


def test_one_agent_runs_many_turns_each_with_its_own_configuration(client, registry, store) -> None:
    """What is built once (client, model, policy, tools, store) is the Agent; what may change
    per turn is a RunConfig. A second turn in the same thread routes the first turn's
    reference; a turn with max_iterations=1 stops, as run_turn would."""
    agent = Agent(client, "offline-reference", build_policy("box-tcr"), registry, store)
    first = agent.run(CASE1)
    assert first.ok and first.tool_calls[0].result.startswith("internal://"), first.error
    second = agent.run(CASE1, thread_id=first.thread_id, config=RunConfig(few_shot=False))
    assert second.ok and second.thread_id == first.thread_id
    assert "Example" not in second.messages[0]["content"]  # no few-shot examples this turn
    short = agent.run(CASE1, config=RunConfig(max_iterations=1))
    assert short.status == "max_iterations" and len(short.model_calls) == 1
    same = _turn(CASE1, client, registry, store, "box-tcr")
    assert [t.name for t in same.tool_calls] == [t.name for t in first.tool_calls]  # an Agent
    assert same.messages[0] == first.messages[0] and same.tool_schemas == first.tool_schemas
    with pytest.raises(ValueError, match="needs a ToolOutputStore"):
        Agent(client, "offline-reference", build_policy("box-tcr"), registry)


def test_cached_tokens_a_provider_reports_reach_the_record_and_the_metrics(registry, store) -> None:
    """Real caching is read, not assumed: each model call keeps the cached prompt tokens its
    response reported, and a run's metrics sum them beside the workbook's estimate."""
    from provider import ScriptedProvider, completion

    from helpers.evaluation.compare import run_metrics
    from helpers.evaluation.pricing import load_prices
    from helpers.evaluation.runs import CaseRun
    from helpers.evaluation.validation import validate

    usages = [
        {
            "prompt_tokens": 3000,
            "completion_tokens": 9,
            "prompt_tokens_details": {"cached_tokens": 0},
        },
        {
            "prompt_tokens": 3100,
            "completion_tokens": 4,
            "prompt_tokens_details": {"cached_tokens": 2944},
        },
    ]
    steps = [
        lambda _r: completion(
            tool_calls=[
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "yt_transcribe", "arguments": '{"video_id": "123"}'},
                }
            ],
            usage=usages[0],
        ),
        lambda _r: completion("done", usage=usages[1]),
    ]
    record = run_turn(
        "x",
        Agent(
            ScriptedProvider(steps).client(), "scripted", build_policy("box-tcr"), registry, store
        ),
    )
    assert [c.cached_tokens_reported for c in record.model_calls] == [0, 2944]
    case = load_cases()[0]
    metrics = run_metrics(
        CaseRun(case, "box", record, validate(case, record)), load_prices().get("gpt-4o")
    )
    assert metrics.cached_tokens_reported == 2944
    assert metrics.cached_tokens is not None and metrics.usd_cached_warm is not None
    assert metrics.usd_cached_warm <= (metrics.usd_cached or 0)


def test_a_bug_ends_the_turn_with_a_verdict_naming_where(
    client, registry, store, monkeypatch, capsys
) -> None:
    """An exception from inside the library is the turn's ``error`` verdict, naming the file and
    line it came from; ``WORKBOOK_DEBUG=1`` prints the whole traceback on standard error."""
    policy = build_policy("box")

    def broken(*_args, **_kwargs):
        raise KeyError("no such thing")

    monkeypatch.setattr(policy, "messages_for_call", broken)  # asked before each model call
    agent = Agent(client, "offline-reference", policy, registry, store)
    [case] = load_cases("data/cases/case1.md")
    record = run_turn(case.prompt, agent)
    assert record.status == "error" and "KeyError: 'no such thing' (at " in record.error
    assert "test_agent.py:" in record.error and capsys.readouterr().err == ""
    monkeypatch.setenv("WORKBOOK_DEBUG", "1")
    run_turn(case.prompt, agent)
    assert "Traceback (most recent call last)" in capsys.readouterr().err
