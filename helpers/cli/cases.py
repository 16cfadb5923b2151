"""``workbook cases``: prompt cases run under one or more strategies, models and personas,
and validated; a table, JSON, or the Markdown matrix *tool-context-relay* publishes."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import TaskID
from rich.table import Table

from helpers.cli.common import (
    DEFAULT_CASES,
    THE_THREE,
    add_context_controls,
    add_model_controls,
    compaction,
    limit_chars,
    load_cases_or_fail,
    model_options,
    open_store,
    options_refused,
    persona_model,
    progress_bar,
    retry_options,
    size_options,
    store_options,
    strategy_options,
)
from helpers.cli.exits import EXIT_FAILED, EXIT_OK, EXIT_USAGE, usage_error
from helpers.cli.output import console, output_options
from helpers.context.modes import for_mode
from helpers.evaluation.runs import (
    CaseRun,
    SkippedCase,
    client_for_cases,
    run_cases,
    runnable_cases,
)
from helpers.evaluation.validation import verdict_text
from helpers.models.llm import ConfigError, ModelConfig, resolve_model
from helpers.models.personas import PERSONAS
from helpers.text.escaping import for_json, for_markdown, for_rich
from helpers.tooling.tools import default_registry


def add_command(sub: Any, name: str, help: str) -> None:
    """Add ``cases`` to the ``workbook`` subparsers, with :func:`run` as its handler."""
    cases = sub.add_parser(
        name,
        help=help,
        parents=[
            model_options(repeat=True),
            strategy_options(with_all=True),
            size_options(),
            store_options(),
            retry_options(),
            output_options(),
        ],
    )
    cases.add_argument(
        "pattern",
        nargs="*",
        default=[DEFAULT_CASES],
        metavar="CASES",
        help="case files, or quoted globs (default: data/cases/*.md)",
    )
    add_context_controls(cases)
    add_model_controls(cases, repeat=True)
    cases.add_argument("--markdown", help="write the model × case × few-shot table to this file")

    cases.set_defaults(handler=run)


def _where(args: argparse.Namespace) -> str:
    """Where a skipped case could not run, for its reason: ``mode 'explore'``."""
    return f"mode {args.mode!r}"


def run(args: argparse.Namespace) -> int:
    """Run and validate the cases; exit 1 if any failed."""
    cases = load_cases_or_fail(args.pattern, args)
    if cases is None:
        return EXIT_USAGE
    cases, skipped = runnable_cases(
        cases, for_mode(default_registry(), args.mode), default_registry()
    )
    where = _where(args)
    if not cases:
        reasons = "; ".join(f"{s.case.id} {s.reason(where)}" for s in skipped)
        return usage_error(args, f"no case can run in {where}: {reasons}")
    strategies = list(THE_THREE) if args.strategy == "all" else [args.strategy]
    refused = options_refused(args, strategies)
    if refused:
        return usage_error(args, refused)
    targets = [(p, m) for p in (args.profile or [None]) for m in (args.model or [None])]
    personas: list[str | None] = [None]
    if args.persona:
        personas = list(PERSONAS) if "all" in args.persona else list(dict.fromkeys(args.persona))
    try:
        configs = [
            persona_model(resolve_model(p, m), persona) for p, m in targets for persona in personas
        ]
    except ConfigError as exc:
        return usage_error(args, str(exc))
    try:
        store = open_store(args.db)
    except ValueError as exc:
        return usage_error(args, str(exc))
    out = console(args.color, sys.stderr if args.json else None)
    results: list[tuple[ModelConfig, CaseRun]] = []
    with progress_bar(out, disable=args.json) as progress:
        for config in configs:
            if not args.json:
                out.print(f"[bold]Model:[/] {for_rich(config.describe())}")
            task = progress.add_task(config.model, total=len(cases) * len(strategies))
            client = client_for_cases(
                config, cases, max_retries=args.max_retries, timeout_s=args.timeout
            )

            def done(run: CaseRun, task: TaskID = task) -> None:
                progress.advance(task)

            for run in run_cases(
                cases,
                strategies,
                client=client,
                model=config.model,
                store=store,
                threshold=args.threshold,
                limit=limit_chars(args),
                few_shot=args.few_shot,
                boxing=args.boxing,
                temperature=config.temperature,
                registry=for_mode(default_registry(), args.mode),
                compaction=compaction(args),
                on_done=done,
            ):
                results.append((config, run))
    store.close()
    return _report(args, out, results, skipped, several=len(configs) > 1)


def _report(
    args: argparse.Namespace,
    out: Console,
    results: list[tuple[ModelConfig, CaseRun]],
    skipped: list[SkippedCase],
    *,
    several: bool,
) -> int:
    """Print the runs (a table, or JSON) and the cases not run, write the Markdown matrix if
    asked; the exit code: 1 if any run failed."""
    failed = [run for _, run in results if not run.passed]
    if args.json:
        print(
            for_json(
                {
                    "runs": [_run_json(c, r, args.few_shot) for c, r in results],
                    "failed": len(failed),
                    "skipped": [
                        {
                            "case": s.case.id,
                            "withheld": s.withheld,
                            "reason": s.reason(_where(args)),
                        }
                        for s in skipped
                    ],
                }
            )
        )
    else:
        table = _results_table(results, several=several)
        out.print(table)
        for s in skipped:
            out.print(
                f"[yellow]not run:[/] {for_rich(s.case.id)} {for_rich(s.reason(_where(args)))}"
            )
    if args.markdown:
        path = Path(args.markdown)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(matrix_markdown(results, args.few_shot), encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)
    return EXIT_FAILED if failed else EXIT_OK


def _results_table(results: list[tuple[ModelConfig, CaseRun]], *, several: bool) -> Table:
    """One row per run: case, strategy, verdict, tokens, calls, guards (and model, if
    ``several`` models ran)."""
    failed = [run for _, run in results if not run.passed]
    table = Table(
        title=f"Prompt cases: {len(results) - len(failed)}/{len(results)} passed",
        caption="tokens: o200k_base, from usage; calls: model calls / tool calls",
    )
    columns = ["model"] * several + [
        "case",
        "strategy",
        "result",
        "prompt",
        "compl.",
        "calls",
        "guards",
    ]
    for column in columns:
        numeric = column in ("prompt", "compl.", "calls")
        table.add_column(column, justify="right" if numeric else "left")
    for config, run in results:
        usage = run.record.usage()
        verdict = (
            "[green]pass[/]"
            if run.passed
            else f"[red]fail:[/] {for_rich(run.validation.summary())}"
        )
        table.add_row(
            *[for_rich(config.model)] * several,
            for_rich(run.case.id),
            run.strategy,
            verdict,
            str(usage["prompt_tokens"]),
            str(usage["completion_tokens"]),
            f"{usage['calls']} / {len(run.record.tool_calls)}",
            ", ".join(f"{g} ×{n}" for g, n in run.record.guard_counts().items()) or "–",
        )
    return table


def _run_json(config: ModelConfig, run: CaseRun, few_shot: bool) -> dict[str, Any]:
    return {
        "model": config.model,
        "case": run.case.id,
        "strategy": run.strategy,
        "boxing": run.record.boxing,
        "few_shot": few_shot,
        "passed": run.passed,
        "reasons": run.validation.reasons,
        "usage": run.record.usage(),
        "tool_calls": len(run.record.tool_calls),
        "status": run.record.status,
        "guards": run.record.guard_counts(),
        "persona": run.persona,
    }


def matrix_markdown(results: list[tuple[ModelConfig, CaseRun]], few_shot: bool) -> str:
    """Results across models, in the form *tool-context-relay* (grzegorz-aniol) publishes; the
    model and case names (a ``.env`` and a case file wrote them) as Markdown text."""
    lines = ["| Model | Prompt Id | Strategy | Few-shot | Validation |", "|---|---|---|---|---|"]
    for config, run in results:
        lines.append(
            f"| {for_markdown(config.model)} | {for_markdown(run.case.id)} | {run.strategy} | {'✔' if few_shot else '-'} | "
            f"{verdict_text(run.passed)} |"
        )
    return "\n".join(lines) + "\n"
