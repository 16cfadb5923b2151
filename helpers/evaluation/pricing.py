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
the input price for its default 5-minute lifetime, 2× for one hour: ``cache_lifetime``). Compacted
turns (whose earlier requests are no longer in the record) count only the system message and
tools as shared. Each :class:`Cost` says how many prompt tokens were read from the cache and how
many written to it.

**Sessions and edits.** :func:`session_cost` prices a session from the requests as they were
sent (:class:`SentRequest`, :func:`session_requests`), so an edit of the history is seen where it
happens: when a request is not the previous one extended (a result cleared by
:mod:`helpers.context.context_editing`, old calls folded by :mod:`helpers.context.compaction`),
the cached prefix ends at the first message that changed, and what followed it is written to
the cache again. Each such :class:`CacheRewrite` is priced: the tokens rewritten, and what they
cost over reading them from the cache.

**Who caches.** Anthropic caches only up to the ``cache_control`` breakpoints a request marks
(Anthropic, guide "Prompt caching"; the same through OpenRouter, guide "Prompt Caching"). This
client sends none (:data:`CLIENT_SENDS_CACHE_BREAKPOINTS`), so on a model whose provider needs
them (``needs_cache_breakpoints`` in ``data/pricing.yaml``) its cached dollars are its uncached
dollars, and reports say "not cached by this client".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from helpers.base.paths import DATA_DIR
from helpers.text.tokens import count_message_tokens, count_tools_tokens

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


#: The cache lifetimes a write can be priced at: Anthropic's default five minutes and its one
#: hour (``cache_control.ttl``); the other providers' automatic caches have one price.
CACHE_LIFETIMES = ("5m", "1h")


@dataclass(frozen=True)
class CacheRule:
    """One provider's prompt-caching rule, from ``providers:`` in ``data/pricing.yaml``.

    ``cache_write_multiplier`` is what a token written to the cache costs, × the input price
    (five-minute lifetime where the provider has several); ``cache_write_multiplier_1h`` the same
    for a one-hour lifetime (``None``: the provider prices none); ``min_cached_prefix_tokens``
    ``None`` when it depends on the model (each model entry then gives it); ``source`` where the
    rule was read.
    """

    provider: str
    name: str
    cache_write_multiplier: float
    cache_write_multiplier_1h: float | None
    min_cached_prefix_tokens: int | None
    cache_increment_tokens: int
    needs_cache_breakpoints: bool
    source: str


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
    #: a cache write for a one-hour lifetime, × the input price (``None``: not priced)
    cache_write_multiplier_1h: float | None = None

    def write_multiplier(self, cache_lifetime: str = "5m") -> float:
        """What a token written to the cache costs, × the input price, for ``cache_lifetime``
        (one of :data:`CACHE_LIFETIMES`).

        Raises:
            ValueError: an unknown lifetime, or ``"1h"`` for a provider that prices none.
        """
        if cache_lifetime == "5m":
            return self.cache_write_multiplier
        if cache_lifetime == "1h" and self.cache_write_multiplier_1h is not None:
            return self.cache_write_multiplier_1h
        if cache_lifetime == "1h":
            raise ValueError(f"{self.provider} prices no one-hour cache write ({self.model})")
        raise ValueError(f"cache lifetime {cache_lifetime!r} is not one of {CACHE_LIFETIMES}")

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
    #: each provider's caching rule, by provider key (``openai``, ``anthropic``, ``google``)
    providers: dict[str, CacheRule] = field(default_factory=dict)

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
        PricingError: a model without a provider or a price, an unknown provider, or a
            provider's rule without its figures or source.
        OSError: the file cannot be read.
    """
    path = path or PRICING_FILE
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    providers: Mapping[str, Any] = data.get("providers") or {}
    rules_by_provider: dict[str, CacheRule] = {}
    for key, rule in providers.items():
        try:
            rules_by_provider[key] = CacheRule(
                provider=key,
                name=str(rule.get("name", key)),
                cache_write_multiplier=float(rule["cache_write_multiplier"]),
                cache_write_multiplier_1h=_optional_float(rule.get("cache_write_multiplier_1h")),
                min_cached_prefix_tokens=_optional_int(rule.get("min_cached_prefix_tokens")),
                cache_increment_tokens=int(rule.get("cache_increment_tokens", 1)),
                needs_cache_breakpoints=bool(rule.get("needs_cache_breakpoints", False)),
                source=str(rule["source"]),
            )
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise PricingError(f"{path}: provider {key!r}: missing or bad field {exc}") from None
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
                cache_write_multiplier_1h=_optional_float(rules.get("cache_write_multiplier_1h")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise PricingError(f"{path}: model {name!r}: missing or bad field {exc}") from None
    return PriceTable(str(data.get("checked", "")), models, path, rules_by_provider)


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def caching_rules_markdown(table: PriceTable) -> str:
    """One Markdown line per provider of ``table``: how it caches and what a cache write
    costs, written from ``data/pricing.yaml`` (the reference's caching sentences), with its
    source."""
    lines = []
    for rule in table.providers.values():
        how = (
            "only up to the `cache_control` breakpoints a request marks"
            if rule.needs_cache_breakpoints
            else "automatically"
        )
        start = (
            f"from {rule.min_cached_prefix_tokens:,} prompt tokens"
            if rule.min_cached_prefix_tokens is not None
            else "from a minimum that depends on the model"
        )
        others = [
            f"{price.model} {price.min_cached_prefix_tokens:,}"
            for price in table.models.values()
            if price.provider == rule.provider
            and rule.min_cached_prefix_tokens is not None
            and price.min_cached_prefix_tokens != rule.min_cached_prefix_tokens
        ]
        if others:
            start += f" ({', '.join(others)})"
        steps = (
            f", in steps of {rule.cache_increment_tokens:,}"
            if rule.cache_increment_tokens > 1
            else ""
        )
        if rule.cache_write_multiplier == 1:
            write = "a cache write costs the input price (no premium)"
        else:
            write = f"a cache write costs {rule.cache_write_multiplier:g}× the input price"
            if rule.cache_write_multiplier_1h is not None:
                write += (
                    f" for the default five-minute lifetime, "
                    f"{rule.cache_write_multiplier_1h:g}× for one hour"
                )
        lines.append(
            f"- {rule.name}: caches {how}, {start}{steps}; {write}; a cache read costs the "
            f"model's cached-input price ({rule.source})."
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class Cost:
    """A turn's cost: dollars with no cache and with the cache model of the module docstring."""

    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    uncached_usd: float
    cached_usd: float
    #: prompt tokens written to the cache (at the provider's write multiplier; OpenAI's and
    #: Gemini's at the input price): those of a cached request not read from the cache
    cache_write_tokens: int = 0


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
    cache_lifetime: str = "5m",
) -> Cost:
    """What ``record``'s model calls cost at ``price``, uncached and cached: from a cold cache,
    or ``warm`` (see :func:`shared_prefix_tokens`). A model this client's requests are not
    cached by (:meth:`Price.cached_by`) costs its uncached dollars either way;
    ``sends_breakpoints=True`` prices a client that marks ``cache_control`` breakpoints, its
    writes for ``cache_lifetime`` (:meth:`Price.write_multiplier`)."""
    tally = _Tally(price, price.cached_by(sends_breakpoints), cache_lifetime)
    for call, shared in zip(
        record.model_calls, shared_prefix_tokens(record, warm=warm), strict=True
    ):
        tally.add(call.prompt_tokens, call.completion_tokens, shared)
    return tally.cost()


@dataclass
class _Tally:
    """The running totals of :class:`Cost` over requests, each priced by :func:`_call_cost`."""

    price: Price
    caches: bool
    cache_lifetime: str
    prompt: int = 0
    hits: int = 0
    written: int = 0
    completion: int = 0
    uncached_usd: float = 0.0
    cached_usd: float = 0.0

    def add(self, prompt_tokens: int, completion_tokens: int, shared_tokens: int) -> None:
        """One request of ``prompt_tokens`` (``shared_tokens`` of them shared with the one
        before) and ``completion_tokens``."""
        price = self.price
        hit, write, usd = _call_cost(
            price, prompt_tokens, completion_tokens, shared_tokens, self.caches, self.cache_lifetime
        )
        self.prompt += prompt_tokens
        self.hits += hit
        self.written += write
        self.completion += completion_tokens
        self.uncached_usd += (
            prompt_tokens * price.input + completion_tokens * price.output
        ) / _PER_TOKEN
        self.cached_usd += usd

    def cost(self) -> Cost:
        return Cost(
            self.prompt,
            self.hits,
            self.completion,
            self.uncached_usd,
            self.cached_usd,
            self.written,
        )


def _call_cost(
    price: Price,
    prompt_tokens: int,
    completion_tokens: int,
    shared_tokens: int,
    caches: bool,
    cache_lifetime: str,
) -> tuple[int, int, float]:
    """One request with caching: the tokens read from the cache, the tokens written to it, and
    its dollars (reads at the cached-input price, writes at the write multiplier, the rest and
    a request too short to cache at the input price)."""
    hit = price.cacheable(shared_tokens) if caches else 0
    writes = caches and prompt_tokens >= price.min_cached_prefix_tokens
    written = prompt_tokens - hit if writes else 0
    multiplier = price.write_multiplier(cache_lifetime) if writes else 1.0
    usd = (
        hit * price.cached_input
        + (prompt_tokens - hit) * price.input * multiplier
        + completion_tokens * price.output
    ) / _PER_TOKEN
    return hit, written, usd


@dataclass(frozen=True)
class SentRequest:
    """One model request as it was sent: its ``messages`` and ``tools`` (chat-completions
    shapes), and the ``prompt_tokens`` and ``completion_tokens`` its response's usage gave."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    prompt_tokens: int
    completion_tokens: int


def session_requests(
    records: Iterable[TurnRecord], sent: Iterable[list[dict[str, Any]]]
) -> list[SentRequest]:
    """The requests of a session's turns, in order: each model call of ``records`` with its
    tool schemas (``schemas_per_call``) and usage, and the messages it sent, the items of
    ``sent`` in the same order (as :func:`helpers.context.context_editing.policy_with_clearing`
    collects them). A request the provider refused has no model call and is left out.

    Raises:
        ValueError: fewer messages in ``sent`` than model calls in ``records``.
    """
    sent_iter = iter(sent)
    out: list[SentRequest] = []
    for record in records:
        schemas = record.schemas_per_call or [record.tool_schemas] * len(record.model_calls)
        for index, call in enumerate(record.model_calls):
            messages = next(sent_iter, None)
            while messages is not None and len(messages) != call.messages_sent:
                messages = next(sent_iter, None)  # a refused request: no model call
            if messages is None:
                raise ValueError("fewer requests sent than model calls recorded")
            tools = schemas[min(index, len(schemas) - 1)] if schemas else []
            out.append(SentRequest(messages, tools, call.prompt_tokens, call.completion_tokens))
    return out


@dataclass(frozen=True)
class CacheRewrite:
    """A request that was not the previous one extended: an edit of the history (a cleared
    result, a compaction) ended the cached prefix at message ``first_changed_index``.
    ``rewritten_tokens`` are the tokens from there that stand for what the previous request
    held (the edited messages and those kept after them): cached before, written again now.
    ``rewrite_usd`` is what that costs over reading them from the cache (0 when the client's
    requests are not cached)."""

    request_index: int
    first_changed_index: int
    shared_tokens: int
    rewritten_tokens: int
    rewrite_usd: float


@dataclass(frozen=True)
class SessionCost:
    """A session's requests priced with caching (:func:`session_cost`): the :class:`Cost`
    figures and every :class:`CacheRewrite`."""

    cost: Cost
    rewrites: tuple[CacheRewrite, ...]

    @property
    def rewrite_usd(self) -> float:
        """What the edits' rewrites cost over reading from the cache, in all."""
        return sum(r.rewrite_usd for r in self.rewrites)


def _rewritten_tokens(previous: SentRequest, request: SentRequest, shared_messages: int) -> int:
    """The tokens of ``request`` from its first changed message to the one that was
    ``previous``'s last (or, when that one changed too, as many messages as ``previous`` had)."""
    last = previous.messages[-1]
    end = next(
        (
            i + 1
            for i in range(shared_messages, len(request.messages))
            if request.messages[i] == last
        ),
        min(len(previous.messages), len(request.messages)),
    )
    return sum(count_message_tokens(m) for m in request.messages[shared_messages:end])


def session_cost(
    requests: Sequence[SentRequest],
    price: Price,
    *,
    sends_breakpoints: bool = CLIENT_SENDS_CACHE_BREAKPOINTS,
    cache_lifetime: str = "5m",
) -> SessionCost:
    """What ``requests`` (one session, in order, from a cold cache) cost at ``price``.

    Each request shares with the one before it the tool schemas (when unchanged) and its leading
    messages equal to the previous request's; the provider's rules then apply as in
    :func:`turn_cost` (a client that sends no breakpoints gets no cache from a provider that
    needs them, unless ``sends_breakpoints``; writes for ``cache_lifetime``). A request whose
    leading messages stop short of the previous request's is a :class:`CacheRewrite`: its
    rewritten tokens run from the first changed message to the one that was the previous
    request's last (or as many messages as the previous request had), and cost
    ``input × write multiplier − cached input`` each over a read from the cache. A request whose
    tool schemas changed shares nothing, and an edit it carries is not counted apart: the new
    tool list already made the provider write the whole request.

    Raises:
        ValueError: a ``cache_lifetime`` the provider prices no write for.
    """
    caches = price.cached_by(sends_breakpoints)
    tally = _Tally(price, caches, cache_lifetime)
    rewrites: list[CacheRewrite] = []
    previous: SentRequest | None = None
    for index, request in enumerate(requests):
        shared_messages = 0
        shared = 0
        if previous is not None and request.tools == previous.tools:
            limit = min(len(request.messages), len(previous.messages))
            while (
                shared_messages < limit
                and request.messages[shared_messages] == previous.messages[shared_messages]
            ):
                shared_messages += 1
            shared = count_tools_tokens(request.tools) + sum(
                count_message_tokens(m) for m in request.messages[:shared_messages]
            )
            shared = min(shared, request.prompt_tokens)
            if shared_messages < len(previous.messages):
                rewritten = _rewritten_tokens(previous, request, shared_messages)
                extra = price.input * price.write_multiplier(cache_lifetime) - price.cached_input
                cacheable = caches and request.prompt_tokens >= price.min_cached_prefix_tokens
                usd = rewritten * extra / _PER_TOKEN if cacheable else 0.0
                rewrites.append(CacheRewrite(index, shared_messages, shared, rewritten, usd))
        tally.add(request.prompt_tokens, request.completion_tokens, shared)
        previous = request
    return SessionCost(tally.cost(), tuple(rewrites))
