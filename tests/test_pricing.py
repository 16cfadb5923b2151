"""Dollars from tokens: the pricing file, the providers' caching rules, and a turn whose tool
list changes mid-turn losing its cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.evaluation.pricing import PricingError, load_prices, shared_prefix_tokens, turn_cost
from helpers.loop.records import ModelCallRecord, TurnRecord
from helpers.text.tokens import count_message_tokens, count_tools_tokens

TOOL_A = {
    "type": "function",
    "function": {"name": "a", "description": "word " * 1500, "parameters": {}},
}
TOOL_B = {"type": "function", "function": {"name": "b", "description": "y", "parameters": {}}}


def test_the_shipped_table_is_dated_and_complete() -> None:
    table = load_prices()
    assert table.checked and len(table.models) >= 6
    gpt4o = table.get("gpt-4o")
    assert (gpt4o.input, gpt4o.cached_input, gpt4o.output) == (2.5, 1.25, 10.0)
    assert (gpt4o.min_cached_prefix_tokens, gpt4o.cache_increment_tokens) == (1024, 128)
    haiku = table.get("claude-haiku-4.5")
    assert haiku.min_cached_prefix_tokens == 4096 and haiku.cache_write_multiplier == 1.25
    for price in table.models.values():
        assert 0 < price.cached_input <= price.input < price.output
    with pytest.raises(ValueError, match="no prices for 'gpt-0'"):
        table.get("gpt-0")


def test_a_bad_table_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "p.yaml"
    bad.write_text("providers: {}\nmodels:\n  m: {provider: nowhere, input: 1}\n")
    with pytest.raises(PricingError, match="'m'"):
        load_prices(bad)


def test_openai_caches_prefixes_of_1024_tokens_or_more_in_steps_of_128() -> None:
    price = load_prices().get("gpt-4o")
    assert price.cacheable(1023) == 0
    assert price.cacheable(1024) == 1024 and price.cacheable(1300) == 1280


def _record(
    messages: list[dict], calls: list[tuple[int, int]], schemas: list[list[dict]]
) -> TurnRecord:
    record = TurnRecord(model="m", strategy="s", boxing="opaque", thread_id="t", prompt="p")
    record.messages = messages
    record.schemas_per_call = schemas
    record.tool_schemas = schemas[-1]
    for index, (sent, prompt) in enumerate(calls):
        record.model_calls.append(ModelCallRecord(index, prompt, 10, sent, "stop", 0))
    return record


def test_a_growing_conversation_reuses_the_previous_request() -> None:
    price = load_prices().get("gpt-4o")
    messages = [
        {"role": "system", "content": "s " * 200},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "a " * 300},
        {"role": "user", "content": "v"},
    ]
    tools = count_tools_tokens([TOOL_A])
    first, second = 3000, 3500
    record = _record(messages, [(2, first), (4, second)], [[TOOL_A], [TOOL_A]])
    shared = shared_prefix_tokens(record, warm=True)
    # warm: call 1 shares the system message and tools with a previous turn;
    # call 2 shares the whole of call 1's request
    assert shared[0] == tools + count_message_tokens(messages[0])
    assert shared[1] == tools + sum(count_message_tokens(m) for m in messages[:2])
    # cold (the default): call 1 finds nothing cached, call 2 the same as warm
    assert shared_prefix_tokens(record) == [0, shared[1]]
    assert turn_cost(record, price).cached_usd > turn_cost(record, price, warm=True).cached_usd
    cost = turn_cost(record, price, warm=True)
    hits = [price.cacheable(s) for s in shared]
    assert cost.cached_tokens == sum(hits)
    assert cost.uncached_usd == pytest.approx(((first + second) * 2.5 + 20 * 10.0) / 1e6)
    expected = sum(h * 1.25 + (p - h) * 2.5 for h, p in zip(hits, (first, second), strict=True))
    assert cost.cached_usd == pytest.approx((expected + 20 * 10.0) / 1e6)
    assert cost.cached_usd < cost.uncached_usd


def test_a_tool_list_that_changes_mid_turn_breaks_the_cache() -> None:
    messages = [{"role": "system", "content": "s " * 900}, {"role": "user", "content": "u"}]
    stable = _record(messages, [(2, 2500), (2, 2600)], [[TOOL_A], [TOOL_A]])
    changed = _record(messages, [(2, 2500), (2, 2600)], [[TOOL_A], [TOOL_A, TOOL_B]])
    assert shared_prefix_tokens(stable)[1] > 1024
    assert shared_prefix_tokens(changed)[1] == 0
    price = load_prices().get("gpt-4o")
    assert turn_cost(changed, price).cached_usd > turn_cost(stable, price).cached_usd


def test_anthropic_writes_what_it_caches_at_a_premium() -> None:
    price = load_prices().get("claude-sonnet-4.5")
    messages = [{"role": "system", "content": "s " * 900}, {"role": "user", "content": "u"}]
    record = _record(messages, [(2, 2600)], [[TOOL_A]])
    shared = shared_prefix_tokens(record, warm=True)[0]
    cost = turn_cost(record, price, warm=True, sends_breakpoints=True)
    hit = price.cacheable(shared)
    expected = hit * 0.30 + (2600 - hit) * 3.0 * 1.25 + 10 * 15.0
    assert cost.cached_usd == pytest.approx(expected / 1e6)


def test_claude_is_not_cached_by_a_client_that_sends_no_breakpoints() -> None:
    """Anthropic caches only at cache_control breakpoints; this client sends none, so every
    Claude model's cached dollars are its uncached dollars, warm or cold; OpenAI's are lower."""
    messages = [{"role": "system", "content": "s " * 900}, {"role": "user", "content": "u"}]
    record = _record(messages, [(2, 2500), (2, 2600)], [[TOOL_A], [TOOL_A]])
    table = load_prices()
    claude = [p for p in table.models.values() if p.provider == "anthropic"]
    assert claude and all(p.needs_cache_breakpoints and not p.cached_by() for p in claude)
    for price in claude:
        for warm in (False, True):
            cost = turn_cost(record, price, warm=warm)
            assert cost.cached_tokens == 0
            assert cost.cached_usd == pytest.approx(cost.uncached_usd)
    openai = turn_cost(record, table.get("gpt-4o"))
    assert openai.cached_tokens > 0 and openai.cached_usd < openai.uncached_usd


def test_the_offline_model_is_bounded_like_the_model_it_is_priced_at() -> None:
    """Its context window and its most output tokens per response are those data/pricing.yaml
    gives for the price model (gpt-4o), and a longer completion is cut with finish_reason
    'length' even when a request asks for more."""
    from helpers.evaluation.pricing import DEFAULT_PRICE_MODEL, load_prices
    from helpers.models.offline import OfflineModel
    from helpers.models.providers import (
        OFFLINE,
        OFFLINE_COMPLETION_LIMIT_TOKENS,
        OFFLINE_CONTEXT_WINDOW_TOKENS,
    )

    price = load_prices().get(DEFAULT_PRICE_MODEL)
    assert price.context_window_tokens == OFFLINE_CONTEXT_WINDOW_TOKENS
    assert price.max_output_tokens == OFFLINE_COMPLETION_LIMIT_TOKENS
    assert OFFLINE.completion_limit_tokens == price.max_output_tokens
    model = OfflineModel({"say it": [{"answer": "word " * 40_000}]}, max_output_tokens=100)
    for asked in ({}, {"max_completion_tokens": 100_000}, {"max_tokens": 50}):
        reply = model.complete(
            {"model": "offline-reference", "messages": [{"role": "user", "content": "say it"}]}
            | asked
        )
        assert reply["choices"][0]["finish_reason"] == "length"
        assert reply["usage"]["completion_tokens"] == min(100, asked.get("max_tokens", 100))


def test_each_provider_has_a_cache_write_rule_with_its_source() -> None:
    """OpenAI and Gemini write to their automatic caches at the input price; Anthropic at 1.25×
    for five minutes and 2× for an hour; each rule names its source, and the reference's
    caching sentences are written from them."""
    from helpers.evaluation.pricing import caching_rules_markdown

    table = load_prices()
    rules = table.providers
    assert {"openai", "anthropic", "google"} <= set(rules)
    assert rules["openai"].cache_write_multiplier == rules["google"].cache_write_multiplier == 1.0
    assert rules["anthropic"].cache_write_multiplier == 1.25
    assert rules["anthropic"].cache_write_multiplier_1h == 2.0
    assert rules["google"].min_cached_prefix_tokens is None  # it depends on the model
    assert all(rule.source for rule in rules.values())
    sonnet = table.get("claude-sonnet-4.5")
    assert (sonnet.write_multiplier("5m"), sonnet.write_multiplier("1h")) == (1.25, 2.0)
    with pytest.raises(ValueError, match="one-hour"):
        table.get("gpt-4o").write_multiplier("1h")
    text = caching_rules_markdown(table)
    assert len(text.splitlines()) == len(rules)
    for rule in rules.values():
        assert rule.source in text and rule.name in text
    assert "1.25×" in text and "2× for one hour" in text


def test_a_provider_rule_without_its_source_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "p.yaml"
    bad.write_text("providers:\n  x: {cache_write_multiplier: 1.0}\nmodels: {}\n")
    with pytest.raises(PricingError, match="'x'"):
        load_prices(bad)


def test_a_cost_counts_cache_reads_and_writes_apart() -> None:
    """What is not read from the cache is written to it (a cached request), at the write price:
    the one-hour lifetime costs more than the five-minute one."""
    price = load_prices().get("claude-sonnet-4.5")
    messages = [{"role": "system", "content": "s " * 900}, {"role": "user", "content": "u"}]
    record = _record(messages, [(2, 2500), (2, 2600)], [[TOOL_A], [TOOL_A]])
    five = turn_cost(record, price, sends_breakpoints=True)
    hour = turn_cost(record, price, sends_breakpoints=True, cache_lifetime="1h")
    assert five.cached_tokens + five.cache_write_tokens == five.prompt_tokens
    assert five.cached_tokens > 0 and five.cache_write_tokens > 0
    extra = five.cache_write_tokens * price.input * (2.0 - 1.25) / 1e6
    assert hour.cached_usd - five.cached_usd == pytest.approx(extra)
    assert turn_cost(record, price).cache_write_tokens == 0  # not cached by this client
