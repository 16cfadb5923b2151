"""Context editing (helpers/context/context_editing.py): Anthropic's clear_tool_uses, client-side,
as properties on generated sessions, and its cost once the provider caches."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.context.compaction import find_exchanges
from helpers.context.context_editing import (
    CLEARED_ARGUMENTS,
    DEFAULT_CLEARED_PLACEHOLDER,
    ClearToolUses,
    clear_tool_uses,
    policy_with_clearing,
)
from helpers.context.policies import ResultPolicy
from helpers.evaluation.pricing import SentRequest, load_prices, session_cost
from helpers.text.tokens import count_chat_tokens

TOOLS = ["get_page", "run_sql", "google_drive_write_file", "memory"]


def _session(turns: list[list[tuple[str, int, int]]]) -> list[dict]:
    """Per turn a user message, then assistant messages each with 1+ parallel calls (name,
    width, result words) and their results, then an answer."""
    messages = [{"role": "system", "content": "system prompt"}]
    n = 0
    for t, turn in enumerate(turns):
        messages.append({"role": "user", "content": f"request {t}"})
        for name, width, words in turn:
            calls = []
            for _ in range(width):
                n += 1
                calls.append(
                    {
                        "id": f"call_{n}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps({"url": f"u{n}"})},
                    }
                )
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            for call in calls:
                content = f"ok {call['id']} " + "data " * words
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
        messages.append({"role": "assistant", "content": f"answer {t}"})
    return messages


CALL = st.tuples(st.sampled_from(TOOLS), st.integers(1, 3), st.integers(0, 300))
SESSIONS = st.lists(st.lists(CALL, max_size=4), min_size=1, max_size=6)
SETTINGS = st.builds(
    ClearToolUses,
    trigger_tokens=st.integers(0, 6_000),
    keep_tool_uses=st.integers(0, 6),
    clear_at_least_tokens=st.integers(0, 3_000),
    exclude_tools=st.sampled_from([(), ("memory",), ("memory", "run_sql")]),
    clear_tool_inputs=st.booleans(),
)
PROPERTIES = settings(max_examples=200, deadline=None, derandomize=True)


def _call_names(messages: list[dict]) -> dict[str, str]:
    return {e.call_id: e.name for e in find_exchanges(messages)}


@PROPERTIES
@given(turns=SESSIONS, edit=SETTINGS)
def test_clearing_keeps_what_it_must(turns, edit) -> None:
    """Never the last `keep` tool uses, never an excluded tool; at least `clear_at_least` freed
    or nothing cleared; every call still answered, every message in its place; the input
    unchanged."""
    messages = _session(turns)
    before = json.dumps(messages)
    done = clear_tool_uses(messages, edit)
    assert json.dumps(messages) == before
    assert len(done.messages) == len(messages)
    assert [m["role"] for m in done.messages] == [m["role"] for m in messages]
    calls = [e.call_id for e in find_exchanges(messages)]
    kept = set(calls[len(calls) - edit.keep_tool_uses :]) if edit.keep_tool_uses else set()
    names = _call_names(messages)
    cleared = set(done.cleared_call_ids)
    assert not cleared & kept
    assert not any(names[c] in edit.exclude_tools for c in cleared)
    if done.cleared:
        assert done.tokens_freed >= max(edit.clear_at_least_tokens, 1)
        assert done.tokens_before > edit.trigger_tokens
        assert done.first_changed_index is not None
        assert done.messages[: done.first_changed_index] == messages[: done.first_changed_index]
    else:
        assert done.messages == messages and done.tokens_freed == 0
    for original, sent in zip(messages, done.messages, strict=True):
        if sent.get("role") == "tool":
            assert sent["tool_call_id"] == original["tool_call_id"]
            cleared_here = sent["tool_call_id"] in cleared
            assert (sent["content"] == edit.placeholder) == cleared_here or (
                original["content"] == edit.placeholder
            )
        if sent.get("tool_calls"):
            assert [c["id"] for c in sent["tool_calls"]] == [
                c["id"] for c in original["tool_calls"]
            ]
            for call in sent["tool_calls"]:
                if call["id"] in cleared and edit.clear_tool_inputs:
                    assert call["function"]["arguments"] == CLEARED_ARGUMENTS
    answered = [m["tool_call_id"] for m in done.messages if m.get("role") == "tool"]
    assert sorted(answered) == sorted(calls)


@PROPERTIES
@given(turns=SESSIONS, edit=SETTINGS)
def test_clearing_is_idempotent_and_quiet_under_the_trigger(turns, edit) -> None:
    messages = _session(turns)
    once = clear_tool_uses(messages, edit)
    again = clear_tool_uses(once.messages, edit)
    assert not again.cleared and again.messages == once.messages
    if count_chat_tokens(messages) <= edit.trigger_tokens:
        assert not once.cleared and once.messages == messages


def test_the_defaults_are_anthropics_and_langchains() -> None:
    edit = ClearToolUses()
    assert (edit.trigger_tokens, edit.keep_tool_uses, edit.clear_at_least_tokens) == (
        100_000,
        3,
        0,
    )
    assert edit.placeholder == DEFAULT_CLEARED_PLACEHOLDER == "[cleared]"
    assert edit.as_anthropic_edit() == {
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "input_tokens", "value": 100_000},
        "keep": {"type": "tool_uses", "value": 3},
    }
    full = ClearToolUses(clear_at_least_tokens=5, exclude_tools=("memory",), clear_tool_inputs=True)
    assert full.as_anthropic_edit()["clear_at_least"] == {"type": "input_tokens", "value": 5}
    assert full.as_anthropic_edit()["exclude_tools"] == ["memory"]
    with pytest.raises(ValueError, match="keep_tool_uses"):
        ClearToolUses(keep_tool_uses=-1)


def test_a_cleared_request_makes_the_provider_write_the_rest_again() -> None:
    """A policy with clearing sends cleared requests (the history kept whole); the request after
    the edit shares only the prefix before the first cleared result, and the rewrite is priced."""
    history = _session([[("get_page", 1, 400)] * 3, [("get_page", 1, 400)] * 3])
    sent: list[list[dict]] = []
    policy = policy_with_clearing(
        ResultPolicy(), ClearToolUses(trigger_tokens=2_000, keep_tool_uses=3), sent=sent
    )
    grown = history[:-1]  # the requests as the history grows: the edit fires on the later one
    early = grown[:8]
    for messages in (early, grown):
        policy.messages_for_call(messages)
    assert sent[0] == early  # under the trigger: sent as it is
    assert sent[1] != grown and len(sent[1]) == len(grown)
    assert grown[3]["content"] != DEFAULT_CLEARED_PLACEHOLDER  # the history stays whole
    requests = [SentRequest(m, [], count_chat_tokens(m), 10) for m in sent]
    gpt4o = load_prices().get("gpt-4o")
    priced = session_cost(requests, gpt4o)
    (rewrite,) = priced.rewrites
    assert rewrite.request_index == 1 and rewrite.first_changed_index == 3
    assert rewrite.rewritten_tokens > 0
    expected = rewrite.rewritten_tokens * (gpt4o.input - gpt4o.cached_input) / 1e6
    assert rewrite.rewrite_usd == pytest.approx(expected)
    claude = load_prices().get("claude-sonnet-4.5")
    five = session_cost(requests, claude, sends_breakpoints=True)
    hour = session_cost(requests, claude, sends_breakpoints=True, cache_lifetime="1h")
    assert five.cost.cache_write_tokens == hour.cost.cache_write_tokens > 0
    assert hour.cost.cached_usd > five.cost.cached_usd
    assert hour.rewrite_usd == pytest.approx(
        rewrite.rewritten_tokens * (claude.input * 2.0 - claude.cached_input) / 1e6
    )
    # not cached by this client (no breakpoints): no rewrite is paid for
    assert session_cost(requests, claude).rewrite_usd == 0
