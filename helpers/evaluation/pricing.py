"""What a turn costs in dollars, with and without prompt caching.

Prices come from ``data/pricing.yaml`` (dated, with its sources): input, cached input and output
dollars per million tokens per model, and each provider's caching rules. Token figures come
from each model call's ``usage`` (:class:`helpers.loop.records.ModelCallRecord`).

**The cache model.** A provider reuses the longest prefix a request shares with one it has
just seen; the workbook counts, for each model call, the prefix it shares with the call before
it. The first call of a turn starts from a **cold** cache (nothing shared: each case is its own
session), unless ``warm=True``: then it shares the system message and tools with a previous
turn, the labelled variant for a session of many turns. The prefix is counted in whole
messages, after the tool schemas, which both OpenAI and Anthropic render first: when the tool
list changes between two calls, nothing is shared. The provider's rules then apply (OpenAI:
automatic, at least 1,024 tokens, in steps of 128, at the cached-input price; Anthropic: at
least 1,024 tokens (4,096 for Haiku 4.5), the rest of the request written to the cache at 1.25×
the input price). Compacted turns (whose earlier requests are no longer in the record) count
only the system message and tools as shared.

**Who caches.** Anthropic caches only up to the ``cache_control`` breakpoints a request marks
(Anthropic, guide "Prompt caching"; the same through OpenRouter, guide "Prompt Caching"). This
client sends none (:data:`CLIENT_SENDS_CACHE_BREAKPOINTS`), so on a model whose provider needs
them (``needs_cache_breakpoints`` in ``data/pricing.yaml``) its cached dollars are its uncached
dollars, and reports say "not cached by this client".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from helpers.paths import DATA_DIR
from helpers.tokens import count_message_tokens, count_tools_tokens

if TYPE_CHECKING:
    from helpers.loop.records import TurnRecord

PRICING_FILE = DATA_DIR / "pricing.yaml"
#: The model whose prices ``workbook compare`` reports unless told otherwise (its 128,000-token
#: context window is the offline model's).
DEFAULT_PRICE_MODEL = "gpt-4o"
_PER_TOKEN = 1_000_000
#: Whether this client marks ``cache_control`` breakpoints in its requests: it does not (it
#: speaks the OpenAI chat-completions protocol, which has no such field).
CLIENT_SENDS_CACHE_BREAKPOINTS = False


@dataclass(frozen=True)
class Price:
    """One model's prices (US dollars per million tokens) and its provider's caching rules."""

    model: str
    provider: str
    input: float
    cached_input: float
    output: float
    min_cached_prefix_tokens: int
    cache_increment_tokens: int
    cache_write_multiplier: float
    context_window_tokens: int | None = None
    max_output_tokens: int | None = None
    #: the provider caches only at ``cache_control`` breakpoints the request marks (Anthropic)
    needs_cache_breakpoints: bool = False

    def cached_by(self, sends_breakpoints: bool = CLIENT_SENDS_CACHE_BREAKPOINTS) -> bool:
        """Whether a client that does (or does not) send breakpoints gets this model's cache."""
        return sends_breakpoints or not self.needs_cache_breakpoints

    def cacheable(self, prefix_tokens: int) -> int:
        """How many of ``prefix_tokens`` shared tokens the provider serves from its cache."""
        if prefix_tokens < self.min_cached_prefix_tokens:
            return 0
        step = max(self.cache_increment_tokens, 1)
        return prefix_tokens // step * step


@dataclass(frozen=True)
class PriceTable:
    """The models of a pricing file, and the date its prices were checked."""

    checked: str
    models: dict[str, Price]
    path: Path

    def get(self, model: str) -> Price:
        """The prices of ``model``; raises ``ValueError`` naming the priced models."""
        try:
            return self.models[model]
        except KeyError:
            known = ", ".join(self.models)
            raise ValueError(f"no prices for {model!r} in {self.path}; priced: {known}") from None


class PricingError(ValueError):
    """The pricing file is missing a field or holds a value that is not a price."""


def load_prices(path: Path | None = None) -> PriceTable:
    """Read a pricing file (default ``data/pricing.yaml``).

    Raises:
        PricingError: a model without a provider or a price, or an unknown provider.
        OSError: the file cannot be read.
    """
    path = path or PRICING_FILE
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    providers: Mapping[str, Any] = data.get("providers") or {}
    models: dict[str, Price] = {}
    for name, entry in (data.get("models") or {}).items():
        try:
            rules = {**providers[entry["provider"]], **entry}
            models[name] = Price(
                model=name,
                provider=entry["provider"],
                input=float(entry["input"]),
                cached_input=float(entry["cached_input"]),
                output=float(entry["output"]),
                min_cached_prefix_tokens=int(rules["min_cached_prefix_tokens"]),
                cache_increment_tokens=int(rules["cache_increment_tokens"]),
                cache_write_multiplier=float(rules["cache_write_multiplier"]),
                context_window_tokens=entry.get("context_window_tokens"),
                max_output_tokens=entry.get("max_output_tokens"),
                needs_cache_breakpoints=bool(rules.get("needs_cache_breakpoints", False)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise PricingError(f"{path}: model {name!r}: missing or bad field {exc}") from None
    return PriceTable(str(data.get("checked", "")), models, path)


@dataclass(frozen=True)
class Cost:
    """A turn's cost: dollars with no cache and with the cache model of the module docstring."""

    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    uncached_usd: float
    cached_usd: float


def shared_prefix_tokens(record: TurnRecord, *, warm: bool = False) -> list[int]:
    """For each model call of ``record``, the prompt tokens it shares with the request before
    it. The first call shares nothing from a cold cache; ``warm``, it shares the system message
    and tools with a previous turn."""
    counts: list[int] = []  # tokens of each message, counted once
    shared: list[int] = []
    schemas = record.schemas_per_call or [record.tool_schemas] * len(record.model_calls)
    previous_sent = 1  # warm: the cache holds the system message
    previous_tools: list[dict[str, Any]] | None = schemas[0] if schemas else None
    for index, call in enumerate(record.model_calls):
        tools = schemas[min(index, len(schemas) - 1)] if schemas else []
        if (index == 0 and not warm) or tools != previous_tools:
            shared.append(0)
        else:
            common = 1 if record.compactions else min(previous_sent, call.messages_sent)
            while len(counts) < common:
                counts.append(count_message_tokens(record.messages[len(counts)]))
            prefix = count_tools_tokens(tools) + sum(counts[:common])
            shared.append(min(prefix, call.prompt_tokens))
        previous_sent, previous_tools = call.messages_sent, tools
    return shared


def turn_cost(
    record: TurnRecord,
    price: Price,
    *,
    warm: bool = False,
    sends_breakpoints: bool = CLIENT_SENDS_CACHE_BREAKPOINTS,
) -> Cost:
    """What ``record``'s model calls cost at ``price``, uncached and cached: from a cold cache,
    or ``warm`` (see :func:`shared_prefix_tokens`). A model this client's requests are not
    cached by (:meth:`Price.cached_by`) costs its uncached dollars either way;
    ``sends_breakpoints=True`` prices a client that marks ``cache_control`` breakpoints."""
    prompt = cached = completion = 0
    uncached_usd = cached_usd = 0.0
    caches = price.cached_by(sends_breakpoints)
    for call, shared in zip(
        record.model_calls, shared_prefix_tokens(record, warm=warm), strict=True
    ):
        hit = price.cacheable(shared) if caches else 0
        written = call.prompt_tokens - hit
        write = (
            price.cache_write_multiplier
            if caches and call.prompt_tokens >= price.min_cached_prefix_tokens
            else 1.0
        )
        prompt += call.prompt_tokens
        cached += hit
        completion += call.completion_tokens
        uncached_usd += (
            call.prompt_tokens * price.input + call.completion_tokens * price.output
        ) / _PER_TOKEN
        cached_usd += (
            hit * price.cached_input
            + written * price.input * write
            + call.completion_tokens * price.output
        ) / _PER_TOKEN
    return Cost(prompt, cached, completion, uncached_usd, cached_usd)
