"""``workbook compare``: the same cases under every strategy, measured in tokens, dollars,
calls and correctness; writes the report (:mod:`helpers.evaluation.compare`) and prints its
totals."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from helpers.cases.case_files import ALL_CASES, Case
from helpers.cli.common import (
    limit_chars,
    load_cases_or_fail,
    model_options,
    open_store,
    options_refused,
    positive,
    progress_bar,
    size_options,
    store_options,
)
from helpers.cli.exits import EXIT_OK, EXIT_USAGE, usage_error
from helpers.cli.output import console, output_options
from helpers.context.strategies import (
    compared_strategies,
    design_step_strategies,
    field_strategies,
)
from helpers.evaluation.compare import Comparison, write_report
from helpers.evaluation.metrics import ComparisonMetrics, PersonaRow
from helpers.evaluation.pricing import DEFAULT_PRICE_MODEL, load_prices
from helpers.evaluation.runs import (
    RunOptions,
    client_for_cases,
    run_cases,
    run_personas,
)
from helpers.evaluation.scaling import SCALING_SIZES_BYTES, run_scaling
from helpers.models.llm import ConfigError, ModelConfig, resolve_model
from helpers.models.personas import MISTAKE_PERSONAS, PERSONAS, Persona
from helpers.store.tool_outputs import ToolOutputStore
from helpers.text.escaping import for_rich


def add_command(sub: Any, name: str, help: str) -> None:
    """Add ``compare`` to the ``workbook`` subparsers, with :func:`run` as its handler."""
    compare = sub.add_parser(
        name,
        help=help,
        parents=[
            model_options(),
            size_options(),
            store_options(
                "keep the runs' tool outputs in this store, any SQLAlchemy URL (default: a "
                "temporary SQLite file, deleted when compare ends)"
            ),
            output_options(json_flag=False),
        ],
    )
    compare.add_argument(
        "--cases",
        nargs="+",
        default=[ALL_CASES],
        metavar="CASES",
        help="case files, or quoted globs (default: every shipped case, the large ones too)",
    )
    compare.add_argument(
        "--price-model",
        default=DEFAULT_PRICE_MODEL,
        help="whose list prices (data/pricing.yaml) turn tokens into dollars (default %(default)s)",
    )
    compare.add_argument(
        "--design-steps",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also run each box design between tool-context-relay's and the workbook's",
    )
    compare.add_argument(
        "--scaling",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also run one task with a result growing from 1 KB to --scaling-max-bytes",
    )
    compare.add_argument(
        "--scaling-max-bytes",
        type=positive,
        default=10_000_000,
        help="the largest result of the scaling run, in bytes (default %(default)s)",
    )
    compare.add_argument("--focus", help="case whose context growth the plot shows")
    compare.add_argument(
        "--personas",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="offline: add a row per persona (a model that makes a real model's mistake)",
    )
    compare.add_argument("-o", "--out", default="build/compare", help="output folder")
    compare.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Run the comparison and write its report."""
    cases = load_cases_or_fail(args.cases, args)
    if cases is None:
        return EXIT_USAGE
    try:
        config = resolve_model(args.profile, args.model)
    except ConfigError as exc:
        return usage_error(args, str(exc))
    personas = [PERSONAS[name] for name in MISTAKE_PERSONAS] if args.personas else []
    try:
        price_model = load_prices().get(args.price_model).model
    except ValueError as exc:
        return usage_error(args, str(exc))
    strategies = [
        *compared_strategies(),
        *field_strategies(),
        *(design_step_strategies() if args.design_steps else ()),
    ]
    refused = options_refused(args, strategies)
    if refused:
        return usage_error(args, refused)
    with tempfile.TemporaryDirectory(prefix="workbook-compare-") as scratch:
        try:  # the runs' tool outputs are kept only when --db names a store
            store = open_store(args.db or f"sqlite:///{Path(scratch) / 'compare.sqlite'}")
        except ValueError as exc:
            return usage_error(args, str(exc))
        out = console(args.color)  # the command line is usable: what runs is said from here
        out.print(f"[bold]Model:[/] {for_rich(config.describe())}")
        if personas and not config.offline:
            out.print("[dim]personas are offline only: no persona rows for a real model[/]")
            personas = []
        try:
            metrics = _measure(args, out, cases, config, strategies, personas, price_model, store)
        finally:
            store.close()
    paths = write_report(metrics, Path(args.out), focus_case=args.focus)
    _print_summary(out, metrics)
    for kind, path in paths.items():
        out.print(f"wrote {path} ({kind})")
    return EXIT_OK


def _measure(
    args: argparse.Namespace,
    out: Console,
    cases: list[Case],
    config: ModelConfig,
    strategies: list[str],
    personas: list[Persona],
    price_model: str,
    store: ToolOutputStore,
) -> ComparisonMetrics:
    """Run every case under every strategy (and persona, and the scaling sizes) with a progress
    bar, and measure them."""
    client = client_for_cases(config, cases)
    shared = RunOptions(
        client=client,
        store=store,
        threshold=args.threshold,
        limit=limit_chars(args),
        temperature=config.temperature,
    )
    sizes = [s for s in SCALING_SIZES_BYTES if s <= args.scaling_max_bytes] if args.scaling else []
    if sizes and not config.offline:
        out.print("[dim]the scaling run is offline only: no scaling for a real model[/]")
        sizes = []
    scaled = [*compared_strategies(), *field_strategies()]
    total_runs = len(cases) * (len(strategies) + len(personas)) + len(sizes) * len(scaled)
    with progress_bar(out, disable=False) as progress:
        task = progress.add_task("comparing", total=total_runs)
        runs = run_cases(
            cases,
            strategies,
            model=config.model,
            on_done=lambda _run: progress.advance(task),
            **shared,
        )
        runs += run_personas(cases, personas, on_done=lambda _run: progress.advance(task), **shared)
        scaling = None
        if sizes:
            scaling = run_scaling(
                sizes,
                scaled,
                price_model=price_model,
                store=store,
                on_done=lambda _size, _strategy: progress.advance(task),
            )
    return Comparison(
        runs,
        config.model,
        args.threshold,
        limit_chars(args),
        price_model=price_model,
        scaling=scaling,
    ).metrics()


def _print_summary(out: Console, metrics: ComparisonMetrics) -> None:
    """The totals table, where box missed its goal, where each strategy breaks as the result
    grows, and the personas' table."""
    out.print(_totals_table(metrics))
    missed = {c: g for c, g in metrics.box_goals().items() if not g.met}
    if missed:
        out.print(f"[yellow]box goal missed on {len(missed)} case(s):[/]")
        for case_id, goal in missed.items():
            out.print(f"  {for_rich(case_id)}: {for_rich(goal.why or '')}")
    else:
        out.print(
            f"[green]box goal met on every case[/] (≤ {metrics.box_goal_ratio}× the cheaper of "
            "inline and truncate)"
        )
    if metrics.scaling is not None:
        for strategy, sentence in metrics.scaling.breaks.items():
            out.print(f"  [bold]{strategy}[/] {for_rich(sentence)}")
    if metrics.personas:
        out.print(_persona_table(metrics.personas))


def _ratio(value: float | None) -> str:
    return "–" if value is None else str(value)


def _totals_table(metrics: ComparisonMetrics) -> Table:
    pricing = metrics.pricing
    table = Table(
        title="Totals per strategy (runs that passed)",
        caption=f"dollars at {pricing.model} list prices (checked {pricing.checked}); "
        "× inline over the cases both passed, × floor over the cases the strategy passed",
    )
    columns = (
        "strategy",
        "passed",
        "overflows",
        "prompt tokens",
        "× inline",
        "× floor",
        "$ uncached",
        "$ cached",
    )
    for column in columns:
        table.add_column(column, justify="left" if column == "strategy" else "right")
    for strategy, total in metrics.totals.items():
        table.add_row(
            strategy,
            f"{total.passed}/{total.cases}",
            str(total.context_overflows),
            f"{total.prompt_tokens:,}",
            _ratio(total.ratio_to_inline),
            _ratio(total.ratio_to_floor),
            f"${total.usd_uncached or 0:,.4f}",
            f"${total.usd_cached or 0:,.4f}",
        )
    table.add_row("floor", "–", "–", f"{metrics.floor.prompt_tokens:,}", "", "1.0", "", "")
    return table


def _persona_table(rows: dict[str, PersonaRow]) -> Table:
    table = Table(
        title="When the model gets it wrong (offline personas)",
        caption="guard: the client check meant to catch the mistake (✓ it fired); × ideal: "
        "prompt tokens against the ideal model on the same cases and strategy",
    )
    for column in ("persona", "strategy", "guard", "passed", "prompt tokens", "× ideal"):
        numeric = column in ("passed", "prompt tokens", "× ideal")
        table.add_column(column, justify="right" if numeric else "left")
    for name, row in rows.items():
        if row.guard is None:
            guard = "[yellow]none: costs tokens[/]"
        else:
            mark = "[green]✓[/]" if row.caught else "[red]✗[/]"
            guard = f"{mark} {row.guard} ×{row.guard_hits.get(row.guard, 0)}"
        table.add_row(
            name,
            row.strategy,
            guard,
            f"{row.passed}/{row.cases}",
            f"{row.prompt_tokens:,}",
            str(row.ratio_to_ideal),
        )
    return table
