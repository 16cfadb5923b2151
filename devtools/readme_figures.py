"""The figures of the README and of docs/, generated, never typed: ``make figures`` writes them,
a test checks them.

Each figure block, in README.md or a page of docs/ (:func:`documents`), stands between two
markers::

    <!-- figures:ask -->
    | strategy | prompt tokens | … |
    <!-- /figures:ask -->

:func:`generate` runs the offline model on a fresh store with reproducible ids
(:func:`helpers.base.ids.reproducible_ids`), so the same code gives the same figures, and returns each
block's Markdown. ``python -m devtools.readme_figures`` rewrites the blocks; ``--check`` exits 1
(and names the block) when a page disagrees with what the code measures now.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

from devtools.reading_order import reading_order_markdown
from devtools.registry_docs import registry_blocks
from helpers.base.ids import reproducible_ids
from helpers.base.paths import PROJECT_ROOT
from helpers.cases.case_files import ALL_CASES, load_cases
from helpers.context.anchors import ANCHOR_PARAMETERS
from helpers.context.policies import TCR_INSTRUCTIONS_FILE, BoxPolicy, tcr_instructions
from helpers.context.strategies import (
    LESSON_ROLES,
    build_policy,
    compared_strategies,
    design_step_strategies,
    field_strategies,
    rivals_text,
    strategies_in_role,
)
from helpers.course.sources import sources_markdown
from helpers.evaluation.compare import Comparison
from helpers.evaluation.metrics import ComparisonMetrics
from helpers.evaluation.pricing import caching_rules_markdown, load_prices
from helpers.evaluation.report import caching_markdown
from helpers.evaluation.runs import (
    RunOptions,
    client_for_cases,
    run_cases,
    run_personas,
)
from helpers.evaluation.scaling import breaks_markdown, run_scaling
from helpers.loop.agent import Agent, run_turn
from helpers.models.llm import resolve_model
from helpers.models.offline import offline_client
from helpers.models.personas import MISTAKE_PERSONAS, PERSONAS
from helpers.store.tool_outputs import ToolOutputStore
from helpers.text.escaping import dollars_as_text
from helpers.text.tokens import count_tokens
from helpers.tooling.tools import default_registry

README = PROJECT_ROOT / "README.md"
DOCS_DIR = PROJECT_ROOT / "docs"
GUIDE = DOCS_DIR / "instructor-guide.md"
SEED = 2026
CASE1 = (
    "Generate a transcript of the YouTube video with video_id='123' and then pass it to Deep "
    "Check for analysis."
)


def _block_re(prefix: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- {prefix}:(\w+) -->\n)(.*?)(<!-- /{prefix}:\2 -->)", re.DOTALL)


def _ask_table(store: ToolOutputStore) -> str:
    client = offline_client()
    lines = [
        "| strategy | prompt tokens | completion tokens | model calls | tool calls |",
        "|---|---:|---:|---:|---:|",
    ]
    for strategy in strategies_in_role(*LESSON_ROLES):
        agent = Agent(
            client, "offline-reference", build_policy(strategy), default_registry(), store
        )
        record = run_turn(CASE1, agent)
        usage = record.usage()
        fetches = sum(1 for c in record.tool_calls if c.name == "fetch_tool_output")
        calls = f"{len(record.tool_calls)}" + (" (a `fetch_tool_output`)" if fetches else "")
        lines.append(
            f"| {strategy} | {usage['prompt_tokens']:,} | {usage['completion_tokens']:,} | "
            f"{usage['calls']} | {calls} |"
        )
    return "\n".join(lines)


def _comparison(store: ToolOutputStore) -> ComparisonMetrics:
    """Every shipped case (the large ones too) under every strategy and design step, the
    personas on the same cases (as ``workbook compare`` runs them), and the scaling run up to
    10 MB."""
    cases = load_cases(ALL_CASES)
    common = RunOptions(
        client=client_for_cases(resolve_model("offline", env={}), cases), store=store
    )
    runs = run_cases(
        cases,
        [*compared_strategies(), *field_strategies(), *design_step_strategies()],
        model="offline-reference",
        **common,
    )
    runs += run_personas(cases, [PERSONAS[n] for n in MISTAKE_PERSONAS], **common)
    scaling = run_scaling(strategies=[*compared_strategies(), *field_strategies()], store=store)
    return Comparison(runs, "offline-reference", None, 600, scaling=scaling).metrics()


def _usd(value: float | None, places: int = 2) -> str:
    """Dollars as the README shows them: ``$1.21``, ``-$0.0407`` (``\\$`` comes later, from
    :func:`update`)."""
    if value is None:
        return "–"
    return f"{'-' if value < 0 else ''}${abs(value):,.{places}f}"


def _compare_table(metrics: ComparisonMetrics) -> str:
    pricing = metrics.pricing
    lines = [
        f"Dollars at {pricing.model} list prices (checked {pricing.checked}), with prompt "
        "caching from a cold cache (each case's first request finds nothing cached; the warm "
        "variant is below); totals over the runs that passed.",
        "",
        "| strategy | passed | context overflows | prompt tokens | × inline | × floor | $ uncached | $ cached |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for strategy, t in metrics.totals.items():
        ratio = f"{t.ratio_to_inline:.2f}" if t.ratio_to_inline is not None else "–"
        floor = f"{t.ratio_to_floor:.2f}" if t.ratio_to_floor is not None else "–"
        lines.append(
            f"| {strategy} | {t.passed}/{t.cases} | {t.context_overflows} | "
            f"{t.prompt_tokens:,} | {ratio} | {floor} | {_usd(t.usd_uncached)} | "
            f"{_usd(t.usd_cached)} |"
        )
    goals = list(metrics.box_goals().values())
    met = sum(1 for g in goals if g.met)
    ratios = [g.ratio for g in goals if g.ratio is not None]
    lines += [
        "",
        f"Box goal (at most {metrics.box_goal_ratio}× the cheaper of {rivals_text()}): met on "
        f"{met} of {len(goals)} cases; the highest ratio is {max(ratios):.2f}, and on "
        f"{sum(1 for g in goals if g.ratio is None)} cases box is the only one of the three "
        "that passes.",
    ]
    return "\n".join(lines)


def _design_table(metrics: ComparisonMetrics) -> str:
    lines = [
        "| design | what the step changes | prompt tokens | saved | $ cached saved |",
        "|---|---|---:|---:|---:|",
    ]
    for row in metrics.design_steps:
        saved = row.tokens_saved
        cached = row.usd_cached_saved
        lines.append(
            f"| `{row.strategy}` | {row.step} | {row.totals.prompt_tokens:,} | "
            f"{f'{saved:,}' if saved is not None else '–'} | "
            f"{_usd(cached, 4)} |"
        )
    return "\n".join(lines)


def _caching(metrics: ComparisonMetrics) -> str:
    return "\n".join(line for line in caching_markdown(metrics) if line.lstrip().startswith("-"))


def _scaling(metrics: ComparisonMetrics) -> str:
    return "\n".join(breaks_markdown(metrics.scaling)) if metrics.scaling else ""


def _persona_table(metrics: ComparisonMetrics) -> str:
    lines = [
        "| persona | strategy | guard that catches it (times fired) | passed | prompt tokens | × ideal |",
        "|---|---|---|---:|---:|---:|",
    ]
    for name, row in metrics.personas.items():
        guard = (
            f"`{row.guard}` ({row.guard_hits.get(row.guard, 0)})"
            if row.guard
            else "none: it only costs"
        )
        lines.append(
            f"| {name} | {row.strategy} | {guard} | {row.passed}/{row.cases} | "
            f"{row.prompt_tokens:,} | {row.ratio_to_ideal or 0:.2f} |"
        )
    return "\n".join(lines)


def _persona_prose(metrics: ComparisonMetrics) -> str:
    """What the persona table says, in words, from its own rows: a repair's cost, a refusal's
    (the range of its personas' token ratios to the ideal model), and reading everything's."""
    rows = metrics.personas
    refusals = [r for r in rows.values() if r.guard and r.guard.startswith("refused_")]
    repairs = [r for r in rows.values() if r.guard and not r.guard.startswith("refused_")]
    costs = [r for r in rows.values() if not r.guard]
    parts = []
    if repairs:
        worst = max(r.ratio_to_ideal or 1.0 for r in repairs) - 1
        cost = (
            "the same tokens as the ideal model (within 0.5%)"
            if worst < 0.005
            else f"at most {worst:+.0%} tokens"
        )
        parts.append(
            f"A repair ({', '.join(n for n, r in rows.items() if r in repairs)}) costs {cost}"
        )
    if refusals:
        low = min(r.ratio_to_ideal or 1.0 for r in refusals) - 1
        high = max(r.ratio_to_ideal or 1.0 for r in refusals) - 1
        calls = [r.model_calls - r.ideal_model_calls for r in refusals]
        parts.append(
            f"a refusal costs the model another call ({min(calls):,} to {max(calls):,} more "
            f"model calls over {refusals[0].cases} cases, {low:+.0%} to {high:+.0%} tokens)"
        )
    for row in costs:
        parts.append(
            f"reading every reference in full costs {row.ratio_to_ideal or 0:.2f}× the tokens and "
            f"passes {row.passed} of {row.cases} cases, since most expect references to travel"
        )
    return "; ".join(parts) + "." if parts else ""


def _anchor_table() -> str:
    """The anchors' parameters, each with its source (:data:`ANCHOR_PARAMETERS`)."""
    lines = ["| anchor | parameter | value | source |", "|---|---|---|---|"]
    lines += [
        f"| `{p.anchor}` | {p.parameter} | {p.value} | {p.source} |" for p in ANCHOR_PARAMETERS
    ]
    return "\n".join(lines)


def _tcr_prompt(metrics: ComparisonMetrics) -> str:
    """box-tcr's prompt against tool-context-relay's own, in tokens, and what the difference
    does to the totals (the design step from ``box-tcr-original`` to ``box-tcr``)."""
    paraphrase = count_tokens(BoxPolicy(design="tcr").instructions())
    original = count_tokens(tcr_instructions())
    step = next((r for r in metrics.design_steps if r.design == "tcr"), None)
    first = next((r for r in metrics.design_steps if r.design == "tcr-original"), None)
    text = (
        f"box-tcr's system prompt is the workbook's paraphrase of tool-context-relay's: "
        f"{paraphrase:,} tokens (o200k_base) against the original's {original:,} "
        f"(`{TCR_INSTRUCTIONS_FILE.relative_to(PROJECT_ROOT)}`, word for word from "
        "grzegorz-aniol/tool-context-relay at commit 7ddb5b0, Apache-2.0)."
    )
    if step and first and step.tokens_saved is not None:
        text += (
            f" `box-tcr-original` runs the original, the first row of the design steps: over "
            f"the {first.totals.cases} cases it costs {step.tokens_saved:,} more prompt tokens "
            f"than box-tcr ({step.tokens_saved / step.totals.prompt_tokens:+.0%}; "
            f"{_usd(step.usd_uncached_saved, 4)} uncached, {_usd(step.usd_cached_saved, 4)} "
            "cached), so box-tcr's row understates what tool-context-relay's design costs."
        )
    return text


def generate() -> dict[str, str]:
    """Every figure block, measured now: ``{block name: Markdown}``.

    Runs in a fresh run-time folder (store, outbox: a file already in the outbox would change
    what a write reports) with reproducible ids.
    """
    saved = os.environ.get("WORKBOOK_VAR_DIR")
    with tempfile.TemporaryDirectory() as folder, reproducible_ids(SEED):
        os.environ["WORKBOOK_VAR_DIR"] = folder
        store = ToolOutputStore(f"sqlite:///{Path(folder) / 'figures.sqlite'}")
        try:
            ask = _ask_table(store)
            metrics = _comparison(store)
        finally:
            store.close()
            if saved is None:
                os.environ.pop("WORKBOOK_VAR_DIR", None)
            else:
                os.environ["WORKBOOK_VAR_DIR"] = saved
    return {
        "ask": ask,
        "compare": _compare_table(metrics),
        "personas": _persona_table(metrics),
        "persona_prose": _persona_prose(metrics),
        "designs": _design_table(metrics),
        "caching": _caching(metrics),
        "caching_rules": caching_rules_markdown(load_prices()),
        "tcr_prompt": _tcr_prompt(metrics),
        "anchors": _anchor_table(),
        "scaling": _scaling(metrics),
        "duration": _duration(),
        "sources": sources_markdown(),
        "reading_order": reading_order_markdown(),
        **registry_blocks(),
    }


#: A notebook's total in the instructor guide's minutes block (written by ``make guide``).
_GUIDE_TOTAL_RE = re.compile(
    r"^\| \*\*(\d\d_\w+)\*\* \| \*\*in all\*\* \|.*\*\*(\d+)\*\* \|$", re.M
)


def _duration() -> str:
    """How long the notebooks take, from the instructor guide's measured minutes per notebook."""
    minutes = {m[1]: int(m[2]) for m in _GUIDE_TOTAL_RE.finditer(GUIDE.read_text("utf-8"))}
    if not minutes:
        raise ValueError(f"{GUIDE.name} has no minutes per notebook: run `make guide`")
    total = sum(minutes.values())
    return (
        f"{total} minutes of work for the {len(minutes)} notebooks (about {total / 60:.1f} "
        f"hours), {min(minutes.values())} to {max(minutes.values())} minutes each: the "
        "[instructor guide](docs/instructor-guide.md)'s estimate of reading (prose and code), the "
        "TODOs and the cells' run time, with schedules for a half day, a half day on the newest "
        "material and a full day."
    )


def documents() -> list[Path]:
    """The pages that may hold generated blocks: README.md, CONTRIBUTING.md, docs/*.md and
    deploy/README.md."""
    pages = [
        README,
        PROJECT_ROOT / "CONTRIBUTING.md",
        *sorted(DOCS_DIR.glob("*.md")),
        PROJECT_ROOT / "deploy" / "README.md",
    ]
    return [p for p in pages if p.is_file()]


def write_blocks(blocks: dict[str, str], *, prefix: str = "figures") -> list[Path]:
    """Replace every ``prefix`` block of :func:`documents` that ``blocks`` names; return the
    pages that changed."""
    changed = []
    for page in documents():
        text = page.read_text(encoding="utf-8")
        new = update(text, blocks, prefix=prefix)
        if new != text:
            page.write_text(new, encoding="utf-8")
            changed.append(page)
    return changed


def block_names(*, prefix: str = "figures") -> dict[str, Path]:
    """Each ``prefix`` block's name, and the page that holds it."""
    return {
        match[2]: page
        for page in documents()
        for match in _block_re(prefix).finditer(page.read_text(encoding="utf-8"))
    }


def update(text: str, blocks: dict[str, str], *, prefix: str = "figures") -> str:
    """``text`` with every known ``<!-- prefix:NAME -->`` block replaced by its content
    (unknown blocks left alone), each ``$`` of it outside code written ``\\$``
    (:func:`helpers.text.escaping.dollars_as_text`: GitHub and JupyterLab read ``$…$`` as math)."""

    def replace(match: re.Match[str]) -> str:
        name = match[2]
        body = blocks.get(name)
        return match[0] if body is None else f"{match[1]}{dollars_as_text(body)}\n{match[4]}"

    return _block_re(prefix).sub(replace, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate (or check) the pages' figures.")
    parser.add_argument("--check", action="store_true", help="exit 1 if a page is stale")
    args = parser.parse_args(argv)
    blocks = generate()
    where = block_names()
    missing = sorted(set(blocks) - set(where))
    if missing:
        print(f"no page has a block for: {', '.join(missing)}")
        return 1
    if args.check:
        stale = [
            f"{name} ({where[name].name})"
            for name in blocks
            if f"<!-- figures:{name} -->\n{dollars_as_text(blocks[name])}\n"
            not in where[name].read_text(encoding="utf-8")
        ]
        if stale:
            print(f"figures are stale: {', '.join(stale)} (run `make figures`)")
            return 1
        print("the figures are current")
        return 0
    changed = write_blocks(blocks)
    names = ", ".join(p.relative_to(PROJECT_ROOT).as_posix() for p in changed) or "no page"
    print(f"wrote {len(blocks)} figure blocks; changed {names}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
