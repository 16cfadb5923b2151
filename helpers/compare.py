"""The side-by-side comparison: the same cases under every strategy, measured.

Token figures come from the ``usage`` of each response (the offline model counts with
o200k_base), so a real model's run is measured the same way. For each case and variant:

- ``prompt_tokens_per_call``, their total, and ``peak_context_tokens`` (the largest single
  prompt: what must fit in the context window);
- ``completion_tokens``, ``model_calls``, ``tool_calls``;
- ``tool_output_chars_in_context``: characters of tool results that entered the messages;
- ``sinks_exact``: every sink received byte-exact data (``null`` when the case has no sink);
- ``passed`` and the ``reasons`` when not.

**The floor** of a case is the cheapest honest conversation for the task: the ``box`` run's
conversation where every long result costs only its bare reference, and every resolve call the
case does not list as needed is removed (with its result). It is counted with o200k_base over the
same tool schemas. An ideal model under ``box`` sits on the floor; a model that reads what it
only had to route, or a costlier reference form (``box-json``), sits above it.

**Personas** (offline only, :mod:`helpers.personas`): each mistake persona runs every case
under its strategy; its row says which guard should catch the mistake, how often each guard
fired, how many cases still passed, and what the mistake cost in prompt tokens against the ideal
model on the same cases and strategy.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers.agent import TurnRecord
from helpers.boxing import ReferenceRefused, make_reference, reference_id
from helpers.evaluation import CaseRun
from helpers.guards import GUARDS
from helpers.personas import PERSONAS
from helpers.resolve_tools import RESOLVE_TOOL_FUNCTIONS
from helpers.tokens import count_chat_tokens

RESOLVE_TOOL_NAMES = {fn.__name__ for fn in RESOLVE_TOOL_FUNCTIONS}


def run_metrics(run: CaseRun) -> dict[str, Any]:
    """The figures of one case run (see the module docstring)."""
    record = run.record
    per_call = [c.prompt_tokens for c in record.model_calls]
    return {
        "prompt_tokens_per_call": per_call,
        "prompt_tokens": sum(per_call),
        "peak_context_tokens": max(per_call, default=0),
        "completion_tokens": sum(c.completion_tokens for c in record.model_calls),
        "model_calls": len(record.model_calls),
        "tool_calls": len(record.tool_calls),
        "tool_output_chars_in_context": sum(len(t.result) for t in record.tool_calls),
        "sinks_exact": run.validation.sinks_exact,
        "passed": run.passed,
        "reasons": run.validation.reasons,
    }


def _bare(content: str) -> str:
    try:
        ref = reference_id(content)
    except ReferenceRefused:
        return content
    return make_reference(ref) if ref else content


def floor_tokens(record: TurnRecord, needed_tools: Iterable[str]) -> list[int]:
    """Prompt tokens per model call of the floor conversation derived from a ``box`` run.

    Drops every resolve call not in ``needed_tools`` (with its ``tool`` message and the model
    call that made it) and shows every reference as a bare ``internal://<id>``.
    """
    needed = set(needed_tools)
    dropped: set[str] = set()
    kept: list[dict[str, Any]] = []
    cut_at: list[int] = []  # index in ``kept`` where each kept model call's prompt ends
    messages = record.messages
    calls = iter(record.model_calls)
    position = 0
    for call in calls:
        prompt_end = call.messages_sent
        while position < prompt_end:
            message = messages[position]
            position += 1
            if message.get("role") == "tool":
                if message.get("tool_call_id") in dropped:
                    continue
                kept.append({**message, "content": _bare(str(message.get("content") or ""))})
            elif message.get("role") == "assistant" and message.get("tool_calls"):
                names = [c["function"]["name"] for c in message["tool_calls"]]
                if all(n in RESOLVE_TOOL_NAMES and n not in needed for n in names):
                    dropped.update(c["id"] for c in message["tool_calls"])
                    continue
                kept.append(message)
            else:
                kept.append(message)
        answer = messages[prompt_end] if prompt_end < len(messages) else None
        is_dropped_call = bool(
            answer
            and answer.get("tool_calls")
            and all(
                c["function"]["name"] in RESOLVE_TOOL_NAMES and c["function"]["name"] not in needed
                for c in answer["tool_calls"]
            )
        )
        if not is_dropped_call:
            cut_at.append(len(kept))
    return [count_chat_tokens(kept[:end], record.tool_schemas) for end in cut_at]


@dataclass
class Comparison:
    """All runs of a comparison and the figures derived from them."""

    runs: list[CaseRun]
    model: str
    threshold: int
    limit: int

    def variants(self) -> list[str]:
        return list(dict.fromkeys(r.variant for r in self.runs if r.persona is None))

    def case_ids(self) -> list[str]:
        return list(dict.fromkeys(r.case.id for r in self.runs))

    def run(self, case_id: str, variant: str, persona: str | None = None) -> CaseRun | None:
        return next(
            (
                r
                for r in self.runs
                if r.case.id == case_id and r.variant == variant and r.persona == persona
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
            ideal = [self.run(r.case.id, r.variant) for r in runs]
            ideal_tokens = sum(i.record.usage()["prompt_tokens"] for i in ideal if i is not None)
            tokens = sum(r.record.usage()["prompt_tokens"] for r in runs)
            expected = persona.guard if persona else None
            rows[name] = {
                "strategy": ", ".join(dict.fromkeys(r.variant for r in runs)),
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

    def floor(self, case_id: str) -> list[int] | None:
        """The floor's prompt tokens per call, from the case's ``box`` run (if there is one)."""
        box = self.run(case_id, "box")
        if box is None or not box.record.ok:
            return None
        needed = {e["tool_name"] for e in box.case.tool_calls}
        return floor_tokens(box.record, needed)

    def to_json(self) -> dict[str, Any]:
        """The content of ``compare.json``."""
        cases: dict[str, Any] = {}
        for case_id in self.case_ids():
            entry: dict[str, Any] = {}
            for variant in self.variants():
                run = self.run(case_id, variant)
                if run is not None:
                    entry[variant] = run_metrics(run)
            floor = self.floor(case_id)
            if floor is not None:
                entry["floor"] = {"prompt_tokens_per_call": floor, "prompt_tokens": sum(floor)}
            cases[case_id] = entry
        totals: dict[str, Any] = {}
        for variant in [*self.variants(), "floor"]:
            totals[variant] = {
                "prompt_tokens": sum(
                    c[variant]["prompt_tokens"] for c in cases.values() if variant in c
                )
            }
        base, floor_total = (
            totals["inline"]["prompt_tokens"] if "inline" in totals else 0,
            totals["floor"]["prompt_tokens"],
        )
        for variant, total in totals.items():
            if variant != "floor":
                total["completion_tokens"] = sum(
                    c[variant]["completion_tokens"] for c in cases.values() if variant in c
                )
                total["passed"] = sum(1 for c in cases.values() if c.get(variant, {}).get("passed"))
                total["cases"] = sum(1 for c in cases.values() if variant in c)
            total["ratio_to_inline"] = round(total["prompt_tokens"] / base, 3) if base else None
            total["ratio_to_floor"] = (
                round(total["prompt_tokens"] / floor_total, 3) if floor_total else None
            )
        return {
            "model": self.model,
            "threshold_chars": self.threshold,
            "limit_chars": self.limit,
            "token_unit": "o200k_base tokens from each response's usage",
            "cases": cases,
            "totals": totals,
            "personas": self.persona_rows(),
        }


def to_markdown(data: dict[str, Any]) -> str:
    """``compare.md``: per-case prompt tokens side by side, then totals with ratios."""
    variants = [v for v in data["totals"] if v != "floor"]
    lines = [
        f"# Truncation vs boxing, side by side ({data['model']})",
        "",
        f"Prompt tokens summed over every model call of the turn (o200k_base, from `usage`). "
        f"Box threshold {data['threshold_chars']} chars, preview limit {data['limit_chars']} chars. "
        "✅ the case passed its checks, ❌ it did not (reason below).",
        "",
        "| case | " + " | ".join(variants) + " | floor |",
        "|---|" + "---:|" * (len(variants) + 1),
    ]
    failures = []
    for case_id, entry in data["cases"].items():
        cells = []
        for variant in variants:
            m = entry.get(variant)
            if m is None:
                cells.append("–")
                continue
            cells.append(f"{m['prompt_tokens']:,} {'✅' if m['passed'] else '❌'}")
            if not m["passed"]:
                failures.append(f"- {case_id} / {variant}: {'; '.join(m['reasons'])}")
        floor = entry.get("floor", {}).get("prompt_tokens")
        lines.append(
            f"| {case_id} | " + " | ".join(cells) + f" | {floor:,} |"
            if floor
            else f"| {case_id} | " + " | ".join(cells) + " | – |"
        )
    lines += [
        "",
        "## Totals",
        "",
        "| strategy | prompt tokens | × inline | × floor | completion tokens | passed |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for variant, total in data["totals"].items():
        passed = f"{total['passed']}/{total['cases']}" if "passed" in total else "–"
        completion = f"{total['completion_tokens']:,}" if "completion_tokens" in total else "–"
        lines.append(
            f"| {variant} | {total['prompt_tokens']:,} | {total['ratio_to_inline']} | {total['ratio_to_floor']} | {completion} | {passed} |"
        )
    if failures:
        lines += ["", "## Why runs failed", "", *failures]
    lines += [
        "",
        "The floor: the box run's conversation with every long result costing only its bare "
        "reference and no resolve call the case does not need.",
    ]
    lines += persona_markdown(data.get("personas") or {})
    return "\n".join(lines) + "\n"


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
            f"| {name} | {row['strategy']} | {row['mistake']} | {guard} | {fired} | "
            f"{row['passed']}/{row['cases']} | {row['prompt_tokens']:,} | {row['ratio_to_ideal']} "
            f"| {row['model_calls']} ({row['ideal_model_calls']}) |"
        )
    failing = [(n, f) for n, row in personas.items() for f in row["failures"]]
    if failing:
        lines += ["", "Why persona runs failed:", ""]
        lines += [f"- {name}, {failure}" for name, failure in failing]
    return lines


def plot(data: dict[str, Any], path: Path, *, focus_case: str | None = None) -> Path:
    """``compare.png``: tokens per strategy per case (grouped bars, log scale; a failed run is
    hatched and marked ✗), and context growth over model calls for ``focus_case`` (default: the
    case with the most inline tokens), where the floor is a wide grey band under the strategies'
    lines, so a strategy on the floor stays visible."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    variants = [v for v in data["totals"] if v != "floor"] + ["floor"]
    case_ids = list(data["cases"])
    focus = focus_case or max(
        case_ids, key=lambda c: data["cases"][c].get("inline", {}).get("prompt_tokens", 0)
    )
    colours = {v: f"C{i}" for i, v in enumerate(variants)}
    colours["floor"] = "0.55"
    fig, (bars, growth) = plt.subplots(
        1, 2, figsize=(15, 5.8), gridspec_kw={"width_ratios": [2.2, 1]}
    )
    width = 0.8 / len(variants)
    for i, variant in enumerate(variants):
        entries = [data["cases"][c].get(variant, {}) for c in case_ids]
        values = [e.get("prompt_tokens", 0) for e in entries]
        offsets = [x + (i - (len(variants) - 1) / 2) * width for x in range(len(case_ids))]
        drawn = bars.bar(
            offsets,
            values,
            width,
            label=variant,
            color=colours[variant],
            hatch="//" if variant == "floor" else None,
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
    bars.set_title("Total prompt tokens per case and strategy (✗ = the run failed its checks)")
    handles, labels = bars.get_legend_handles_labels()
    handles.append(Patch(facecolor="white", edgecolor="red", hatch="xx"))
    labels.append("failed its checks")
    bars.legend(handles, labels, ncols=4, fontsize="small")
    bars.grid(axis="y", alpha=0.3)
    for variant in ["floor", *[v for v in variants if v != "floor"]]:
        per_call = data["cases"][focus].get(variant, {}).get("prompt_tokens_per_call")
        if not per_call:
            continue
        calls = range(1, len(per_call) + 1)
        if variant == "floor":
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
            failed = data["cases"][focus].get(variant, {}).get("passed") is False
            growth.plot(
                calls,
                per_call,
                marker="o",
                color=colours[variant],
                linestyle=":" if failed else "-",
                label=f"{variant} ✗" if failed else variant,
                zorder=2,
            )
    growth.set_yscale("log")
    growth.xaxis.set_major_locator(MaxNLocator(integer=True))
    growth.set_xlabel("model call")
    growth.set_ylabel("prompt tokens of that call (context size, log scale)")
    growth.set_title(f"Context growth over the turn: {focus}")
    growth.legend(fontsize="small")
    growth.grid(alpha=0.3)
    fig.suptitle(f"Truncation vs boxing ({data['model']})")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def headline(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The numbers that matter, per strategy: tokens against inline, and cases passed."""
    rows = []
    for variant, total in data["totals"].items():
        if variant == "floor":
            continue
        rows.append(
            {
                "strategy": variant,
                "ratio_to_inline": total["ratio_to_inline"],
                "passed": total["passed"],
                "cases": total["cases"],
                "prompt_tokens": total["prompt_tokens"],
            }
        )
    return rows


def headline_html(data: dict[str, Any]) -> str:
    """The headline numbers, large, for a notebook: a failing strategy in red however cheap."""
    cells = []
    for row in headline(data):
        ok = row["passed"] == row["cases"]
        colour = "#2e7d32" if ok else "#c62828"
        cells.append(
            "<div style='padding:8px 14px;border:1px solid #ddd;border-radius:8px;min-width:120px'>"
            f"<div style='font-size:14px;color:#555'>{row['strategy']}</div>"
            f"<div style='font-size:30px;font-weight:bold'>{row['ratio_to_inline']}×</div>"
            "<div style='font-size:12px;color:#555'>prompt tokens of inline</div>"
            f"<div style='font-size:18px;font-weight:bold;color:{colour}'>"
            f"{row['passed']}/{row['cases']} passed</div></div>"
        )
    return "<div style='display:flex;gap:10px;flex-wrap:wrap'>" + "".join(cells) + "</div>"


def write_report(
    comparison: Comparison, out_dir: Path, *, focus_case: str | None = None
) -> dict[str, Path]:
    """Write ``compare.json``, ``compare.md`` and ``compare.png`` into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    data = comparison.to_json()
    paths = {
        "json": out_dir / "compare.json",
        "md": out_dir / "compare.md",
        "png": out_dir / "compare.png",
    }
    paths["json"].write_text(
        json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    paths["md"].write_text(to_markdown(data), encoding="utf-8")
    plot(data, paths["png"], focus_case=focus_case)
    return paths
