"""The offline reference model over the mock transport and over real loopback HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request

import openai
import pytest
from hang import HANG_GUARD_S

from helpers.context.policies import make_policy
from helpers.loop.agent import run_turn
from helpers.models.offline import NO_PLAN_ANSWER, OfflineModel, PlanError, offline_client
from helpers.models.offline_server import OfflineServer
from helpers.tokens import count_chat_tokens
from helpers.tooling.tools import default_registry

CASE1 = "Generate a transcript of the YouTube video with video_id='123' and then pass it to Deep Check for analysis."


def test_chat_completion_shape_and_usage(client) -> None:
    messages = [{"role": "user", "content": CASE1}]
    response = client.chat.completions.create(model="offline-reference", messages=messages)
    assert response.object == "chat.completion"
    call = response.choices[0].message.tool_calls[0]
    assert call.function.name == "yt_transcribe" and json.loads(call.function.arguments) == {
        "video_id": "123"
    }
    assert response.choices[0].finish_reason == "tool_calls" and call.id.startswith("call_")
    assert response.usage.prompt_tokens == count_chat_tokens(messages)
    assert response.usage.completion_tokens > 0


def test_unknown_prompt_gets_a_plain_answer(client) -> None:
    response = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Write a poem"}]
    )
    assert response.choices[0].message.content == NO_PLAN_ANSWER
    assert "configure a real model in .env" in NO_PLAN_ANSWER


def test_orphan_tool_message_is_rejected_like_the_api(client) -> None:
    with pytest.raises(openai.BadRequestError, match="must be a response to a preceding"):
        client.chat.completions.create(
            model="m",
            messages=[
                {"role": "user", "content": "x"},
                {"role": "tool", "tool_call_id": "call_1", "content": "y"},
            ],
        )


def test_a_failed_tool_makes_the_model_say_so(registry, store) -> None:
    model = OfflineModel(
        {
            "p": [
                {"call": "get_page", "args": {"url": "https://nowhere.invalid/"}},
                {"answer": "{result1}"},
            ]
        }
    )
    rec = run_turn(
        "p",
        client=offline_client(model),
        model="m",
        policy=make_policy("box"),
        registry=registry,
        store=store,
    )
    assert rec.ok and "get_page returned an error" in rec.answer and "404" in rec.answer


def test_bad_plans_are_refused() -> None:
    with pytest.raises(PlanError, match="must be an answer"):
        OfflineModel({"p": [{"call": "x"}]})
    with pytest.raises(PlanError, match="exactly one of"):
        OfflineModel({"p": [{"jump": 1}, {"answer": "a"}]})


def test_the_same_turn_over_loopback_http(registry, store) -> None:
    with OfflineServer() as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(server.base_url + "/models") as reply:
            assert json.load(reply)["data"][0]["id"] == "offline-reference"
        client = openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)
        rec = run_turn(
            CASE1,
            client=client,
            model="offline-reference",
            policy=make_policy("box"),
            registry=registry,
            store=store,
        )
    assert rec.ok and rec.tool_calls[0].result.startswith("internal://")
    assert "received 10" in rec.answer


def test_server_listens_only_on_loopback() -> None:
    with pytest.raises(ValueError, match="loopback"):
        OfflineServer(host="0.0.0.0")


def test_a_request_over_the_context_window_is_refused_as_openai_does(store) -> None:
    model = OfflineModel(context_window_tokens=3_000)
    raw = offline_client(model).chat.completions.with_raw_response
    messages = [{"role": "user", "content": "word " * 5_000}]
    with pytest.raises(openai.BadRequestError) as refused:
        raw.create(model="offline-reference", messages=messages)
    error = refused.value.body
    assert refused.value.status_code == 400 and refused.value.code == "context_length_exceeded"
    assert error["param"] == "messages" and error["type"] == "invalid_request_error"
    assert error["message"].startswith("This model's maximum context length is 3000 tokens.")
    record = run_turn(
        "Generate a transcript of the YouTube video with video_id='123' and then pass it to Deep "
        "Check for analysis.",
        client=offline_client(model),
        model="offline-reference",
        policy=make_policy("inline"),
        registry=default_registry(),
        store=store,
    )
    assert record.status == "context_exceeded" and "context window" in record.error
    assert [t.name for t in record.tool_calls] == ["yt_transcribe"]  # it failed on the next call


def test_large_cases_overflow_inline_and_pass_boxed(tmp_path) -> None:
    """The large cases at a tenth of their size, in a window scaled down with them."""
    env = {
        **os.environ,
        "WORKBOOK_PROFILE": "offline",
        "OFFLINE_CONTEXT_WINDOW": "12000",
        "WORKBOOK_DOCUMENT_SCALE": "0.1",
        "WORKBOOK_VAR_DIR": str(tmp_path),
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "helpers.course.cli",
            "cases",
            "data/cases/large/*.md",
            "--strategy",
            "all",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_GUARD_S,
    )
    runs = json.loads(done.stdout)["runs"]
    by = {(r["case"], r["strategy"]): r for r in runs}
    for case in (
        "unicode_save",
        "unicode_lookup",
        "unicode_check",
        "unicode_fanout",
        "iso639_save",
        "sql_all",
    ):
        assert by[(case, "box")]["passed"], by[(case, "box")]["reasons"]
        assert by[(case, "inline")]["status"] == "context_exceeded", case
        assert not by[(case, "truncate")]["passed"], case
