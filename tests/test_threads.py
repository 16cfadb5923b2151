"""Threads that continue: messages stored, replayed in a new process, repaired, compacted."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hang import HANG_GUARD_S
from provider import ScriptedProvider, completion, tool_call, tool_messages

from helpers.context.strategies import build_policy
from helpers.loop.agent import Agent, RunConfig, run_turn
from helpers.loop.threads import INTERRUPTED_RESULT, ThreadError, open_thread, repair_pairing
from helpers.models.offline import offline_client
from helpers.store.tool_outputs import ToolOutputStore

CASE1 = "Generate a transcript of the YouTube video with video_id='123' and then pass it to Deep Check for analysis."


def _workbook(provider: ScriptedProvider, db: str, *args: str) -> dict:
    env = {
        **os.environ,
        "WORKBOOK_PROFILE": "local",
        "LOCAL_BASE_URL": provider.base_url,
        "LOCAL_MODEL": "scripted-model",
        "NO_COLOR": "1",
    }
    done = subprocess.run(
        [sys.executable, "-m", "helpers.cli", "ask", *args, "--json", "--db", db],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_GUARD_S,
    )
    data = json.loads(done.stdout)
    data["exit_code"] = done.returncode
    return data


def test_two_processes_one_conversation(tmp_path) -> None:
    db = f"sqlite:///{tmp_path / 'threads.sqlite'}"
    transcribe = completion(tool_calls=[tool_call("yt_transcribe", {"video_id": "123"})])
    with ScriptedProvider([lambda r: transcribe, lambda r: completion("Transcribed.")]) as p1:
        first = _workbook(p1, db, "Transcribe video 123.", "--thread", "T-42", "--new-thread")
    assert first["exit_code"] == 0 and first["thread_id"] == "T-42"

    def check(request: dict) -> dict:
        ref = tool_messages(request)[0]["content"].split("\n", 1)[0]  # the reference line
        return completion(tool_calls=[tool_call("deep_check", {"text": ref})])

    with ScriptedProvider([check, lambda r: completion("Checked.")]) as p2:
        second = _workbook(p2, db, "Deep Check it.", "--thread", "T-42")
        opening = p2.chat_requests[0]["messages"]
    assert second["exit_code"] == 0 and second["answer"] == "Checked."
    # the new process's first request carries the first turn, in order
    assert [m["role"] for m in opening] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]
    assert opening[1]["content"] == "Transcribe video 123."
    assert opening[3]["content"] == first["tool_calls"][0]["result"]
    assert opening[2]["tool_calls"][0]["id"] == first["tool_calls"][0]["id"]
    # and the reference from the first process resolved, byte for byte
    store = ToolOutputStore(db)
    row = store.get("T-42", first["tool_calls"][0]["id"])
    assert second["tool_calls"][0]["received_sha256"]["text"] == row.sha256
    assert len(store.thread_messages("T-42")) == 8  # 2 turns × (user, call, result, answer)


def test_an_interrupted_turn_is_repaired_before_replay() -> None:
    messages = [
        {"role": "system", "content": "old system"},
        {"role": "user", "content": "do two things"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "x", "arguments": "{}"}},
                {"id": "call_b", "type": "function", "function": {"name": "y", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "A"},
        {"role": "tool", "tool_call_id": "call_zombie", "content": "orphan"},
    ]
    repaired = repair_pairing(messages)
    assert [m["role"] for m in repaired] == ["user", "assistant", "tool", "tool"]
    assert repaired[2]["content"] == "A"
    assert repaired[3] == {"role": "tool", "tool_call_id": "call_b", "content": INTERRUPTED_RESULT}


def test_a_failed_turn_can_be_continued(store, registry) -> None:
    # the endpoint dies after the first tool call: the thread keeps what happened
    import openai

    from helpers.models.offline_server import Fault, OfflineServer

    with OfflineServer(faults=[Fault("delay", delay_s=0.0), Fault("status", status=500)]) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="none", max_retries=0)
        failed = run_turn(
            CASE1,
            Agent(client, "offline-reference", build_policy("box"), registry, store),
            thread_id="T-fail",
        )
    assert failed.status == "error"
    thread_id, history = open_thread(store, "T-fail")
    assert [m["role"] for m in history] == ["user", "assistant", "tool"]
    again = Agent(offline_client(), "offline-reference", build_policy("box"), registry, store).run(
        CASE1, thread_id=thread_id, history=history
    )
    assert again.ok and again.history_messages == 3 and "received 10244 chars" in again.answer


def test_open_thread_rules(store) -> None:
    fresh, history = open_thread(store)
    assert fresh.startswith("thread_") and history == []
    with pytest.raises(ThreadError, match="unknown thread"):
        open_thread(store, "never-seen")
    assert open_thread(store, "brand-new", new=True) == ("brand-new", [])
    store.ensure_thread("brand-new")
    with pytest.raises(ThreadError, match="already exists"):
        open_thread(store, "brand-new", new=True)
    with pytest.raises(ThreadError, match="Did you mean brand-new"):
        open_thread(store, "brand-nwe")
    with pytest.raises(ThreadError, match="empty"):
        open_thread(store, " ")
    # a thread from before messages were stored (tool outputs only) still counts
    store.log_tool("legacy-thread", "call_1", "x", {}, "v")
    assert open_thread(store, "legacy-thread") == ("legacy-thread", [])


def test_compaction_applies_to_a_replayed_history(store, registry, client) -> None:
    from helpers.loop.agent import CompactionSettings

    thread = "T-compact"
    store.ensure_thread(thread)
    for _ in range(3):
        _, history = open_thread(store, thread)
        turn = Agent(client, "offline-reference", build_policy("inline"), registry, store).run(
            CASE1,
            thread_id=thread,
            history=history,
            config=RunConfig(compaction=CompactionSettings(threshold_tokens=4_000, keep_last=1)),
        )
        assert turn.ok
    assert turn.history_messages == 12  # two earlier turns of six messages
    assert any(c["folded_calls"] >= 3 for c in turn.compactions), turn.compactions
    assert store.thread_messages(thread)[0]["content"] == CASE1  # the store keeps it all


@pytest.mark.parametrize("length", [1, 200, 5_000])
def test_thread_ids_of_any_length(store, length) -> None:
    thread = "t" * length
    row = store.log_tool(thread, "call_1", "x", {}, "value")
    store.append_message(thread, {"role": "user", "content": "hi"})
    assert store.get(thread, "call_1").ref_id == row.ref_id
    assert store.thread_exists(thread) and store.thread_messages(thread)[0]["content"] == "hi"
    assert store.prune(thread_id=thread) == 1 and not store.thread_exists(thread)
