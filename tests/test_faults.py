"""Faults on the real network path (loopback HTTP with injected faults) and in the store."""

from __future__ import annotations

import multiprocessing
import signal
import sqlite3
import subprocess
import sys
import textwrap

import openai
import pytest
from hang import HANG_GUARD_S
from sqlalchemy.exc import OperationalError

from helpers.context.resolve_tools import internal_resource_length
from helpers.context.strategies import build_policy
from helpers.loop.agent import Agent, run_turn
from helpers.models.offline_server import Fault, OfflineServer
from helpers.store.tool_outputs import ToolOutputStore
from helpers.tooling.registry import ToolContext
from helpers.tooling.tools import default_registry

#: The client's timeout in the fault tests: many times what an answer takes on a busy machine
#: (a good request must never time out), and the delay that makes one time out, past it.
CLIENT_TIMEOUT_S = 5.0
FAULT_DELAY_S = 6.0
CASE1 = "Generate a transcript of the YouTube video with video_id='123' and then pass it to Deep Check for analysis."


def _client(server: OfflineServer, *, max_retries: int, timeout_s: float = 10.0) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=server.base_url, api_key="none", max_retries=max_retries, timeout=timeout_s
    )


def _turn(server, store, *, max_retries, timeout_s=10.0, thread_id=None):
    return run_turn(
        CASE1,
        Agent(
            _client(server, max_retries=max_retries, timeout_s=timeout_s),
            "offline-reference",
            build_policy("box-tcr"),
            default_registry(),
            store,
        ),
        thread_id=thread_id,
    )


@pytest.mark.parametrize(
    "fault",
    [
        Fault("status", status=500),
        Fault("status", status=503),
        Fault("status", status=429, retry_after_s=0.2),
        Fault("drop"),
        Fault("delay", delay_s=FAULT_DELAY_S),
    ],
    ids=["500", "503", "429-retry-after", "dropped-connection", "timeout"],
)
def test_the_sdk_retries_transient_faults(store, fault) -> None:
    with OfflineServer(faults=[fault]) as server:
        record = _turn(server, store, max_retries=2, timeout_s=CLIENT_TIMEOUT_S)
        assert record.ok, record.error
        assert server.chat_requests == len(record.model_calls) + 1  # one retried request


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        (Fault("status", status=500), "InternalServerError"),
        (Fault("status", status=429, retry_after_s=0.1), "RateLimitError"),
        (Fault("drop"), "APIConnectionError"),
        (Fault("delay", delay_s=FAULT_DELAY_S), "APITimeoutError"),
    ],
)
def test_after_the_retries_the_turn_fails_clearly_and_nothing_is_lost(store, fault, error) -> None:
    # the first model call goes through; the second one meets the fault, again and again
    with OfflineServer(faults=[Fault("delay", delay_s=0.0)] + [fault] * 3) as server:
        record = _turn(server, store, max_retries=2, timeout_s=CLIENT_TIMEOUT_S)
    assert record.status == "error" and error in record.error
    assert [t.name for t in record.tool_calls] == ["yt_transcribe"]
    ref = record.tool_calls[0].result
    assert ref.startswith("internal://")
    # the output logged before the fault is in the store, and a rerun in the thread resolves it
    ctx = ToolContext(store=store, thread_id=record.thread_id)
    assert internal_resource_length(ctx, ref) == '{"length_chars": 10244}'
    with OfflineServer() as server:
        rerun = _turn(server, store, max_retries=0, thread_id=record.thread_id)
    assert rerun.ok and "received 10244 chars" in rerun.answer
    assert internal_resource_length(ctx, ref) == '{"length_chars": 10244}'


def test_malformed_json_from_the_endpoint_is_a_clear_failure(store) -> None:
    with OfflineServer(faults=[Fault("malformed")]) as server:
        record = _turn(server, store, max_retries=0)
    assert record.status == "error" and "malformed JSON" in record.error


def _writer(url: str, worker: int, count: int) -> None:
    store = ToolOutputStore(url)
    for i in range(count):
        store.log_tool(
            f"thread_{worker}", f"call_{worker}_{i}", "run_sql", {"i": i}, f"output {worker} {i}"
        )
    store.close()


def test_four_processes_log_two_thousand_rows(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.sqlite'}"
    ToolOutputStore(url).close()
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_writer, args=(url, w, 500)) for w in range(4)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(timeout=HANG_GUARD_S)
        assert p.exitcode == 0
    with sqlite3.connect(tmp_path / "shared.sqlite") as db:
        assert db.execute("SELECT count(*) FROM tool_outputs").fetchone()[0] == 2000
        assert (
            db.execute(
                "SELECT count(DISTINCT thread_id || '/' || tool_call_id) FROM tool_outputs"
            ).fetchone()[0]
            == 2000
        )
        assert db.execute("SELECT count(DISTINCT ref_id) FROM tool_outputs").fetchone()[0] == 2000


def test_a_process_killed_mid_turn_loses_no_committed_output(tmp_path) -> None:
    db = tmp_path / "killed.sqlite"
    script = textwrap.dedent(f"""
        import os, signal
        from helpers.loop.agent import Agent, run_turn
        from helpers.models.offline import OfflineModel, offline_client
        from helpers.context.strategies import build_policy
        from helpers.tooling.registry import tool_from_function
        from helpers.store.tool_outputs import ToolOutputStore
        from helpers.tooling.tools import default_registry

        def crash(text: str) -> str:
            \"\"\"Die mid-turn, as a process killed by the OOM killer would.

            Args:
                text: anything.
            \"\"\"
            os.kill(os.getpid(), signal.SIGKILL)

        registry = default_registry()
        registry.add(tool_from_function(crash))
        prompt = "transcribe, then crash"
        model = OfflineModel({{prompt: [
            {{"call": "yt_transcribe", "args": {{"video_id": "123"}}}},
            {{"call": "crash", "args": {{"text": {{"result": 1}}}}}},
            {{"answer": "never"}},
        ]}})
        agent = Agent(offline_client(model), "m", build_policy("box-tcr"), registry,
                      ToolOutputStore("sqlite:///{db}"))
        run_turn(prompt, agent, thread_id="thread_k")
    """)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=HANG_GUARD_S
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    store = ToolOutputStore(f"sqlite:///{db}")
    rows = store.list_thread("thread_k")
    assert [r.tool_name for r in rows] == ["yt_transcribe"]
    assert store.read_all(rows[0].id).endswith("The number to remember is 6065")


def test_a_locked_database_waits_then_errors_clearly(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'locked.sqlite'}"
    ToolOutputStore(url).close()
    holder = sqlite3.connect(tmp_path / "locked.sqlite", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        waiting = ToolOutputStore(url, busy_timeout_ms=300)
        with pytest.raises(OperationalError, match="database is locked"):
            waiting.log_tool("t", "c", "x", {}, "v")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert ToolOutputStore(url).log_tool("t", "c", "x", {}, "v").tool_call_id == "c"


def test_two_threads_never_see_each_others_references(store) -> None:
    with OfflineServer() as server:
        first = _turn(server, store, max_retries=0)
        second = _turn(server, store, max_retries=0)
    ref = first.tool_calls[0].result
    with pytest.raises(ValueError, match="belongs to another thread"):
        internal_resource_length(ToolContext(store=store, thread_id=second.thread_id), ref)
