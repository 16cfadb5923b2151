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
  with prompt caching (:mod:`helpers.evaluation.pricing`), and ``cached_tokens``;
- ``sinks_exact``: every sink received byte-exact data (``null`` when the case has no sink);
- ``passed`` and the ``reasons`` when not.

Totals count only the runs that passed (a run that failed is cheap and worth nothing), and each
ratio compares like with like: ``ratio_to_inline`` over the cases both passed,
``ratio_to_floor`` over the cases the strategy passed.

**The floor** of a case is a lower bound on what the task needs: the user prompt under the
system message every strategy shares, the schemas of only the tools the task calls, one bare
``internal://<id>`` for each result the box run kept out of the context, every look inside
the case lists as needed (no other), and the answer. It is derived from the ``box`` run and
counted with o200k_base. **The box goal**: on every case, ``box`` costs at most
:data:`BOX_GOAL_RATIO` × the cheaper of ``inline`` and ``truncate`` (of those that passed);
where it does not, the report says why, in figures.

**Personas** (offline only, :mod:`helpers.personas`): each mistake persona runs every case
under its strategy; its row says which guard should catch the mistake, how often each guard
fired, how many cases still passed, and what the mistake cost in prompt tokens against the ideal
model on the same cases and strategy.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers.context.boxing import make_reference, presented_reference_id
from helpers.context.policies import BOX_DESIGNS
from helpers.context.resolve_tools import RESOLVE_TOOL_FUNCTIONS, as_five_tool_name
from helpers.context.strategies import design_strategy
from helpers.escaping import (
    dollars_as_text,
    for_html,
    for_json,
    for_markdown,
    for_notebook_html,
)
from helpers.evaluation.pricing import (
    DEFAULT_PRICE_MODEL,
    Price,
    PriceTable,
    load_prices,
    turn_cost,
)
from helpers.evaluation.runs import DESIGN_STEPS, CaseRun, refused_prompt_tokens
from helpers.guards import GUARDS
from helpers.instructions import GENERAL
from helpers.loop.agent import TurnRecord
from helpers.personas import PERSONAS
from helpers.tokens import count_chat_tokens

RESOLVE_TOOL_NAMES = {fn.__name__ for fn in RESOLVE_TOOL_FUNCTIONS} | {"internal_resource"}
#: The box goal: at most this many times the tokens of the cheaper of inline and truncate.
BOX_GOAL_RATIO = 1.05


def run_metrics(run: CaseRun, price: Price | None = None) -> dict[str, Any]:
    """The figures of one case run (see the module docstring)."""
    record = run.record
    per_call = [c.prompt_tokens for c in record.model_calls]
    overflow = record.status == "context_exceeded"
    metrics: dict[str, Any] = {
        "prompt_tokens_per_call": per_call,
        "prompt_tokens": sum(per_call),
        "peak_context_tokens": max(per_call, default=0),
        "completion_tokens": sum(c.completion_tokens for c in record.model_calls),
        "model_calls": len(record.model_calls),
        "tool_calls": len(record.tool_calls),
        "tool_output_chars_in_context": sum(len(t.result) for t in record.tool_calls),
        "seconds": round(run.seconds, 3),
        "status": record.status,
        "context_overflow": overflow,
        "refused_prompt_tokens": refused_prompt_tokens(record),
        "sinks_exact": run.validation.sinks_exact,
        "passed": run.passed,
        "reasons": run.validation.reasons,
    }
    if price is not None:
        cost = turn_cost(record, price)
        metrics["cached_tokens"] = cost.cached_tokens
        metrics["usd_uncached"] = round(cost.uncached_usd, 6)
        metrics["usd_cached"] = round(cost.cached_usd, 6)
    return metrics


def _bare(content: str) -> str:
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

    Drops every resolve call not in ``needed_tools`` (with its ``tool`` message and the model
    call that made it), shows every reference as a bare ``internal://<id>``, puts ``system``
    (the system message all strategies share; ``None`` keeps the run's own) in place of the
    system message, and offers only the schemas of the tools the kept conversation calls (with
    ``used_tools_only=False``, every tool the run offered: what the tools cost is then seen). A
    resolve call through the one ``internal_resource`` tool counts as needed when its operation's
    five-tool name is (``op="grep"`` is ``internal_resource_grep``).
    """
    needed = set(needed_tools)

    def unneeded(call: dict[str, Any]) -> bool:
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
                kept.append({**message, "content": _bare(str(message.get("content") or ""))})
            elif message.get("role") == "assistant" and message.get("tool_calls"):
                if all(unneeded(c) for c in message["tool_calls"]):
                    dropped.update(c["id"] for c in message["tool_calls"])
                    continue
                kept.append(message)
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
            if s["function"]["name"] in used or not used_tools_only
        }.values()
    )
    return [count_chat_tokens(kept[:end], schemas) for end in cut_at]


@dataclass
class Comparison:
    """All runs of a comparison and the figures derived from them.

    ``price`` names the model whose list prices turn tokens into dollars
    (:data:`helpers.evaluation.pricing.DEFAULT_PRICE_MODEL` by default); ``prices`` is the whole table, for
    the totals on every priced model; ``scaling`` holds a :func:`helpers.evaluation.scaling.run_scaling`
    result, if one was run.
    """

    runs: list[CaseRun]
    model: str
    threshold: int | None
    limit: int
    price_model: str = DEFAULT_PRICE_MODEL
    prices: PriceTable | None = None
    scaling: dict[str, Any] | None = None
    _price: Price | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.prices = self.prices or load_prices()
        self._price = self.prices.get(self.price_model)

    def strategies(self) -> list[str]:
        """The strategies of the main table (the design steps have a table of their own)."""
        return [v for v in self.all_strategies() if v not in DESIGN_STEPS]

    def all_strategies(self) -> list[str]:
        return list(dict.fromkeys(r.strategy for r in self.runs if r.persona is None))

    def case_ids(self) -> list[str]:
        return list(dict.fromkeys(r.case.id for r in self.runs))

    def run(self, case_id: str, strategy: str, persona: str | None = None) -> CaseRun | None:
        return next(
            (
                r
                for r in self.runs
                if r.case.id == case_id and r.strategy == strategy and r.persona == persona
            ),
            None,
        )

    def persona_rows(self) -> dict[str, Any]:
        """One row per persona: its mistake, the guard meant to catch it, what fired, what passed,
        and its prompt tokens against the ideal model's on the same cases and strategy."""
        rows: dict[str, Any] = {}
        for name in dict.fromkeys(r.persona for r in self.runs if r.persona):
            runs = [r for r in self.runs if r.persona == name]
            persona = PERSONAS.get(name)
            guards: dict[str, int] = {}
            for run in runs:
                for guard, count in run.record.guard_counts().items():
                    guards[guard] = guards.get(guard, 0) + count
            ideal = [self.run(r.case.id, r.strategy) for r in runs]
            ideal_tokens = sum(i.record.usage()["prompt_tokens"] for i in ideal if i is not None)
            tokens = sum(r.record.usage()["prompt_tokens"] for r in runs)
            expected = persona.guard if persona else None
            rows[name] = {
                "strategy": ", ".join(dict.fromkeys(r.strategy for r in runs)),
                "mistake": persona.mistake if persona else "",
                "seen_in": persona.seen_in if persona else "",
                "guard": expected,
                "guard_meaning": GUARDS.get(expected or "", "no guard: it only costs tokens"),
                "caught": bool(expected and guards.get(expected)),
                "guard_hits": guards,
                "passed": sum(r.passed for r in runs),
                "cases": len(runs),
                "prompt_tokens": tokens,
                "ideal_prompt_tokens": ideal_tokens,
                "ratio_to_ideal": round(tokens / ideal_tokens, 3) if ideal_tokens else None,
                "model_calls": sum(len(r.record.model_calls) for r in runs),
                "ideal_model_calls": sum(len(i.record.model_calls) for i in ideal if i),
                "failures": [
                    f"{r.case.id}: {'; '.join(r.validation.reasons)}" for r in runs if not r.passed
                ],
            }
        return rows

    def floor(self, case_id: str, used_tools_only: bool = True) -> list[int] | None:
        """The floor's prompt tokens per call, from the case's ``box`` run (if it passed)."""
        box = self.run(case_id, "box")
        if box is None or not box.passed:
            return None
        needed = {e["tool_name"] for e in box.case.tool_calls}
        return floor_tokens(box.record, needed, used_tools_only=used_tools_only)

    def to_json(self) -> dict[str, Any]:
        """The content of ``compare.json``."""
        price = self._price
        cases: dict[str, Any] = {}
        for case_id in self.case_ids():
            entry: dict[str, Any] = {}
            for strategy in self.all_strategies():
                run = self.run(case_id, strategy)
                if run is not None:
                    entry[strategy] = run_metrics(run, price)
            floor = self.floor(case_id)
            if floor is not None:
                entry["floor"] = {"prompt_tokens_per_call": floor, "prompt_tokens": sum(floor)}
                entry["floor"]["prompt_tokens_all_tools"] = sum(self.floor(case_id, False) or [])
            verdict = box_verdict(entry)
            if verdict is not None:
                entry["box_goal"] = verdict
            cases[case_id] = entry
        totals = {v: _total(cases, v) for v in self.strategies()}
        floor_total = sum(c["floor"]["prompt_tokens"] for c in cases.values() if "floor" in c)
        totals["floor"] = {
            "prompt_tokens": floor_total,
            "prompt_tokens_all_tools": sum(
                c["floor"]["prompt_tokens_all_tools"] for c in cases.values() if "floor" in c
            ),
            "cases": sum("floor" in c for c in cases.values()),
        }
        steps = {
            v: _total(cases, v)
            for v in self.all_strategies()
            if v in DESIGN_STEPS or v in ("box", "box-tcr")
        }
        data: dict[str, Any] = {
            "model": self.model,
            "threshold": self.threshold,
            "limit_chars": self.limit,
            "token_unit": "o200k_base tokens from each response's usage",
            "pricing": {
                "model": self.price_model,
                "checked": self.prices.checked if self.prices else "",
                "input_usd_per_mtok": price.input if price else None,
                "cached_input_usd_per_mtok": price.cached_input if price else None,
                "output_usd_per_mtok": price.output if price else None,
            },
            "box_goal_ratio": BOX_GOAL_RATIO,
            "cases": cases,
            "totals": totals,
            "design_steps": _design_steps(steps),
            "other_models": self.other_models(),
            "caching": caching_conclusions(cases, self.strategies()),
            "personas": self.persona_rows(),
        }
        if self.scaling is not None:
            data["scaling"] = self.scaling
        return data

    def other_models(self) -> dict[str, dict[str, float]]:
        """Cached dollars per strategy (passed runs) at every priced model's list prices."""
        out: dict[str, dict[str, float]] = {}
        if self.prices is None:
            return out
        for name, price in self.prices.models.items():
            row: dict[str, float] = {}
            for strategy in self.strategies():
                runs = [
                    r
                    for r in self.runs
                    if r.strategy == strategy and r.persona is None and r.passed
                ]
                row[strategy] = round(sum(turn_cost(r.record, price).cached_usd for r in runs), 6)
            out[name] = row
        return out


def _total(cases: dict[str, Any], strategy: str) -> dict[str, Any]:
    """A strategy's totals: over the runs that passed, ratios over like cases."""
    runs = {cid: c[strategy] for cid, c in cases.items() if strategy in c}
    passed = {cid: m for cid, m in runs.items() if m["passed"]}
    both = [cid for cid in passed if cases[cid].get("inline", {}).get("passed")]
    floored = [cid for cid in passed if "floor" in cases[cid]]
    mine_both = sum(passed[c]["prompt_tokens"] for c in both)
    inline_both = sum(cases[c]["inline"]["prompt_tokens"] for c in both)
    mine_floored = sum(passed[c]["prompt_tokens"] for c in floored)
    floor = sum(cases[c]["floor"]["prompt_tokens"] for c in floored)
    total: dict[str, Any] = {
        "prompt_tokens": sum(m["prompt_tokens"] for m in passed.values()),
        "completion_tokens": sum(m["completion_tokens"] for m in passed.values()),
        "passed": len(passed),
        "cases": len(runs),
        "context_overflows": sum(1 for m in runs.values() if m["context_overflow"]),
        "ratio_to_inline": round(mine_both / inline_both, 3) if inline_both else None,
        "ratio_to_floor": round(mine_floored / floor, 3) if floor else None,
        "seconds": round(sum(m["seconds"] for m in runs.values()), 2),
    }
    if any("usd_cached" in m for m in passed.values()):
        total["usd_uncached"] = round(sum(m["usd_uncached"] for m in passed.values()), 4)
        total["usd_cached"] = round(sum(m["usd_cached"] for m in passed.values()), 4)
        total["cached_tokens"] = sum(m["cached_tokens"] for m in passed.values())
    return total


def _design_steps(steps: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The box designs in order, each with what its step changed and bought."""
    rows: list[dict[str, Any]] = []
    previous: dict[str, Any] | None = None
    for name, design in BOX_DESIGNS.items():
        strategy = design_strategy(name)
        total = steps.get(strategy) if strategy else None
        if total is None:
            continue
        row = {"design": name, "strategy": strategy, "step": design.step, **total}
        if previous is not None and previous["passed"] == total["passed"]:
            row["tokens_saved"] = previous["prompt_tokens"] - total["prompt_tokens"]
            if "usd_cached" in total:
                row["usd_uncached_saved"] = round(
                    previous["usd_uncached"] - total["usd_uncached"], 4
                )
                row["usd_cached_saved"] = round(previous["usd_cached"] - total["usd_cached"], 4)
        rows.append(row)
        previous = total
    return rows


def box_verdict(entry: dict[str, Any], strategy: str = "box") -> dict[str, Any] | None:
    """The box goal on one case: ``box`` tokens against the cheaper of inline and truncate (of
    those that passed), the ratio, whether it is met, and why not, in figures."""
    box = entry.get(strategy)
    if box is None:
        return None
    rivals = {v: entry[v] for v in ("inline", "truncate") if v in entry and entry[v]["passed"]}
    if not box["passed"]:
        return {"met": False, "why": f"{strategy} failed: {'; '.join(box['reasons'])}"}
    if not rivals:
        failed = ", ".join(
            f"{v} {'overflowed the context window' if entry[v]['context_overflow'] else 'failed'}"
            for v in ("inline", "truncate")
            if v in entry
        )
        return {"met": True, "ratio": None, "why": f"only {strategy} passed ({failed})"}
    best_name, best = min(rivals.items(), key=lambda kv: kv[1]["prompt_tokens"])
    ratio = box["prompt_tokens"] / best["prompt_tokens"]
    verdict: dict[str, Any] = {
        "met": ratio <= BOX_GOAL_RATIO,
        "ratio": round(ratio, 3),
        "against": best_name,
        "against_tokens": best["prompt_tokens"],
    }
    if not verdict["met"]:
        extra = box["model_calls"] - best["model_calls"]
        if extra > 0:
            why = (
                f"{box['prompt_tokens']:,} tokens in {box['model_calls']} model calls against "
                f"{best['prompt_tokens']:,} in {best['model_calls']}: {extra} more call(s) to "
                "look inside, each paying the whole context again"
            )
        else:
            per_call = (box["prompt_tokens"] - best["prompt_tokens"]) / max(box["model_calls"], 1)
            why = (
                f"{box['prompt_tokens']:,} tokens against {best['prompt_tokens']:,} in the same "
                f"{box['model_calls']} calls: {per_call:,.0f} more tokens a call (the reference "
                "note, the resolve tool and its instructions)"
            )
        verdict["why"] = why
    return verdict


def caching_conclusions(cases: dict[str, Any], strategies: list[str]) -> dict[str, Any]:
    """What prompt caching changes: per strategy the share of prompt tokens served from the
    cache, and the cases whose cheapest passing strategy is another one once cached."""
    share: dict[str, float | None] = {}
    for strategy in strategies:
        runs = [c[strategy] for c in cases.values() if strategy in c and c[strategy]["passed"]]
        prompt = sum(m["prompt_tokens"] for m in runs)
        cached = sum(m.get("cached_tokens", 0) for m in runs)
        share[strategy] = round(cached / prompt, 3) if prompt else None
    changes = []
    for case_id, entry in cases.items():
        passing = {v: entry[v] for v in strategies if v in entry and entry[v]["passed"]}
        if not passing or not all("usd_cached" in m for m in passing.values()):
            continue
        uncached = min(passing, key=lambda v: passing[v]["usd_uncached"])
        cached = min(passing, key=lambda v: passing[v]["usd_cached"])
        if uncached != cached:
            changes.append(
                {
                    "case": case_id,
                    "cheapest_uncached": uncached,
                    "cheapest_cached": cached,
                    "usd_cached": {
                        uncached: passing[uncached]["usd_cached"],
                        cached: passing[cached]["usd_cached"],
                    },
                    "cached_share": {
                        v: round(
                            passing[v]["cached_tokens"] / max(passing[v]["prompt_tokens"], 1), 3
                        )
                        for v in (uncached, cached)
                    },
                }
            )
    return {"cached_share": share, "cheapest_changes": changes}


def _cell(m: dict[str, Any]) -> str:
    if m["context_overflow"]:
        refused = m.get("refused_prompt_tokens")
        return f"overflow ({refused:,}) ❌" if refused else "overflow ❌"
    return f"{m['prompt_tokens']:,} {'✅' if m['passed'] else '❌'}"


def _usd(value: float | None) -> str:
    """Dollars to the hundredth of a cent under $1, to the cent above: ``-$0.0407``, ``$1.21``."""
    if value is None:
        return "–"
    sign, amount = ("-" if value < 0 else ""), abs(value)
    return f"{sign}${amount:,.4f}" if amount < 1 else f"{sign}${amount:,.2f}"


def comparison_markdown(data: dict[str, Any]) -> str:
    """``compare.md``: per-case tokens and dollars side by side, the box goal, totals, the design
    steps, what caching changes, other models, then the scaling and the personas. Text from a
    model, a provider or a case file is written with :func:`helpers.escaping.for_markdown`; the
    report's own dollar amounts as ``\\$`` (:func:`helpers.escaping.dollars_as_text`)."""
    strategies = [v for v in data["totals"] if v != "floor"]
    lines, failures = _cases_markdown(data, strategies)
    lines += _box_goal_markdown(data)
    lines += _totals_markdown(data, strategies)
    lines += _design_steps_markdown(data)
    lines += caching_markdown(data)
    lines += _other_models_markdown(data, strategies)
    if failures:
        lines += ["", "## Why runs failed", "", *failures]
    if data.get("scaling"):
        from helpers.evaluation.scaling import scaling_markdown

        lines += scaling_markdown(data["scaling"])
    lines += persona_markdown(data.get("personas") or {})
    return dollars_as_text("\n".join(lines) + "\n")


def _cases_markdown(data: dict[str, Any], strategies: list[str]) -> tuple[list[str], list[str]]:
    """The per-case table, and a line for each run that failed (for "Why runs failed")."""
    lines = [
        f"# Truncation vs boxing, side by side ({for_markdown(data['model'])})",
        "",
        "Prompt tokens summed over every model call of the turn (o200k_base, from `usage`). "
        f"Preview limit {data['limit_chars']} chars. ✅ the case passed its checks, ❌ it did "
        "not (reason below); *overflow (N)*: a request of N tokens was refused for the context "
        "window. The floor is a lower bound: the prompt, the tools the task calls, one bare "
        "reference per long result, the looks inside it needs, the answer.",
        "",
        "| case | " + " | ".join(strategies) + " | floor | box goal |",
        "|---|" + "---:|" * (len(strategies) + 1) + "---|",
    ]
    failures = []
    for case_id, entry in data["cases"].items():
        cells = []
        for strategy in strategies:
            m = entry.get(strategy)
            if m is None:
                cells.append("–")
                continue
            cells.append(_cell(m))
            if not m["passed"]:
                reasons = for_markdown("; ".join(m["reasons"]))
                failures.append(f"- {for_markdown(case_id)} / {strategy}: {reasons}")
        floor = entry.get("floor", {}).get("prompt_tokens")
        goal = entry.get("box_goal")
        if goal is None:
            goal_cell = "–"
        elif goal.get("ratio") is None:
            goal_cell = "✅ only box passes" if goal["met"] else "❌ box failed"
        else:
            goal_cell = f"{'✅' if goal['met'] else '❌'} {goal['ratio']:.2f}× {goal['against']}"
        lines.append(
            f"| {for_markdown(case_id)} | "
            + " | ".join(cells)
            + f" | {f'{floor:,}' if floor else '–'} | {goal_cell} |"
        )
    return lines, failures


def _box_goal_markdown(data: dict[str, Any]) -> list[str]:
    """Whether box met its goal on every case, else where and why not."""
    lines: list[str] = []
    missed = [
        (c, e["box_goal"])
        for c, e in data["cases"].items()
        if e.get("box_goal", {}).get("met") is False
    ]
    lines += [
        "",
        f"**Box goal** (≤ {data.get('box_goal_ratio', BOX_GOAL_RATIO)}× the cheaper of inline and truncate): ",
    ]
    if missed:
        lines[-1] += f"missed on {len(missed)} case(s):"
        lines += [""] + [
            f"- {for_markdown(c)}: {for_markdown(g.get('why', ''))}" for c, g in missed
        ]
    else:
        lines[-1] += "met on every case."
    return lines


def _totals_markdown(data: dict[str, Any], strategies: list[str]) -> list[str]:
    """Totals per strategy over the runs that passed, the floor, and box's gap to it."""
    pricing = data.get("pricing") or {}
    price_line = (
        f"Dollars at {pricing.get('model')} list prices (input ${pricing.get('input_usd_per_mtok')}, "
        f"cached input ${pricing.get('cached_input_usd_per_mtok')}, output "
        f"${pricing.get('output_usd_per_mtok')} per million tokens; checked {pricing.get('checked')}, "
        "data/pricing.yaml); *cached*: each call's prefix shared with the call before it at the "
        "cached price."
    )
    lines = [
        "",
        "## Totals (runs that passed)",
        "",
        price_line,
        "",
        "| strategy | passed | context overflows | prompt tokens | × inline | × floor | $ uncached | $ cached | cached share | seconds |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    share = (data.get("caching") or {}).get("cached_share", {})
    for strategy in strategies:
        t = data["totals"][strategy]
        cached_share = share.get(strategy)
        lines.append(
            f"| {strategy} | {t['passed']}/{t['cases']} | {t['context_overflows']} | "
            f"{t['prompt_tokens']:,} | {t['ratio_to_inline'] if t['ratio_to_inline'] is not None else '–'} | "
            f"{t['ratio_to_floor'] if t['ratio_to_floor'] is not None else '–'} | "
            f"{_usd(t.get('usd_uncached'))} | {_usd(t.get('usd_cached'))} | "
            f"{f'{cached_share:.0%}' if cached_share is not None else '–'} | {t['seconds']} |"
        )
    floor = data["totals"].get("floor", {})
    lines.append(f"| floor | – | – | {floor.get('prompt_tokens', 0):,} | | 1.0 | | | | |")
    box = data["totals"].get("box")
    if box and floor.get("prompt_tokens") and box.get("ratio_to_floor"):
        gap = box["prompt_tokens"] - floor["prompt_tokens"]
        tools = floor.get("prompt_tokens_all_tools", 0) - floor["prompt_tokens"]
        lines += [
            "",
            f"Box is {box['ratio_to_floor']}× the floor. Of the {gap:,} tokens between them, "
            f"{tools:,} are the schemas of tools offered in every call that the task never calls "
            "(a tool whitelist per mode, notebook 06, removes them); the rest is the system "
            "message, the preview under each reference and the note with it.",
        ]
    return lines


def _design_steps_markdown(data: dict[str, Any]) -> list[str]:
    """Each box design step between tool-context-relay's and the workbook's, and what it saved."""
    if not data.get("design_steps"):
        return []
    lines = [
        "",
        "## From tool-context-relay's box to the workbook's, one step at a time",
        "",
        "| design | what the step changes | passed | prompt tokens | saved | $ uncached saved | $ cached saved |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in data["design_steps"]:
        saved = row.get("tokens_saved")
        lines.append(
            f"| {row['strategy']} | {row['step']} | {row['passed']}/{row['cases']} | "
            f"{row['prompt_tokens']:,} | {f'{saved:,}' if saved is not None else '–'} | "
            f"{_usd(row.get('usd_uncached_saved'))} | {_usd(row.get('usd_cached_saved'))} |"
        )

    return lines


def _other_models_markdown(data: dict[str, Any], strategies: list[str]) -> list[str]:
    """The same runs priced at other models' list prices."""
    other = data.get("other_models") or {}
    if not other:
        return []
    lines = [
        "",
        "## The same runs on other models (cached dollars, runs that passed)",
        "",
        "| model | " + " | ".join(strategies) + " |",
        "|---|" + "---:|" * len(strategies),
    ]
    for name, row in other.items():
        lines.append(f"| {name} | " + " | ".join(_usd(row.get(v)) for v in strategies) + " |")

    return lines


def caching_markdown(data: dict[str, Any]) -> list[str]:
    """What caching changes, in words, from the figures."""
    caching = data.get("caching") or {}
    lines = ["", "## What prompt caching changes", ""]
    steps = {row["design"]: row for row in data.get("design_steps") or []}
    lazy = steps.get("lazy-tools")
    if lazy and "usd_cached_saved" in lazy:
        cached = lazy["usd_cached_saved"]
        effect = f"saves {_usd(cached)}" if cached >= 0 else f"costs {_usd(-cached)} more"
        lines.append(
            f"- Offering the resolve tool only once a reference exists saves "
            f"{lazy.get('tokens_saved', 0):,} prompt tokens ({_usd(lazy['usd_uncached_saved'])} "
            f"uncached) but {effect} once cached: the tool list changes mid-turn, and a provider "
            "reuses nothing of a request whose tools changed."
        )
    other = data.get("other_models") or {}
    stable_wins = [
        m for m, row in other.items() if "box-tcr" in row and row["box-tcr"] < row.get("box", 0)
    ]
    if stable_wins:
        lines.append(
            f"- Cached, box-tcr costs less than box on {', '.join(stable_wins)}: its prompt is "
            "larger, but its tool list never changes and every request is over the caching "
            "minimum, so most of it is billed at the cached price. Where cached input is cheap, "
            "a stable prefix beats a small one; count tokens uncached, and dollars with caching."
        )
    share = caching.get("cached_share") or {}
    if share:
        ranked = sorted(((v, s) for v, s in share.items() if s is not None), key=lambda x: -x[1])
        lines.append(
            "- Share of prompt tokens served from the cache: "
            + ", ".join(f"{v} {s:.0%}" for v, s in ranked)
            + ". A stable system message and tool list, and a conversation that only grows, "
            "are what a cache reuses."
        )
    changes = caching.get("cheapest_changes") or []
    if changes:
        lines.append(
            "- Cases whose cheapest passing strategy changes once caching is counted (a request "
            "under the provider's minimum, 1,024 tokens for OpenAI, is not cached at all, so a "
            "smaller conversation can cost more than a larger one that is):"
        )
        for change in changes:
            a, b = change["cheapest_uncached"], change["cheapest_cached"]
            share = change["cached_share"]
            lines.append(
                f"  - {for_markdown(change['case'])}: {a} uncached; cached, {b} "
                f"({_usd(change['usd_cached'][b])}, {share[b]:.0%} of its prompt cached) beats "
                f"{a} ({_usd(change['usd_cached'][a])}, {share[a]:.0%} cached)"
            )
    else:
        lines.append("- No case's cheapest passing strategy changes once caching is counted.")
    return lines


def persona_markdown(personas: dict[str, Any]) -> list[str]:
    """The "When the model gets it wrong" section of ``compare.md`` (no lines without personas)."""
    if not personas:
        return []
    lines = [
        "",
        "## When the model gets it wrong",
        "",
        "Each offline persona makes one mistake real models make, on every case, under the "
        "strategy where it can happen. *Guard* is the client check meant to catch it; *fired* "
        "counts what fired; tokens are prompt tokens against the ideal model on the same runs.",
        "",
        "| persona | strategy | mistake | guard | fired | passed | prompt tokens | × ideal | "
        "model calls (ideal) |",
        "|---|---|---|---|---|---:|---:|---:|---:|",
    ]
    for name, row in personas.items():
        fired = ", ".join(f"{g} ×{n}" for g, n in row["guard_hits"].items()) or "–"
        guard = f"`{row['guard']}`" if row["guard"] else "none"
        lines.append(
            f"| {for_markdown(name)} | {row['strategy']} | {for_markdown(row['mistake'])} | "
            f"{guard} | {fired} | "
            f"{row['passed']}/{row['cases']} | {row['prompt_tokens']:,} | {row['ratio_to_ideal']} "
            f"| {row['model_calls']} ({row['ideal_model_calls']}) |"
        )
    failing = [(n, f) for n, row in personas.items() for f in row["failures"]]
    if failing:
        lines += ["", "Why persona runs failed:", ""]
        lines += [f"- {for_markdown(name)}, {for_markdown(failure)}" for name, failure in failing]
    return lines


def plot(data: dict[str, Any], path: Path, *, focus_case: str | None = None) -> Path:
    """``compare.png``: tokens per strategy per case (grouped bars, log scale; a failed run is
    hatched and marked ✗), and context growth over model calls for ``focus_case`` (default: the
    case with the most inline tokens), where the floor is a wide grey band under the strategies'
    lines, so a strategy on the floor stays visible."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    strategies = [v for v in data["totals"] if v != "floor"] + ["floor"]
    case_ids = list(data["cases"])
    focus = focus_case or max(
        case_ids, key=lambda c: data["cases"][c].get("inline", {}).get("prompt_tokens", 0)
    )
    colours = {v: f"C{i}" for i, v in enumerate(strategies)}
    colours["floor"] = "0.55"
    fig, (bars, growth) = plt.subplots(
        1,
        2,
        figsize=(max(15, 1.1 * len(case_ids) + 8), 6.2),
        gridspec_kw={"width_ratios": [2.6, 1]},
    )
    _draw_bars(bars, data, strategies, case_ids, colours)
    _draw_growth(growth, data, strategies, focus, colours)
    fig.suptitle(f"Truncation vs boxing ({data['model']})")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _draw_bars(
    bars: Any,
    data: dict[str, Any],
    strategies: list[str],
    case_ids: list[str],
    colours: dict[str, str],
) -> None:
    """Grouped bars of prompt tokens per case and strategy, a failed run hatched and marked ✗."""
    from matplotlib.patches import Patch

    width = 0.8 / len(strategies)
    for i, strategy in enumerate(strategies):
        entries = [data["cases"][c].get(strategy, {}) for c in case_ids]
        # an overflow is drawn at the size of the request that was refused
        values = [e.get("refused_prompt_tokens") or e.get("prompt_tokens", 0) for e in entries]
        offsets = [x + (i - (len(strategies) - 1) / 2) * width for x in range(len(case_ids))]
        drawn = bars.bar(
            offsets,
            values,
            width,
            label=strategy,
            color=colours[strategy],
            hatch="//" if strategy == "floor" else None,
        )
        for bar, entry in zip(drawn, entries, strict=True):
            if entry.get("passed") is False:  # the run failed its checks: cheap means nothing
                bar.set_hatch("xx")
                bar.set_edgecolor("red")
                bars.annotate(
                    "✗",
                    (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    ha="center",
                    va="bottom",
                    color="red",
                    fontsize=9,
                    fontweight="bold",
                )
    bars.set_yscale("log")
    bars.set_xticks(range(len(case_ids)), case_ids, rotation=30)
    bars.set_ylabel("prompt tokens per turn (o200k_base, log scale)")
    bars.set_title(
        "Total prompt tokens per case and strategy (✗ = the run failed its checks; an overflow "
        "is drawn at the size of the refused request)"
    )
    handles, labels = bars.get_legend_handles_labels()
    handles.append(Patch(facecolor="white", edgecolor="red", hatch="xx"))
    labels.append("failed its checks")
    bars.legend(handles, labels, ncols=4, fontsize="small")
    bars.grid(axis="y", alpha=0.3)


def _draw_growth(
    growth: Any, data: dict[str, Any], strategies: list[str], focus: str, colours: dict[str, str]
) -> None:
    """The context size of each model call of ``focus``, the floor a wide grey band."""
    from matplotlib.ticker import MaxNLocator

    for strategy in ["floor", *[v for v in strategies if v != "floor"]]:
        per_call = data["cases"][focus].get(strategy, {}).get("prompt_tokens_per_call")
        if not per_call:
            continue
        calls = range(1, len(per_call) + 1)
        if strategy == "floor":
            growth.plot(
                calls,
                per_call,
                color="0.75",
                linewidth=9,
                alpha=0.6,
                label="floor",
                solid_capstyle="round",
                zorder=1,
            )
        else:
            failed = data["cases"][focus].get(strategy, {}).get("passed") is False
            growth.plot(
                calls,
                per_call,
                marker="o",
                color=colours[strategy],
                linestyle=":" if failed else "-",
                label=f"{strategy} ✗" if failed else strategy,
                zorder=2,
            )
    growth.set_yscale("log")
    growth.xaxis.set_major_locator(MaxNLocator(integer=True))
    growth.set_xlabel("model call")
    growth.set_ylabel("prompt tokens of that call (context size, log scale)")
    growth.set_title(f"Context growth over the turn: {focus}")
    growth.legend(fontsize="small")
    growth.grid(alpha=0.3)


def headline(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The numbers that matter, per strategy: tokens against inline, and cases passed."""
    rows = []
    for strategy, total in data["totals"].items():
        if strategy == "floor":
            continue
        rows.append(
            {
                "strategy": strategy,
                "ratio_to_inline": total["ratio_to_inline"],
                "ratio_to_floor": total.get("ratio_to_floor"),
                "usd_cached": total.get("usd_cached"),
                "context_overflows": total.get("context_overflows", 0),
                "passed": total["passed"],
                "cases": total["cases"],
                "prompt_tokens": total["prompt_tokens"],
            }
        )
    return rows


def _ratio(value: float | None) -> str:
    return "–" if value is None else f"{value}×"


def _usd_text(value: object) -> str:
    """:func:`_usd` of a number; anything else (a ``compare.json`` edited by hand) as its text."""
    if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
        return _usd(value)  # type: ignore[arg-type]
    return str(value)


def headline_html(data: dict[str, Any]) -> str:
    """The headline numbers, large, for a notebook: a failing strategy in red however cheap.

    Every field read from ``data`` (a comparison's JSON, possibly loaded from a ``compare.json``
    on disk) reaches the HTML through :func:`helpers.escaping.for_html`, and the whole through
    :func:`helpers.escaping.for_notebook_html` (out of MathJax's reach)."""
    cells = []
    for row in headline(data):
        ok = row["passed"] == row["cases"]
        colour = "#2e7d32" if ok else "#c62828"
        cells.append(
            "<div style='padding:8px 14px;border:1px solid #ddd;border-radius:8px;min-width:120px'>"
            f"<div style='font-size:14px;color:#555'>{for_html(row['strategy'])}</div>"
            f"<div style='font-size:30px;font-weight:bold'>{for_html(_ratio(row['ratio_to_floor']))}</div>"
            "<div style='font-size:12px;color:#555'>prompt tokens of the floor</div>"
            f"<div style='font-size:12px;color:#555'>{for_html(_usd_text(row['usd_cached']))}"
            " cached</div>"
            f"<div style='font-size:18px;font-weight:bold;color:{colour}'>"
            f"{for_html(str(row['passed']))}/{for_html(str(row['cases']))} passed</div></div>"
        )
    return for_notebook_html(
        "<div style='display:flex;gap:10px;flex-wrap:wrap'>" + "".join(cells) + "</div>"
    )


def write_report(
    comparison: Comparison, out_dir: Path, *, focus_case: str | None = None
) -> dict[str, Path]:
    """Write ``compare.json``, ``compare.md`` and ``compare.png`` into ``out_dir``."""
    return write_report_data(comparison.to_json(), out_dir, focus_case=focus_case)


def write_report_data(
    data: dict[str, Any], out_dir: Path, *, focus_case: str | None = None
) -> dict[str, Path]:
    """Write the report of ``data`` (:meth:`Comparison.to_json`) into ``out_dir``: its JSON,
    Markdown and plots (``scaling.png`` too when it holds a scaling run); returns the paths by
    kind."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {
        "json": out_dir / "compare.json",
        "md": out_dir / "compare.md",
        "png": out_dir / "compare.png",
    }
    if data.get("scaling"):
        paths["scaling_png"] = out_dir / "scaling.png"
    paths["json"].write_text(for_json(data, indent=2) + "\n", encoding="utf-8")
    paths["md"].write_text(comparison_markdown(data), encoding="utf-8")
    plot(data, paths["png"], focus_case=focus_case)
    if "scaling_png" in paths:
        from helpers.evaluation.scaling import plot_scaling

        plot_scaling(data["scaling"], paths["scaling_png"])
    return paths
