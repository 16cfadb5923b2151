"""Tool search (the workbook's box design): only the tools the prompt's words name are offered,
``tool_search`` loads the others, and a mode's whitelist still bounds what can be loaded."""

from __future__ import annotations

import json
import uuid

from hypothesis import given, settings
from hypothesis import strategies as st
from provider import scripted_client, tool_calls

from helpers.base.paths import outbox_dir
from helpers.context.modes import for_mode
from helpers.context.policies import BoxPolicy
from helpers.context.tool_search import TOOL_SEARCH_NAME, matching_tools, tool_words, words
from helpers.loop.agent import Agent, run_turn
from helpers.tooling.tools import default_registry

TOOLS = list(default_registry())


def _offered(schemas: list[dict]) -> list[str]:
    return [s["function"]["name"] for s in schemas]


@settings(derandomize=True, max_examples=200, deadline=None)
@given(
    picked=st.lists(st.sampled_from(TOOLS), unique_by=lambda t: t.name, max_size=5),
    filler=st.lists(st.sampled_from(["please", "then", "the", "and", "thanks", "x", "42"])),
)
def test_a_tool_is_matched_exactly_when_the_prompt_shares_a_word_with_it(picked, filler) -> None:
    """Matching is a plain rule: a tool is offered if and only if the prompt shares one of its
    words (name, first line of the description, parameter names); filler words match nothing."""
    prompt = " ".join([*filler, *(t.name.replace("_", " ") for t in picked)])
    got = set(matching_tools(prompt, TOOLS))
    expected = {t.name for t in TOOLS if words(prompt) & tool_words(t)}
    assert got == expected, f"prompt {prompt!r}: expected {sorted(expected)}, got {sorted(got)}"
    assert {t.name for t in picked} <= got
    assert not matching_tools(" ".join(filler), TOOLS)


def test_a_url_names_the_tool_that_takes_one() -> None:
    assert matching_tools("What is the title of https://example.org/x?", TOOLS) == ["get_page"]
    assert "url" not in words("a page about curling")


def _turn(store, prompt: str, replies: list, *, design: str = "workbook", registry=None):
    """A box turn of ``design`` on ``prompt``, the scripted ``replies`` answering it: the record
    and every chat request sent."""
    client, requests = scripted_client(replies)
    record = run_turn(
        prompt, Agent(client, "m", BoxPolicy(design=design), registry or default_registry(), store)
    )
    return record, requests


def test_a_tool_not_offered_is_loaded_by_tool_search_and_then_called(store) -> None:
    """The prompt names no tool: none is offered, only tool_search; the model loads
    yt_transcribe by name, the next request offers it, and its call runs."""
    record, requests = _turn(
        store,
        "Do it for 999.",
        [
            tool_calls(("c1", TOOL_SEARCH_NAME, '{"query": "yt_transcribe"}')),
            tool_calls(("c2", "yt_transcribe", '{"video_id": "999"}')),
            {"role": "assistant", "content": "done"},
        ],
    )
    assert record.ok and [t.name for t in record.tool_calls] == [TOOL_SEARCH_NAME, "yt_transcribe"]
    first, second = (_offered(r["tools"]) for r in requests[:2])
    assert first == [TOOL_SEARCH_NAME]
    assert "yt_transcribe" in second and record.tool_calls[1].ran
    assert "Loaded (offered from your next call): yt_transcribe" in record.tool_calls[0].result
    described = json.dumps(requests[0]["tools"])
    assert all(t.name in described for t in TOOLS)  # tool_search names every tool left out


def test_a_tool_never_offered_nor_loaded_does_not_run_when_named(store) -> None:
    """The model knows run_sql's and the outbox's names from elsewhere and calls them without
    tool search: each is an error result naming what was offered, and nothing ran or was
    written; loaded through tool search, the same call runs."""
    name = f"unoffered-{uuid.uuid4().hex[:8]}.txt"
    record, requests = _turn(
        store,
        "Do it for 999.",
        [
            tool_calls(
                ("c1", "run_sql", '{"query": "SELECT 1"}'),
                (
                    "c2",
                    "google_drive_write_file",
                    json.dumps({"file_name": name, "file_content": "x"}),
                ),
            ),
            tool_calls(("c3", TOOL_SEARCH_NAME, '{"query": "run_sql"}')),
            tool_calls(("c4", "run_sql", '{"query": "SELECT 1 AS one"}')),
            {"role": "assistant", "content": "done"},
        ],
    )
    assert "run_sql" not in _offered(requests[0]["tools"])
    for call in record.tool_calls[:2]:
        error = json.loads(call.result)["error"]
        assert (
            not call.ran and "was not offered in this turn" in error and TOOL_SEARCH_NAME in error
        )
    assert not (outbox_dir() / name).exists()
    assert record.tool_calls[3].ran and '"one"' in record.tool_calls[3].result


def test_tool_search_cannot_load_a_tool_the_mode_withholds(store) -> None:
    record, requests = _turn(
        store,
        "Save a file to Google Drive.",
        [
            tool_calls(("c1", TOOL_SEARCH_NAME, '{"query": "google_drive_write_file"}')),
            {"role": "assistant", "content": "done"},
        ],
        registry=for_mode(default_registry(), "explore"),
    )
    assert "google_drive_write_file" not in json.dumps(requests[0]["tools"])
    assert "No tool matches" in record.tool_calls[0].result
    assert all("google_drive_write_file" not in _offered(r["tools"]) for r in requests)


def test_box_designs_before_the_workbooks_offer_every_tool(store) -> None:
    _, requests = _turn(store, "Hello.", [{"role": "assistant", "content": "hi"}], design="preview")
    assert _offered(requests[0]["tools"]) == [t.name for t in TOOLS]
