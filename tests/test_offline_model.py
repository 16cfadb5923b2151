"""The offline reference model over the mock transport and over real loopback HTTP."""

from __future__ import annotations

import json
import urllib.request

import openai
import pytest

from helpers.agent import run_turn
from helpers.offline import NO_PLAN_ANSWER, OfflineModel, OfflineServer, PlanError, offline_client
from helpers.policies import make_policy
from helpers.tokens import count_chat_tokens

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
