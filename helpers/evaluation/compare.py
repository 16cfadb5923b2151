"""The side-by-side comparison: the same cases under every strategy, measured.

Token figures come from the ``usage`` of each response (the offline model counts with
o200k_base), so a real model's run is measured the same way. For each case and strategy:

- ``prompt_tokens_per_call``, their total, and ``peak_context_tokens`` (the largest single
  prompt: what must fit in the context window);
- ``completion_tokens``, ``model_calls``, ``tool_calls``, ``seconds`` (wall time of the turn);
- ``tool_output_chars_in_context``: characters of tool results that entered the messages;
- ``status``, and ``context_overflow`` with ``refused_prompt_tokens`` when a request was longer
  than the model's context window (the provider's figure);
- ``usd_uncached`` and ``usd_cached``: dollars at the price model's list prices, without and
  with prompt caching (:mod:`helpers.evaluation.pricing`), ``cached_tokens`` (read from the
  cache) and ``cache_write_tokens`` (written to it, at the provider's write price);
- ``sinks_exact``: every sink received byte-exact data (``null`` when the case has no sink);
- ``passed`` and the ``reasons`` when not.

Totals count only the runs that passed (a run that failed is cheap and worth nothing), and each
ratio compares like with like: ``ratio_to_inline`` over the cases both passed,
``ratio_to_floor`` over the cases the strategy passed.

**The floor** of a case is a lower bound on what the task needs: the user prompt under the
system message every strategy shares, the schemas of only the tools the task calls, one bare
``internal://<id>`` for each result the box run kept out of the context, every look inside
the case lists as needed (no other), and the answer: no ``tool_search`` call (loading a tool is
no step of the task; the floor offers the tools it calls). It is derived from the ``box`` run and
counted with o200k_base. It bounds a model that calls the tools itself, one model call after
each round of tool calls: code mode (:mod:`helpers.context.code_mode`) calls them from a
program, in one model call, with no reference per result in its context, so it can go below the
floor (``ratio_to_floor`` under 1); its prompt holds the program and what the program returns
instead. **The box goal**: on every case, ``box`` costs at most
:data:`BOX_GOAL_RATIO` × the cheaper of ``inline`` and ``truncate`` (of those that passed);
where it does not, the report says why, in figures.

**Personas** (offline only, :mod:`helpers.models.personas`): each mistake persona runs every case
under its strategy; its row says which guard should catch the mistake, how often each guard
fired, how many cases still passed, and what the mistake cost in prompt tokens against the ideal
model on the same cases and strategy.

The figures are typed (:mod:`helpers.evaluation.metrics`); the report is written by
:mod:`helpers.evaluation.report` and drawn by :mod:`helpers.evaluation.comparison_plots`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers.base.guards import GUARDS
from helpers.context.boxing import make_reference, presented_reference_id
from helpers.context.instructions import GENERAL
from helpers.context.policies import BOX_DESIGNS
from helpers.context.resolve_tools import RESOLVE_TOOL_FUNCTIONS, as_five_tool_name
from helpers.context.strategies import (
    design_step_strategies,
    design_strategy,
    strategies_in_role,
    strategy_in_role,
    strategy_named,
)
from helpers.context.tool_search import TOOL_SEARCH_NAME
from helpers.evaluation.metrics import (
    BoxVerdict,
    Caching,
    CachingChange,
    CaseMetrics,
    ComparisonMetrics,
    DesignStep,
    FloorMetrics,
    FloorTotals,
    PersonaRow,
    Pricing,
    RunMetrics,
    ScalingResult,
    StrategyTotals,
)
from helpers.evaluation.pricing import (
    DEFAULT_PRICE_MODEL,
    Price,
    PriceTable,
    load_prices,
    turn_cost,
)
from helpers.evaluation.runs import CaseRun, refused_prompt_tokens
from helpers.loop.records import TurnRecord
from helpers.models.personas import OFFLINE_MODEL_NAME, PERSONA_SEPARATOR, PERSONAS
from helpers.text.tokens import count_chat_tokens

RESOLVE_TOOL_NAMES = {fn.__name__ for fn in RESOLVE_TOOL_FUNCTIONS} | {"internal_resource"}
#: The box goal: at most this many times the tokens of the cheaper of inline and truncate.
BOX_GOAL_RATIO = 1.05
#: What a token figure is, in compare.json.
TOKEN_UNIT = "o200k_base tokens from each response's usage"


def run_metrics(run: CaseRun, price: Price | None = None) -> RunMetrics:
    """The figures of one case run (see the module docstring); dollars when ``price`` is given."""
    record = run.record
    per_call = [c.prompt_tokens for c in record.model_calls]
    cost = turn_cost(record, price) if price is not None else None
    warm = turn_cost(record, price, warm=True) if price is not None else None
    reported = [c.cached_tokens_reported for c in record.model_calls]
    return RunMetrics(
        prompt_tokens_per_call=per_call,
        prompt_tokens=sum(per_call),
        peak_context_tokens=max(per_call, default=0),
        completion_tokens=sum(c.completion_tokens for c in record.model_calls),
        model_calls=len(record.model_calls),
        tool_calls=len(record.tool_calls),
        tool_output_chars_in_context=sum(len(t.result) for t in record.tool_calls),
        seconds=round(run.seconds, 3),
        status=record.status,
        context_overflow=record.status == "context_exceeded",
        refused_prompt_tokens=refused_prompt_tokens(record),
        sinks_exact=run.validation.sinks_exact,
        passed=run.passed,
        reasons=list(run.validation.reasons),
        cached_tokens=cost.cached_tokens if cost else None,
        usd_uncached=round(cost.uncached_usd, 6) if cost else None,
        usd_cached=round(cost.cached_usd, 6) if cost else None,
        usd_cached_warm=round(warm.cached_usd, 6) if warm else None,
        cached_tokens_reported=(
            sum(n or 0 for n in reported) if any(n is not None for n in reported) else None
        ),
        cache_write_tokens=cost.cache_write_tokens if cost else None,
    )


def bare_reference(content: str) -> str:
    """A tool message's content as the floor shows it: a presented reference (with its note and
    preview, or as a resource link) as the bare ``internal://<id>``; any other content as it
    is."""
    ref = presented_reference_id(content)
    return make_reference(ref) if ref else content


def _resolve_names(message: dict[str, Any]) -> list[str]:
    return [c["function"]["name"] for c in message.get("tool_calls") or []]


def floor_tokens(
    record: TurnRecord,
    needed_tools: Iterable[str],
    *,
    system: str | None = GENERAL,
    used_tools_only: bool = True,
) -> list[int]:
    """Prompt tokens per model call of the floor conversation derived from a ``box`` run.

    Drops every resolve call not in ``needed_tools`` and every ``tool_search`` call (each with
    its ``tool`` message, and the model call that made it when it made no other call), shows
    every reference as a bare ``internal://<id>``, puts ``system`` (the system message all
    strategies share; ``None`` keeps the run's own) in place of the system message, and offers
    only the schemas of the tools the kept conversation calls (with ``used_tools_only=False``,
    every tool the run offered but ``tool_search``: what the tools cost is then seen). A resolve
    call through the one ``internal_resource`` tool counts as needed when its operation's
    five-tool name is (``op="grep"`` is ``internal_resource_grep``).
    """
    needed = set(needed_tools)

    def unneeded(call: dict[str, Any]) -> bool:
        if call["function"]["name"] == TOOL_SEARCH_NAME:
            return True
        name = as_five_tool_name(call["function"]["name"], call["function"].get("arguments"))
        return name in RESOLVE_TOOL_NAMES and name not in needed

    dropped: set[str] = set()
    kept: list[dict[str, Any]] = []
    cut_at: list[int] = []  # index in ``kept`` where each kept model call's prompt ends
    messages = record.messages
    position = 0
    for call in record.model_calls:
        prompt_end = call.messages_sent
        while position < prompt_end:
            message = messages[position]
            position += 1
            if message.get("role") == "tool":
                if message.get("tool_call_id") in dropped:
                    continue
                kept.append(
                    {**message, "content": bare_reference(str(message.get("content") or ""))}
                )
            elif message.get("role") == "assistant" and message.get("tool_calls"):
                calls = [c for c in message["tool_calls"] if not unneeded(c)]
                dropped.update(c["id"] for c in message["tool_calls"] if unneeded(c))
                if not calls:
                    continue
                kept.append({**message, "tool_calls": calls})
            elif message.get("role") == "system" and system is not None and position == 1:
                kept.append({**message, "content": system})
            else:
                kept.append(message)
        answer = messages[prompt_end] if prompt_end < len(messages) else None
        is_dropped_call = bool(
            answer and answer.get("tool_calls") and all(unneeded(c) for c in answer["tool_calls"])
        )
        if not is_dropped_call:
            cut_at.append(len(kept))
    used = {name for m in kept for name in _resolve_names(m)}
    offered = [s for schemas in record.schemas_per_call for s in schemas] or record.tool_schemas
    schemas = list(
        {
            s["function"]["name"]: s
            for s in offered
            if s["function"]["name"] in used
            or (not used_tools_only and s["function"]["name"] != TOOL_SEARCH_NAME)
        }.values()
    )
    return [count_chat_tokens(kept[:end], schemas) for end in cut_at]


@dataclass
class Comparison:
    """All runs of a comparison, from which :meth:`metrics` derives its figures.

    ``runs`` are the case runs (persona runs among them, marked by ``CaseRun.persona``);
    ``model`` the model that ran them (the main runs: when it names an offline persona,
    ``offline-reference:<persona>``, that persona's runs are the main ones, and the other
    personas' runs are compared with them); ``threshold`` (tokens for ``box``, characters for
    ``box-tcr``; ``None``: each strategy's default) and ``limit`` (preview characters) the
    options they ran with. ``price_model`` names the model whose list prices turn tokens into
    dollars (:data:`helpers.evaluation.pricing.DEFAULT_PRICE_MODEL` by default); ``prices`` is the
    whole table, for the totals on every priced model; ``scaling`` holds a
    :func:`helpers.evaluation.scaling.run_scaling` result, if one was run.
    """

    runs: list[CaseRun]
    model: str
    threshold: int | None
    limit: int
    price_model: str = DEFAULT_PRICE_MODEL
    prices: PriceTable | None = None
    scaling: ScalingResult | None = None
    _price: Price | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.prices = self.prices or load_prices()
        self._price = self.prices.get(self.price_model)

    @property
    def main_persona(self) -> str | None:
        """The persona whose runs are the main ones: ``None`` for the ideal model or a real one,
        else the persona :attr:`model` names."""
        prefix = OFFLINE_MODEL_NAME + PERSONA_SEPARATOR
        return self.model[len(prefix) :] if self.model.startswith(prefix) else None

    def strategies(self) -> list[str]:
        """The strategies of the main table (the design steps have a table of their own)."""
        return [v for v in self.all_strategies() if v not in design_step_strategies()]

    def all_strategies(self) -> list[str]:
        """Every strategy the main model ran, in the order of the runs."""
        main = self.main_persona
        return list(dict.fromkeys(r.strategy for r in self.runs if r.persona == main))

    def case_ids(self) -> list[str]:
        """Every case id, in the order of the runs."""
        return list(dict.fromkeys(r.case.id for r in self.runs))

    def run(self, case_id: str, strategy: str, persona: str | None = None) -> CaseRun | None:
        """The run of ``case_id`` under ``strategy`` by ``persona`` (``None``: the main model,
        :attr:`main_persona`)."""
        persona = persona or self.main_persona
        return next(
            (
                r
                for r in self.runs
                if r.case.id == case_id and r.strategy == strategy and r.persona == persona
            ),
            None,
        )

    def persona_rows(self) -> dict[str, PersonaRow]:
        """One row per persona, by name (see :class:`helpers.evaluation.metrics.PersonaRow`)."""
        return {
            name: self._persona_row(name)
            for name in dict.fromkeys(r.persona for r in self.runs if r.persona)
            if name != self.main_persona
        }

    def _persona_row(self, name: str) -> PersonaRow:
        runs = [r for r in self.runs if r.persona == name]
        persona = PERSONAS.get(name)
        guards: dict[str, int] = {}
        for run in runs:
            for guard, count in run.record.guard_counts().items():
                guards[guard] = guards.get(guard, 0) + count
        ideal = [i for i in (self.run(r.case.id, r.strategy) for r in runs) if i is not None]
        ideal_tokens = sum(i.record.usage()["prompt_tokens"] for i in ideal)
        tokens = sum(r.record.usage()["prompt_tokens"] for r in runs)
        expected = persona.guard if persona else None
        return PersonaRow(
            strategy=", ".join(dict.fromkeys(r.strategy for r in runs)),
            mistake=persona.mistake if persona else "",
            seen_in=persona.seen_in if persona else "",
            guard=expected,
            guard_meaning=GUARDS.get(expected or "", "no guard: it only costs tokens"),
            caught=bool(expected and guards.get(expected)),
            guard_hits=guards,
            passed=sum(r.passed for r in runs),
            cases=len(runs),
            prompt_tokens=tokens,
            ideal_prompt_tokens=ideal_tokens,
            ratio_to_ideal=round(tokens / ideal_tokens, 3) if ideal_tokens else None,
            model_calls=sum(len(r.record.model_calls) for r in runs),
            ideal_model_calls=sum(len(i.record.model_calls) for i in ideal),
            failures=[
                f"{r.case.id}: {'; '.join(r.validation.reasons)}" for r in runs if not r.passed
            ],
        )

    def floor(self, case_id: str, used_tools_only: bool = True) -> list[int] | None:
        """The floor's prompt tokens per call, from the case's run of the subject strategy
        (``box``, :func:`~helpers.context.strategies.strategy_in_role`), if it passed."""
        subject = self.run(case_id, strategy_in_role("subject"))
        if subject is None or not subject.passed:
            return None
        needed = {e["tool_name"] for e in subject.case.tool_calls}
        return floor_tokens(subject.record, needed, used_tools_only=used_tools_only)

    def case_metrics(self, case_id: str) -> CaseMetrics:
        """One case's runs by strategy (the design steps too), its floor and its box goal."""
        runs = {
            strategy: run_metrics(run, self._price)
            for strategy in self.all_strategies()
            if (run := self.run(case_id, strategy)) is not None
        }
        per_call = self.floor(case_id)
        floor = None
        if per_call is not None:
            floor = FloorMetrics(
                prompt_tokens_per_call=per_call,
                prompt_tokens=sum(per_call),
                prompt_tokens_all_tools=sum(self.floor(case_id, False) or []),
            )
        return CaseMetrics(runs=runs, floor=floor, box_goal=box_verdict(runs))

    def metrics(self) -> ComparisonMetrics:
        """Every figure of the comparison: the content of ``compare.json``."""
        price = self._price
        cases = {case_id: self.case_metrics(case_id) for case_id in self.case_ids()}
        floored = [c.floor for c in cases.values() if c.floor is not None]
        steps = {
            v: strategy_totals(cases, v)
            for v in self.all_strategies()
            if strategy_named(v).design is not None
        }
        return ComparisonMetrics(
            model=self.model,
            threshold=self.threshold,
            limit_chars=self.limit,
            token_unit=TOKEN_UNIT,
            pricing=Pricing(
                model=self.price_model,
                checked=self.prices.checked if self.prices else "",
                input_usd_per_mtok=price.input if price else None,
                cached_input_usd_per_mtok=price.cached_input if price else None,
                output_usd_per_mtok=price.output if price else None,
            ),
            box_goal_ratio=BOX_GOAL_RATIO,
            cases=cases,
            totals={v: strategy_totals(cases, v) for v in self.strategies()},
            floor=FloorTotals(
                prompt_tokens=sum(f.prompt_tokens for f in floored),
                prompt_tokens_all_tools=sum(f.prompt_tokens_all_tools for f in floored),
                cases=len(floored),
            ),
            design_steps=design_steps(steps),
            other_models=self.other_models(),
            caching=caching_conclusions(cases, self.strategies()).model_copy(
                update={
                    "other_models_warm": self.other_models(warm=True),
                    "not_cached_by_client": [
                        name
                        for name, price in (self.prices.models.items() if self.prices else [])
                        if not price.cached_by()
                    ],
                }
            ),
            personas=self.persona_rows(),
            scaling=self.scaling,
        )

    def other_models(self, *, warm: bool = False) -> dict[str, dict[str, float]]:
        """Cached dollars per strategy (passed runs) at every priced model's list prices, from a
        cold cache (``warm``: the system message and tools already cached)."""
        out: dict[str, dict[str, float]] = {}
        if self.prices is None:
            return out
        for name, price in self.prices.models.items():
            row: dict[str, float] = {}
            for strategy in self.strategies():
                runs = [
                    r
                    for r in self.runs
                    if r.strategy == strategy and r.persona == self.main_persona and r.passed
                ]
                row[strategy] = round(
                    sum(turn_cost(r.record, price, warm=warm).cached_usd for r in runs), 6
                )
            out[name] = row
        return out


def _sum_usd(runs: Iterable[RunMetrics], key: str, places: int) -> float:
    return round(sum(getattr(m, key) or 0.0 for m in runs), places)


def strategy_totals(cases: dict[str, CaseMetrics], strategy: str) -> StrategyTotals:
    """A strategy's totals: sums over the runs that passed, ratios over like cases (see
    :class:`helpers.evaluation.metrics.StrategyTotals`)."""
    runs = {cid: c.runs[strategy] for cid, c in cases.items() if strategy in c.runs}
    passed = {cid: m for cid, m in runs.items() if m.passed}

    baseline = strategy_in_role("baseline")

    def baseline_passed(cid: str) -> bool:
        run = cases[cid].runs.get(baseline)
        return run is not None and run.passed

    both = [cid for cid in passed if baseline_passed(cid)]
    floored = {cid: f for cid in passed if (f := cases[cid].floor) is not None}
    mine_both = sum(passed[c].prompt_tokens for c in both)
    inline_both = sum(cases[c].runs[baseline].prompt_tokens for c in both)
    mine_floored = sum(passed[c].prompt_tokens for c in floored)
    floor = sum(f.prompt_tokens for f in floored.values())
    priced = any(m.usd_cached is not None for m in passed.values())
    return StrategyTotals(
        prompt_tokens=sum(m.prompt_tokens for m in passed.values()),
        completion_tokens=sum(m.completion_tokens for m in passed.values()),
        passed=len(passed),
        cases=len(runs),
        context_overflows=sum(1 for m in runs.values() if m.context_overflow),
        ratio_to_inline=round(mine_both / inline_both, 3) if inline_both else None,
        ratio_to_floor=round(mine_floored / floor, 3) if floor else None,
        seconds=round(sum(m.seconds for m in runs.values()), 2),
        usd_uncached=_sum_usd(passed.values(), "usd_uncached", 4) if priced else None,
        usd_cached=_sum_usd(passed.values(), "usd_cached", 4) if priced else None,
        usd_cached_warm=_sum_usd(passed.values(), "usd_cached_warm", 4) if priced else None,
        cached_tokens_reported=(
            sum(m.cached_tokens_reported or 0 for m in passed.values())
            if any(m.cached_tokens_reported is not None for m in passed.values())
            else None
        ),
        cached_tokens=sum(m.cached_tokens or 0 for m in passed.values()) if priced else None,
        cache_write_tokens=(
            sum(m.cache_write_tokens or 0 for m in passed.values()) if priced else None
        ),
    )


def design_steps(steps: dict[str, StrategyTotals]) -> list[DesignStep]:
    """The box designs in order (:data:`helpers.context.policies.BOX_DESIGNS`), each with what
    its step changed and what it saved against the step before, when both passed as many
    cases."""
    rows: list[DesignStep] = []
    previous: StrategyTotals | None = None
    for name, design in BOX_DESIGNS.items():
        strategy = design_strategy(name)
        total = steps.get(strategy) if strategy else None
        if strategy is None or total is None:
            continue
        # unlike cannot be compared: a step that passed fewer cases saved nothing
        before = previous if previous is not None and previous.passed == total.passed else None
        rows.append(
            DesignStep(
                design=name,
                strategy=strategy,
                step=design.step,
                totals=total,
                tokens_saved=before.prompt_tokens - total.prompt_tokens if before else None,
                usd_uncached_saved=_saved(before, total, "usd_uncached"),
                usd_cached_saved=_saved(before, total, "usd_cached"),
            )
        )
        previous = total
    return rows


def _saved(before: StrategyTotals | None, after: StrategyTotals, key: str) -> float | None:
    """Dollars ``after`` saved against ``before`` (both priced), to the hundredth of a cent."""
    was, now = getattr(before, key, None), getattr(after, key)
    return None if was is None or now is None else round(was - now, 4)


def box_verdict(runs: dict[str, RunMetrics], strategy: str | None = None) -> BoxVerdict | None:
    """The box goal on one case from its runs by strategy: ``strategy``'s tokens (default: the
    subject's, ``box``) against the cheaper of the baseline and the rivals (inline and truncate,
    :func:`~helpers.context.strategies.strategies_in_role`) of those that passed, the ratio,
    whether it is at most :data:`BOX_GOAL_RATIO`, and why not, in figures. ``None`` when
    ``strategy`` did not run."""
    strategy = strategy or strategy_in_role("subject")
    box = runs.get(strategy)
    if box is None:
        return None
    compared = strategies_in_role("baseline", "rival")
    rivals = {v: runs[v] for v in compared if v in runs and runs[v].passed}
    if not box.passed:
        return BoxVerdict(met=False, why=f"{strategy} failed: {'; '.join(box.reasons)}")
    if not rivals:
        failed = ", ".join(
            f"{v} {'overflowed the context window' if runs[v].context_overflow else 'failed'}"
            for v in compared
            if v in runs
        )
        return BoxVerdict(met=True, why=f"only {strategy} passed ({failed})")
    best_name, best = min(rivals.items(), key=lambda kv: kv[1].prompt_tokens)
    ratio = box.prompt_tokens / best.prompt_tokens
    met = ratio <= BOX_GOAL_RATIO
    return BoxVerdict(
        met=met,
        ratio=round(ratio, 3),
        against=best_name,
        against_tokens=best.prompt_tokens,
        why=None if met else _why_missed(box, best),
    )


def _why_missed(box: RunMetrics, best: RunMetrics) -> str:
    extra = box.model_calls - best.model_calls
    if extra > 0:
        return (
            f"{box.prompt_tokens:,} tokens in {box.model_calls} model calls against "
            f"{best.prompt_tokens:,} in {best.model_calls}: {extra} more call(s) to "
            "look inside, each paying the whole context again"
        )
    per_call = (box.prompt_tokens - best.prompt_tokens) / max(box.model_calls, 1)
    return (
        f"{box.prompt_tokens:,} tokens against {best.prompt_tokens:,} in the same "
        f"{box.model_calls} calls: {per_call:,.0f} more tokens a call (the reference "
        "note, the resolve tool and its instructions)"
    )


def _cached_share(m: RunMetrics) -> float:
    return round((m.cached_tokens or 0) / max(m.prompt_tokens, 1), 3)


def caching_conclusions(cases: dict[str, CaseMetrics], strategies: list[str]) -> Caching:
    """What prompt caching changes: per strategy the share of prompt tokens served from the
    cache, and the cases whose cheapest passing strategy is another one once cached."""
    share: dict[str, float | None] = {}
    for strategy in strategies:
        runs = [c.runs[strategy] for c in cases.values() if strategy in c.runs]
        passed = [m for m in runs if m.passed]
        prompt = sum(m.prompt_tokens for m in passed)
        cached = sum(m.cached_tokens or 0 for m in passed)
        share[strategy] = round(cached / prompt, 3) if prompt else None
    changes = []
    for case_id, entry in cases.items():
        passing = {v: entry.runs[v] for v in strategies if v in entry.runs and entry.runs[v].passed}
        if not passing or any(m.usd_cached is None for m in passing.values()):
            continue
        uncached = min(passing, key=lambda v: passing[v].usd_uncached or 0.0)
        cached = min(passing, key=lambda v: passing[v].usd_cached or 0.0)
        if uncached != cached:
            changes.append(
                CachingChange(
                    case=case_id,
                    cheapest_uncached=uncached,
                    cheapest_cached=cached,
                    usd_cached={v: passing[v].usd_cached or 0.0 for v in (uncached, cached)},
                    cached_share={v: _cached_share(passing[v]) for v in (uncached, cached)},
                )
            )
    return Caching(cached_share=share, cheapest_changes=changes)


def write_report(
    comparison: Comparison | ComparisonMetrics, out_dir: Path, *, focus_case: str | None = None
) -> dict[str, Path]:
    """Write ``compare.json``, ``compare.md`` and ``compare.png`` into ``out_dir`` (and
    ``scaling.png`` when the comparison holds a scaling run); returns the paths by kind
    (``json``, ``md``, ``png``, ``scaling_png``)."""
    from helpers.evaluation.comparison_plots import plot
    from helpers.evaluation.report import comparison_markdown
    from helpers.evaluation.scaling import plot_scaling

    metrics = comparison.metrics() if isinstance(comparison, Comparison) else comparison
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {
        "json": out_dir / "compare.json",
        "md": out_dir / "compare.md",
        "png": out_dir / "compare.png",
    }
    paths["json"].write_text(metrics.as_json_text(), encoding="utf-8")
    paths["md"].write_text(comparison_markdown(metrics), encoding="utf-8")
    plot(metrics, paths["png"], focus_case=focus_case)
    if metrics.scaling is not None:
        paths["scaling_png"] = plot_scaling(metrics.scaling, out_dir / "scaling.png")
    return paths
