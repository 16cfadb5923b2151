"""The figures of a comparison, typed: what :class:`helpers.evaluation.compare.Comparison`
measures, what ``compare.json`` holds, and what the report, the plots, the CLI and the notebooks
read.

Every figure is a field with its unit in its name (``prompt_tokens``, ``seconds``,
``usd_cached``, ``size_bytes``, ``limit_chars``). The models are frozen pydantic models
(pydantic comes with the ``openai`` SDK): built from the runs by
:meth:`helpers.evaluation.compare.Comparison.metrics`, written to ``compare.json`` by
:meth:`ComparisonMetrics.as_json_text`, and read back by :func:`load_comparison`, which refuses a
file whose fields are not what they say (a hand-edited ``compare.json`` with text where a number
belongs raises :class:`pydantic.ValidationError`, a :class:`ValueError`, naming the field).

Text fields (case ids, strategy and model names, failure reasons) can hold a model's or a
provider's words: they are data, and each sink writes them through its own escaping function
(:mod:`helpers.text.escaping`).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from helpers.text.escaping import for_json


class _Figures(BaseModel):
    """Frozen, and no field a reader does not know: a misspelt key in a file is an error."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class RunMetrics(_Figures):
    """One case run under one strategy (the module docstring of
    :mod:`helpers.evaluation.compare` defines each figure)."""

    prompt_tokens_per_call: list[int]
    prompt_tokens: int
    peak_context_tokens: int
    completion_tokens: int
    model_calls: int
    tool_calls: int
    tool_output_chars_in_context: int
    seconds: float
    status: str
    context_overflow: bool
    #: the prompt tokens of the request the provider refused for its context window, if any
    refused_prompt_tokens: int | None = None
    #: every sink received byte-exact data; ``None`` when the case has no sink
    sinks_exact: bool | None = None
    passed: bool
    reasons: list[str]
    #: dollars and cached tokens at the comparison's price model (``None`` when unpriced);
    #: cached from a cold cache, and ``usd_cached_warm`` with the system message and tools
    #: already cached by an earlier turn (:mod:`helpers.evaluation.pricing`)
    cached_tokens: int | None = None
    usd_uncached: float | None = None
    usd_cached: float | None = None
    usd_cached_warm: float | None = None
    #: cached prompt tokens the provider reported in ``usage`` (``None``: no response said)
    cached_tokens_reported: int | None = None
    #: prompt tokens written to the cache at the price model's write price (cold cache;
    #: ``cached_tokens`` are those read from it), ``None`` when unpriced
    cache_write_tokens: int | None = None

    def drawn_tokens(self) -> int:
        """The prompt tokens a chart draws: an overflow at the size of the refused request."""
        return self.refused_prompt_tokens or self.prompt_tokens


class FloorMetrics(_Figures):
    """The floor of one case: its prompt tokens per model call and in total, and the total
    with every tool the box run offered (the schemas' share of the gap)."""

    prompt_tokens_per_call: list[int]
    prompt_tokens: int
    prompt_tokens_all_tools: int


class BoxVerdict(_Figures):
    """The box goal on one case: ``box`` tokens against the cheaper of inline and truncate (of
    those that passed). ``ratio`` is ``None`` when no rival passed; ``why`` says, in figures,
    why the goal was missed (or why it holds without a ratio)."""

    met: bool
    ratio: float | None = None
    against: str | None = None
    against_tokens: int | None = None
    why: str | None = None


class CaseMetrics(_Figures):
    """One case: its runs by strategy, its floor (when its box run passed) and the box goal."""

    runs: dict[str, RunMetrics]
    floor: FloorMetrics | None = None
    box_goal: BoxVerdict | None = None


class StrategyTotals(_Figures):
    """A strategy over every case: sums over the runs that passed, ratios over like cases
    (``ratio_to_inline`` over the cases both passed, ``ratio_to_floor`` over the cases it
    passed that have a floor), ``seconds`` over every run."""

    prompt_tokens: int
    completion_tokens: int
    passed: int
    cases: int
    context_overflows: int
    ratio_to_inline: float | None
    ratio_to_floor: float | None
    seconds: float
    usd_uncached: float | None = None
    usd_cached: float | None = None
    usd_cached_warm: float | None = None
    cached_tokens: int | None = None
    cached_tokens_reported: int | None = None
    #: prompt tokens written to the cache (runs that passed, cold cache)
    cache_write_tokens: int | None = None

    def passed_all(self) -> bool:
        """Whether the strategy passed every case it ran."""
        return self.passed == self.cases


class FloorTotals(_Figures):
    """The floor summed over the cases that have one."""

    prompt_tokens: int
    prompt_tokens_all_tools: int
    cases: int


class DesignStep(_Figures):
    """One box design between tool-context-relay's and the workbook's: what the step changed,
    its totals, and what it saved against the step before (``None`` when the two did not pass
    the same number of cases: unlike cannot be compared)."""

    design: str
    strategy: str
    step: str
    totals: StrategyTotals
    tokens_saved: int | None = None
    usd_uncached_saved: float | None = None
    usd_cached_saved: float | None = None


class PersonaRow(_Figures):
    """One mistake persona over its runs (:mod:`helpers.models.personas`): the guard meant to catch
    it, how often each guard fired, what passed, and its prompt tokens and model calls against
    the ideal model's on the same cases and strategy."""

    strategy: str
    mistake: str
    seen_in: str
    guard: str | None
    guard_meaning: str
    caught: bool
    guard_hits: dict[str, int]
    passed: int
    cases: int
    prompt_tokens: int
    ideal_prompt_tokens: int
    ratio_to_ideal: float | None
    model_calls: int
    ideal_model_calls: int
    failures: list[str]


class CachingChange(_Figures):
    """A case whose cheapest passing strategy is another once caching is counted, with both
    strategies' cached dollars and the share of their prompt tokens served from the cache."""

    case: str
    cheapest_uncached: str
    cheapest_cached: str
    usd_cached: dict[str, float]
    cached_share: dict[str, float]


class Caching(_Figures):
    """What prompt caching changes: per strategy the share of prompt tokens served from the
    cache (runs that passed, cold cache), and the cases whose cheapest strategy changes;
    ``other_models_warm`` the warm variant of :attr:`ComparisonMetrics.other_models`;
    ``not_cached_by_client`` the priced models this client's requests are not cached by (their
    provider caches only at ``cache_control`` breakpoints, which it does not send)."""

    cached_share: dict[str, float | None]
    cheapest_changes: list[CachingChange]
    other_models_warm: dict[str, dict[str, float]] = Field(default_factory=dict)
    not_cached_by_client: list[str] = Field(default_factory=list)


class Pricing(_Figures):
    """The list prices the dollars are at, in dollars per million tokens (``data/pricing.yaml``,
    checked on ``checked``); ``None`` when the price model is not in the table."""

    model: str
    checked: str
    input_usd_per_mtok: float | None
    cached_input_usd_per_mtok: float | None
    output_usd_per_mtok: float | None


class ScalingPoint(_Figures):
    """One run of the scaling task (:func:`helpers.evaluation.scaling.run_scaling`) at one size.

    ``prompt_tokens`` is the refused request's size for an overflow; ``reason`` the first
    failure reason ("" when it passed); ``looks_inside`` the calls to tools the task does not
    offer (resolve tools, the anchors' file reads); ``cut_at_output_tokens`` the completion
    tokens of a response cut at the model's output limit inside a tool call, else 0.
    """

    size_bytes: int
    prompt_tokens: int
    usd_cached: float
    seconds: float
    passed: bool
    status: str
    reason: str
    looks_inside: int
    cut_at_output_tokens: int


class ScalingResult(_Figures):
    """The scaling run: each strategy's points, smallest size first, and one sentence per
    strategy on where it breaks."""

    sizes_bytes: list[int]
    price_model: str
    context_window_tokens: int
    runs: dict[str, list[ScalingPoint]]
    breaks: dict[str, str]


class ComparisonMetrics(_Figures):
    """A whole comparison: the content of ``compare.json``.

    ``cases`` maps a case id to its runs; ``totals`` maps each strategy of the main table to
    its :class:`StrategyTotals`, in the order the runs were made; ``floor`` is the floor's
    total; ``design_steps`` the box designs in order; ``other_models`` the cached dollars (cold
    cache) per strategy at each priced model's list prices; ``personas`` one row per mistake persona;
    ``scaling`` the scaling run, if one was made.
    """

    model: str
    threshold: int | None
    limit_chars: int
    token_unit: str
    pricing: Pricing
    box_goal_ratio: float
    cases: dict[str, CaseMetrics]
    totals: dict[str, StrategyTotals]
    floor: FloorTotals
    design_steps: list[DesignStep]
    other_models: dict[str, dict[str, float]]
    caching: Caching
    personas: dict[str, PersonaRow]
    scaling: ScalingResult | None = None

    def strategies(self) -> list[str]:
        """The strategies of the main table, in order."""
        return list(self.totals)

    def box_goals(self) -> dict[str, BoxVerdict]:
        """The box goal of every case that has one, by case id."""
        return {c: e.box_goal for c, e in self.cases.items() if e.box_goal is not None}

    def as_json_text(self) -> str:
        """``compare.json``: indented JSON, ASCII only (:func:`helpers.text.escaping.for_json`)."""
        return for_json(self.model_dump(mode="json"), indent=2) + "\n"


def load_comparison(path: Path) -> ComparisonMetrics:
    """Read a ``compare.json`` written by ``workbook compare``.

    Raises:
        OSError: the file cannot be read.
        pydantic.ValidationError: (a :class:`ValueError`) the file is not a comparison: a
            field missing, unknown, or of the wrong type; the message names each field.
    """
    return ComparisonMetrics.model_validate_json(path.read_text(encoding="utf-8"))
