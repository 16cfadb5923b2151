"""Caps on fan-out and growth (helpers/base/limits.py), and scanning in linear time.

A scripted provider on loopback sends what a hostile or looping model sends: hundreds of tool
calls in one reply, reply after reply of them, outputs that would fill the store. Each cap ends in
an error result the model can act on, the turn goes on, and nothing is stored half-way.
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

import openai
import pytest
from provider import ScriptedProvider, completion, tool_call

from devtools.bench import HOSTILE_ARGUMENT_SHAPES, hostile_argument
from helpers.base.limits import MAX_TOOL_CALLS_PER_REPLY, TurnLimits
from helpers.context.strategies import build_policy
from helpers.loop.agent import Agent, RunConfig, run_turn
from helpers.loop.dispatch import dispatch
from helpers.store.quotas import StoreQuotaExceeded
from helpers.store.tool_outputs import ToolOutputStore
from helpers.tooling.registry import ToolContext
from helpers.tooling.tools import default_registry

SHORT = {"video_id": "999"}  # a short transcript: cheap to run many times
LONG = {"video_id": "123"}  # about 10,000 characters


def say(reply: Any) -> Any:
    return lambda _request: reply


def calls(n: int, arguments: dict[str, Any] = SHORT, tool: str = "yt_transcribe") -> Any:
    return say(completion(tool_calls=[tool_call(tool, arguments, f"p{i}") for i in range(n)]))


def turn(
    provider: ScriptedProvider, store: ToolOutputStore, thread_id: str | None = None, **config: Any
) -> Any:
    client = openai.OpenAI(base_url=provider.base_url, api_key="k", max_retries=0)
    agent = Agent(client, "m", build_policy("box"), default_registry(), store)
    return run_turn("Transcribe.", agent, RunConfig(**config), thread_id=thread_id)


@pytest.fixture
def store(tmp_path) -> ToolOutputStore:
    return ToolOutputStore(f"sqlite:///{tmp_path / 'store.sqlite'}")


def test_320_calls_in_one_reply_run_16_and_the_rest_are_told_why(store) -> None:
    with ScriptedProvider([calls(320), say(completion("done"))]) as provider:
        record = turn(provider, store)
    assert record.status == "ok"
    ran = [c for c in record.tool_calls if c.ran]
    refused = [c for c in record.tool_calls if not c.ran]
    assert len(ran) == MAX_TOOL_CALLS_PER_REPLY == 16 and len(refused) == 304
    assert store.count(record.thread_id) == 16
    assert all("refused_over_limit" in c.guards for c in refused)
    error = json.loads(refused[0].result)["error"]
    assert "320 tool calls" in error and "limit of 16 per reply" in error
    answered = {m["tool_call_id"] for m in record.messages if m["role"] == "tool"}
    assert answered == {c.id for c in record.tool_calls}  # every call has its result: no orphan


def test_calls_per_turn_are_capped_over_all_replies(store) -> None:
    steps = [calls(10)] * 5 + [say(completion("done"))]
    with ScriptedProvider(steps) as provider:
        limits = TurnLimits(max_tool_calls_per_turn=25, max_identical_replies=None)
        record = turn(provider, store, limits=limits)
    assert record.status == "ok"
    assert sum(c.ran for c in record.tool_calls) == 25 and store.count(record.thread_id) == 25
    last = json.loads(record.tool_calls[-1].result)["error"]
    assert "made 25 tool calls, the limit per turn" in last


def test_bytes_stored_per_turn_are_capped_and_nothing_is_half_stored(store) -> None:
    with ScriptedProvider([calls(8, LONG), say(completion("done"))]) as provider:
        record = turn(provider, store, limits=TurnLimits(max_stored_bytes_per_turn=35_000))
    kept = store.list_thread(record.thread_id)
    assert len(kept) == 3  # about 10,300 bytes each with its arguments
    refused = [c for c in record.tool_calls if c.error]
    assert len(refused) == 5 and all(c.ran for c in refused)  # they ran; their output was not kept
    assert "limit of 35,000 bytes per turn" in refused[0].error
    assert sum(r.n_bytes for r in kept) <= 35_000


def test_a_call_the_byte_cap_refuses_keeps_the_guards_its_steps_reported(store) -> None:
    """The turn's byte cap refuses a call after its tool ran: what each step of the call
    reported (the policy's repair of a wrapped reference, the check's note that it ran out of
    steps, the tool's own effects) is on its record before ``refused_over_limit``, as on any
    refusal; nothing goes into the turn's state (the model got no output, so nothing was
    fetched or shown)."""
    from helpers.loop.turn_state import TurnState
    from helpers.tooling.effects import CallEffects, Reported
    from helpers.tooling.registry import Tool, ToolRegistry

    levels = {f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}] * 2} for i in range(40)}
    schema = {  # 2**40 paths: the check runs out of its steps
        "type": "object",
        "$defs": {**levels, "d40": {"type": "string"}},
        "properties": {"text": {"type": "string"}, "x": {"$ref": "#/$defs/d0"}},
        "required": ["text"],
    }
    effects = CallEffects(guards=("arguments_double_encoded",), fetched=frozenset({"call_x"}))
    tool = Tool(
        "srv_keep", "a server's tool", schema, server="srv",
        fn=lambda text, x: Reported(text * 2, effects),
    )  # fmt: skip
    row = store.log_tool("t-cap", "call_src", "src", "{}", "v" * 3_000)
    state = TurnState()
    record = dispatch(
        "call_cap",
        tool.name,
        json.dumps({"text": f"`internal://{row.ref_id}`", "x": 1}),
        ToolRegistry([tool]),
        build_policy("box"),
        ToolContext(store=store, thread_id="t-cap", limits=TurnLimits(max_stored_bytes_per_turn=1)),
        state=state,
    )
    assert record.ran and "not kept" in (record.error or "")
    assert record.guards == [
        "reference_unwrapped",
        "arguments_check_unfinished",
        "arguments_double_encoded",
        "refused_over_limit",
    ]
    assert state.fetched == set() and state.shown_references == set()
    assert store.get("t-cap", "call_cap") is None


def test_a_thread_over_its_store_quota_gets_a_clear_error(store) -> None:
    limits = TurnLimits(max_stored_bytes_per_thread=25_000)
    with ScriptedProvider([calls(1, LONG), say(completion("done"))] * 3) as provider:
        first = turn(provider, store, limits=limits)
        second = turn(provider, store, limits=limits, thread_id=first.thread_id)
        third = turn(provider, store, limits=limits, thread_id=first.thread_id)
    assert first.tool_calls[0].error is None and second.tool_calls[0].error is None
    error = third.tool_calls[0].error
    assert error and "quota of 25,000 bytes" in error and "not stored" in error
    assert store.count(first.thread_id) == 2 and store.thread_bytes(first.thread_id) <= 25_000
    assert third.status == "ok"  # the model read the error and answered


def test_the_quota_is_checked_in_the_write_itself(store) -> None:
    """The quota counts UTF-8 bytes of the arguments and the output: ``{}`` is 2 bytes."""
    store.log_tool("t", "c1", "x", "{}", "a" * 598, max_thread_bytes=1_000)  # 600 bytes
    with pytest.raises(StoreQuotaExceeded, match="quota of 1,000 bytes"):
        store.log_tool("t", "c2", "x", "{}", "é" * 200, max_thread_bytes=1_000)  # 402 bytes
    assert store.count("t") == 1 and store.get("t", "c2") is None
    store.log_tool("t", "c3", "x", "{}", "b" * 398, max_thread_bytes=1_000)  # exactly full
    assert store.thread_bytes("t") == 1_000


def test_arguments_count_against_the_thread_quota(store) -> None:
    """A model cannot grow a thread through its arguments: they are stored, so they count, in
    bytes (é is two)."""
    args = json.dumps({"text": "é" * 250_000}, ensure_ascii=False)  # 500,012 bytes
    store.log_tool("t", "c1", "x", args, "ok", max_thread_bytes=1_100_000)
    store.log_tool("t", "c2", "x", args, "ok", max_thread_bytes=1_100_000)
    assert store.thread_bytes("t") == 2 * (len(args.encode()) + 2)
    with pytest.raises(StoreQuotaExceeded, match="tool calls and outputs"):
        store.log_tool("t", "c3", "x", args, "ok", max_thread_bytes=1_100_000)
    assert store.count("t") == 2


@pytest.mark.parametrize("bad", [0, -1, 1.5, "16"])
def test_limits_are_whole_numbers(bad) -> None:
    with pytest.raises(ValueError, match="whole number"):
        TurnLimits(max_tool_calls_per_reply=bad)


# -- scanning a model's text in linear time ----------------------------------------------------

_CALL_NUMBERS = itertools.count()


def _seconds(strategy: str, raw: str, store: ToolOutputStore) -> float:
    policy = build_policy(strategy)
    tools = default_registry().merged(policy.internal_tools())
    best = float("inf")
    for _ in range(3):
        ctx = ToolContext(store=store, thread_id=f"t-{strategy}", secrets=("sk-" + "Q" * 30,))
        started = time.process_time()  # CPU seconds: a busy machine's waits are not counted
        record = dispatch(f"call_{next(_CALL_NUMBERS)}", "deep_check", raw, tools, policy, ctx)
        best = min(best, time.process_time() - started)
        assert record.ran and record.result_kind != "error", record.result
    return best


@pytest.mark.parametrize("strategy", ["inline", "truncate", "box", "box-json"])
def test_a_1_mb_argument_costs_about_ten_times_a_100_kb_one(strategy, store) -> None:
    """Linear, not quadratic: ten times the text takes about ten times as long (a quadratic scan
    would take a hundred). The absolute figure (under 1 s for 1 MB) is measured by make bench."""
    store.log_tool(f"t-{strategy}", "call_long", "yt_transcribe", "{}", "x" * 20_000)
    for name in HOSTILE_ARGUMENT_SHAPES:
        small = _seconds(strategy, hostile_argument(name, 99_000), store)
        large = _seconds(strategy, hostile_argument(name, 990_000), store)
        assert large < max(small, 0.002) * 30, f"{name}: {small:.4f} s → {large:.4f} s"


def test_a_model_repeating_the_same_calls_is_stopped_early_and_told_why(store) -> None:
    """The same call three replies in a row (key order aside): the third is answered with an
    error, unrun, and the turn ends max_iterations saying so, long before max_iterations."""
    same = [
        say(completion(tool_calls=[tool_call("yt_transcribe", {"video_id": "999"}, "p1")])),
        say(completion(tool_calls=[tool_call("yt_transcribe", '{"video_id":"999"}', "p2")])),
        say(completion(tool_calls=[tool_call("yt_transcribe", '{ "video_id": "999" }', "p3")])),
        say(completion("never asked")),
    ]
    with ScriptedProvider(same) as provider:
        record = turn(provider, store, max_iterations=20)
        asked = len(provider.requests)
    assert record.status == "max_iterations" and asked == 3
    assert "same tool calls (yt_transcribe) 3 replies in a row" in record.error
    ran, refused = record.tool_calls[:2], record.tool_calls[2]
    assert all(not c.guards for c in ran) and refused.guards == ["refused_repeated_calls"]
    assert "Use it, or answer with what you have" in refused.result
    # every call has its result: the thread can go on
    answered = {m["tool_call_id"] for m in record.messages if m["role"] == "tool"}
    assert answered == {c.id for c in record.tool_calls}


def test_calls_that_change_are_not_repeats(store) -> None:
    steps = [calls(1, {"video_id": str(i)}) for i in range(5)] + [say(completion("done"))]
    with ScriptedProvider(steps) as provider:
        record = turn(provider, store, max_iterations=20)
    assert record.ok and len(record.tool_calls) == 5
    lifted = [calls(1)] * 4 + [say(completion("done"))]
    with ScriptedProvider(lifted) as provider:
        record = turn(provider, store, limits=TurnLimits(max_identical_replies=None))
    assert record.ok and len(record.tool_calls) == 4
