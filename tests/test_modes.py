"""Per-mode whitelists: only the mode's tools are offered, and a forged call is refused unrun."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest
from hang import HANG_GUARD_S
from provider import scripted_client, tool_calls

from helpers import resolve_model
from helpers.base.paths import outbox_dir
from helpers.cases.case_files import load_cases
from helpers.context.modes import for_mode
from helpers.context.strategies import build_policy, strategy_names
from helpers.evaluation.runs import client_for_cases, run_cases, runnable_cases
from helpers.loop.agent import Agent, run_turn
from helpers.store.tool_outputs import ToolOutputStore
from helpers.tooling.registry import UnknownToolError
from helpers.tooling.tools import default_registry


def _offered(mode, strategy="box-tcr") -> set[str]:
    policy = build_policy(strategy)
    tools = for_mode(default_registry(), mode).merged(policy.internal_tools())
    return {s["function"]["name"] for s in tools.schemas()}


def test_each_mode_offers_only_its_tools() -> None:
    explore = _offered("explore")
    assert "google_drive_write_file" not in explore
    assert {
        "yt_transcribe",
        "get_page",
        "run_sql",
        "deep_check",
        "internal_resource_grep",
    } <= explore
    assert "fetch_tool_output" in _offered("explore", "truncate")
    assert "google_drive_write_file" in _offered("operate")
    assert _offered(None) == _offered("operate")
    with pytest.raises(ValueError, match="mode must be one of"):
        for_mode(default_registry(), "root")


def test_a_forged_call_to_a_tool_outside_the_mode_is_refused_and_not_run(store) -> None:
    name = f"forged-{uuid.uuid4().hex[:8]}.txt"
    client, requests = scripted_client(
        [
            tool_calls(
                (
                    "c1",
                    "google_drive_write_file",
                    json.dumps({"file_name": name, "file_content": "pwned"}),
                )
            ),
            {"role": "assistant", "content": "I could not write the file."},
        ]
    )
    record = run_turn(
        "write it",
        Agent(
            client,
            "scripted",
            build_policy("box-tcr"),
            for_mode(default_registry(), "explore"),
            store,
        ),
    )
    assert record.ok and record.answer == "I could not write the file."
    call = record.tool_calls[0]
    assert call.result_kind == "error" and not call.ran
    assert "not available in mode 'explore'" in json.loads(call.result)["error"]
    assert not (outbox_dir() / name).exists()
    assert store.get(record.thread_id, "c1") is None
    offered = {t["function"]["name"] for t in requests[0]["tools"]}
    assert "google_drive_write_file" not in offered  # it was never given, yet it was named


def test_cli_mode_flag() -> None:
    env = {**os.environ, "WORKBOOK_PROFILE": "offline", "NO_COLOR": "1"}
    prompt = "Generate a transcript of the YouTube video with video_id='123' and save it to a file on Google Drive named 'transcript.txt'."
    done = subprocess.run(
        [sys.executable, "-m", "helpers.cli", "ask", prompt, "--mode", "explore", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_GUARD_S,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    write = next(t for t in data["tool_calls"] if t["name"] == "google_drive_write_file")
    assert write["result_kind"] == "error" and "not available in mode 'explore'" in write["result"]
    assert "could not finish" in data["answer"]


def _cases_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "WORKBOOK_PROFILE": "offline", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "helpers.cli", "cases", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_GUARD_S,
    )


def test_cases_in_explore_run_every_case_that_needs_no_write_and_say_which_were_not_run() -> None:
    """explore is read-only: a case whose task writes cannot pass there under any strategy, so
    it is reported as not run (naming the withheld tool), and every other case passes."""
    writes = {c.id for c in load_cases() if "google_drive_write_file" in c.expected_tools()}
    assert {"case2", "pipe1"} <= writes
    done = _cases_cli("data/cases/*.md", "--strategy", "all", "--mode", "explore", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["failed"] == 0 and data["runs"]
    assert {r["case"] for r in data["runs"]}.isdisjoint(writes)
    assert {s["case"] for s in data["skipped"]} == writes
    for skipped in data["skipped"]:
        assert skipped["withheld"] == ["google_drive_write_file"]
        assert "mode 'explore' withholds it" in skipped["reason"]
    alone = _cases_cli("data/cases/case2.md", "--mode", "explore")
    assert alone.returncode == 2
    assert "no case can run in mode 'explore': case2 needs google_drive_write_file" in alone.stderr


def test_a_new_tool_is_offered_in_explore_by_its_read_only_property() -> None:
    registry = default_registry()

    @registry.register(read_only=True)
    def count_words(text: str) -> str:
        """Count the words of a text.

        Args:
            text: any text.
        """
        return str(len(text.split()))

    @registry.register
    def send_email(to: str) -> str:
        """Send an email.

        Args:
            to: the address.
        """
        return "sent"

    explore = for_mode(registry, "explore")
    assert "count_words" in explore.names() and "send_email" not in explore.names()
    assert explore.get("count_words").call({"text": "a b c"}) == "3"
    with pytest.raises(UnknownToolError, match="not available in mode 'explore'"):
        explore.get("send_email")
    assert {"count_words", "send_email"} <= set(for_mode(registry, "operate").names())


def test_every_strategy_passes_in_explore_each_case_that_needs_no_write(tmp_path) -> None:
    """A strategy's model-only tools (the box design's one internal_resource tool, the anchors'
    read_file and grep) are offered in every mode: a case that only reads passes in explore
    exactly when it passes with every tool."""
    full = default_registry()
    explore = for_mode(full, "explore")
    cases, skipped = runnable_cases(load_cases(), explore, full)
    assert skipped and all(s.withheld == ["google_drive_write_file"] for s in skipped)
    assert {"web1", "web2", "case1"} <= {c.id for c in cases}
    store = ToolOutputStore(f"sqlite:///{tmp_path / 'store.sqlite'}")
    common = {"client": client_for_cases(resolve_model("offline"), cases), "store": store}
    for strategy in strategy_names():
        everything = run_cases(cases, [strategy], model="offline-reference", **common)
        read_only = run_cases(
            cases, [strategy], model="offline-reference", registry=explore, **common
        )
        assert [(r.case.id, r.passed) for r in read_only] == [
            (r.case.id, r.passed) for r in everything
        ], strategy
    store.close()
