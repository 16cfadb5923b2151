"""The ``workbook`` command.

    workbook ask PROMPT [--strategy inline|truncate|box] [--boxing opaque|json] [--json] ...
    workbook cases "data/cases/*.md" [--strategy box|truncate|inline|middle|all] [--json] ...
    workbook compare [--cases GLOB] [--threshold N] [--limit N] --out DIR
    workbook build-data
    workbook serve-offline [--port N]

Exit codes (:data:`EXIT_CODES`): 0 answered (``ok``); 1 a failed run (``error``: the endpoint
failed or sent no usable reply; ``max_iterations``: no final answer); 2 bad usage (unknown
option, bad value, unusable ``.env`` profile, unknown thread); 3 an ``incomplete`` answer (cut,
filtered, refused, empty, or only in the model's reasoning). With ``--json``, ``ask`` prints
exactly one JSON object on stdout whatever happens, with a ``status``; no traceback reaches the
user (``WORKBOOK_DEBUG=1`` shows one for an internal error).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from rich.console import Console
from rich.panel import Panel
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from helpers.cases import ALL_CASES, Case, CaseError, load_cases
from helpers.context.compaction import DEFAULT_THRESHOLD_TOKENS
from helpers.context.modes import MODES, for_mode
from helpers.context.preview import DEFAULT_PREVIEW_LIMIT_CHARS
from helpers.context.read_back import ResultKind
from helpers.context.strategies import strategy_names
from helpers.course.outputs_cli import add_outputs_command, run_outputs
from helpers.escaping import for_json, for_markdown, for_rich, for_terminal
from helpers.evaluation.compare import Comparison, write_report
from helpers.evaluation.pricing import DEFAULT_PRICE_MODEL, load_prices
from helpers.evaluation.runs import (
    COMPARED_STRATEGIES,
    DESIGN_STEPS,
    CaseRun,
    client_for_cases,
    policy_for,
    run_cases,
    run_personas,
)
from helpers.evaluation.scaling import SCALING_SIZES_BYTES, run_scaling
from helpers.loop.agent import (
    DEFAULT_MAX_ITERATIONS,
    CompactionEvent,
    CompactionSettings,
    ModelCallRecord,
    ToolCallRecord,
    TurnEvent,
    run_turn,
)
from helpers.loop.threads import ThreadError, open_thread
from helpers.models.llm import (
    DEFAULT_MAX_RETRIES,
    ConfigError,
    ModelConfig,
    make_client,
    resolve_model,
)
from helpers.paths import CASES_DIR
from helpers.personas import MISTAKE_PERSONAS, PERSONAS, get_persona
from helpers.redaction import mask_url_password
from helpers.replies import has_unpaired_surrogate
from helpers.tooling.store import ToolOutputStore
from helpers.tooling.tools import default_registry

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INCOMPLETE = 0, 1, 2, 3
#: Turn status → exit code of ``workbook ask``.
EXIT_CODES = {"ok": EXIT_OK, "incomplete": EXIT_INCOMPLETE, "max_iterations": EXIT_FAILED}
DEFAULT_CASES = str(CASES_DIR / "*.md")
_KIND_STYLE: dict[ResultKind, str] = {
    "boxed": "magenta",
    "truncated": "yellow",
    "saved": "blue",
    "middle": "red",
    "error": "red",
    "inline": "green",
}


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error under ``--json`` is one JSON object on stdout too."""

    json_errors = False

    def error(self, message: str) -> NoReturn:
        if _Parser.json_errors:
            _print_json({"status": "usage_error", "error": f"{self.prog}: {message}"})
            sys.exit(EXIT_USAGE)
        super().error(message)


def _print_json(data: Any) -> None:
    """One JSON object on one line of stdout, ASCII only (:func:`helpers.escaping.for_json`)."""
    print(for_json(data), flush=True)


def _whole_number(minimum: int) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


def _port(text: str) -> int:
    value = _whole_number(1)(text)
    if value > 65_535:
        raise argparse.ArgumentTypeError(f"a port is 1-65535, got {value}")
    return value


_non_negative = _whole_number(0)
_positive = _whole_number(1)


def _add_context_controls(parser: argparse.ArgumentParser) -> None:
    """--mode and --compact, shared by ask and cases."""
    parser.add_argument("--mode", choices=tuple(MODES), help="expose only this mode's tools")
    parser.add_argument(
        "--compact",
        nargs="?",
        type=_positive,
        const=DEFAULT_THRESHOLD_TOKENS,
        metavar="TOKENS",
        help="compact earlier tool calls past this many context tokens (default %(const)s)",
    )


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be above 0 seconds, got {text}")
    return value


def _add_model_controls(parser: argparse.ArgumentParser, *, repeat: bool = False) -> None:
    """--timeout and --persona, shared by ask and cases."""
    parser.add_argument(
        "--timeout",
        type=_positive_seconds,
        metavar="SECONDS",
        help="seconds to wait for one model response (default: <PROFILE>_TIMEOUT, else 120)",
    )
    parser.add_argument(
        "--persona",
        action="append" if repeat else "store",
        choices=(*PERSONAS, "all") if repeat else tuple(PERSONAS),
        help="offline only: the offline model makes this persona's mistake"
        + (" (repeat, or 'all')" if repeat else ""),
    )


def _persona_model(config: ModelConfig, persona: str | None) -> ModelConfig:
    """``config`` with the persona's model name; raises ConfigError for a real model."""
    if persona is None:
        return config
    if not config.offline:
        raise ConfigError(
            f"--persona is part of the offline reference model, but profile {config.profile!r} "
            "is a real model; use --profile offline"
        )
    return ModelConfig(config.profile, "offline", get_persona(persona).model_name)


def _compaction(args: argparse.Namespace) -> CompactionSettings | None:
    return None if args.compact is None else CompactionSettings(args.compact)


# -- options shared by several commands: each declared once, here -------------------------------

_DB_HELP = "the store, any SQLAlchemy URL (default: $WORKBOOK_DB_URL, else sqlite:///var/tool_outputs.sqlite)"


def _model_options(*, repeat: bool = False) -> argparse.ArgumentParser:
    """-p/--profile and -m/--model (repeatable for a model matrix)."""
    options = argparse.ArgumentParser(add_help=False)
    action = "append" if repeat else "store"
    again = " (repeat for a matrix)" if repeat else ""
    options.add_argument(
        "-p",
        "--profile",
        action=action,
        help="a .env profile (default: $WORKBOOK_PROFILE; else openai if $OPENAI_API_KEY is set, "
        f"else offline){again}",
    )
    options.add_argument(
        "-m", "--model", action=action, help=f"override the profile's model name{again}"
    )
    return options


def _store_options() -> argparse.ArgumentParser:
    """--db: where tool outputs and threads are stored."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--db", metavar="URL", help=_DB_HELP)
    return options


def _size_options() -> argparse.ArgumentParser:
    """-t/--threshold and -l/--limit: when a result is boxed, how long a preview is."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "-t",
        "--threshold",
        type=_non_negative,
        default=None,
        help="box: the longest result kept inline (default: the design's: 1,000 tokens for "
        "box, 256 characters for box-tcr)",
    )
    options.add_argument(
        "-l",
        "--limit",
        type=_non_negative,
        default=DEFAULT_PREVIEW_LIMIT_CHARS,
        help="truncate: preview length in characters (default %(default)s)",
    )
    return options


#: What ``workbook cases --strategy all`` runs: the three strategies notebooks 01-04 build.
THE_THREE = ("inline", "truncate", "box")


def _strategy_options(*, with_all: bool = False) -> argparse.ArgumentParser:
    """-s/--strategy, --boxing and --few-shot; the strategies are those registered now
    (:mod:`helpers.context.strategies`)."""
    names = strategy_names()
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "-s",
        "--strategy",
        choices=(*names, "all") if with_all else names,
        default="box",
        metavar="STRATEGY",
        help="what the model sees of a long result: "
        + ", ".join((*names, "all") if with_all else names)
        + " (default %(default)s: the workbook's box design; box-tcr is tool-context-relay's; "
        "codex, deepagents, claude-code and agents-sdk are those agents' own policies"
        + (f"; all = {', '.join(THE_THREE)})" if with_all else ")"),
    )
    options.add_argument(
        "--boxing",
        choices=("opaque", "json"),
        default=None,
        help="a box strategy's reference form: internal://<id> (opaque, the default except "
        "for box-json) or an MCP resource link (json)",
    )
    options.add_argument(
        "--few-shot",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="include the few-shot examples in the system message",
    )
    return options


def _output_options(*, json_flag: bool = True) -> argparse.ArgumentParser:
    """-j/--json and --color."""
    options = argparse.ArgumentParser(add_help=False)
    if json_flag:
        options.add_argument(
            "-j", "--json", action="store_true", help="print one JSON object, nothing else"
        )
    options.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour in the terminal (default %(default)s; NO_COLOR is honoured)",
    )
    return options


def _retry_options() -> argparse.ArgumentParser:
    """--max-retries."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "--max-retries",
        type=_non_negative,
        default=DEFAULT_MAX_RETRIES,
        help="the SDK's retries of a failed request (default %(default)s)",
    )
    return options


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also used to document the CLI in tests)."""
    parser = _Parser(
        prog="workbook",
        description="Context Relay Workbook: run agent turns, compare strategies, see the store.",
        epilog="exit codes: 0 ok; 1 error or max_iterations; 2 bad usage; 3 incomplete answer. "
        "Environment: WORKBOOK_PROFILE (the model), WORKBOOK_DB_URL (the store), "
        "WORKBOOK_VAR_DIR (run-time folder), NO_COLOR.",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    store, output, sizes, retries = (
        _store_options(),
        _output_options(),
        _size_options(),
        _retry_options(),
    )

    ask = sub.add_parser(
        "ask",
        help="run one agent turn on a prompt",
        parents=[_model_options(), _strategy_options(), sizes, store, retries, output],
        epilog="status → exit code: ok 0; error 1; max_iterations 1; context_exceeded 1; "
        "usage_error 2; incomplete 3 (cut, filtered, refused, empty, or only in the model's "
        "reasoning)",
    )
    ask.add_argument("prompt", help="the user message")
    ask.add_argument(
        "--max-iterations",
        type=_positive,
        default=DEFAULT_MAX_ITERATIONS,
        help="model calls per turn at most (default %(default)s)",
    )
    ask.add_argument(
        "--thread",
        help="continue this thread: the model gets its earlier messages, its references resolve",
    )
    ask.add_argument(
        "--new-thread",
        action="store_true",
        help="start the thread given by --thread instead of continuing it",
    )
    _add_context_controls(ask)
    _add_model_controls(ask)
    ask.add_argument("--print-tools", action="store_true", help="print the tool schemas first")
    ask.add_argument("--dump-context", action="store_true", help="print the final messages")

    cases = sub.add_parser(
        "cases",
        help="run prompt cases and validate them",
        parents=[
            _model_options(repeat=True),
            _strategy_options(with_all=True),
            sizes,
            store,
            retries,
            output,
        ],
    )
    cases.add_argument("pattern", nargs="?", default=DEFAULT_CASES, help="glob of case files")
    _add_context_controls(cases)
    _add_model_controls(cases, repeat=True)
    cases.add_argument("--markdown", help="write the model × case × few-shot table to this file")

    compare = sub.add_parser(
        "compare",
        help="the same cases under every strategy, measured",
        parents=[_model_options(), sizes, store, _output_options(json_flag=False)],
    )
    compare.add_argument(
        "--cases",
        default=ALL_CASES,
        help="glob of case files (default: every shipped case, the large ones too)",
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
        type=_positive,
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

    add_outputs_command(sub, [store, _output_options()])

    sub.add_parser("build-data", help="(re)build the reference database from pycountry")

    restore = sub.add_parser(
        "restore", help="put one attendee notebook back as it was (yours goes to var/backups/)"
    )
    restore.add_argument("notebook", help="its number, e.g. 04")

    serve = sub.add_parser("serve-offline", help="serve the offline model over loopback HTTP")
    serve.add_argument(
        "--port", type=_port, default=8765, help="loopback port, 1-65535 (default %(default)s)"
    )
    return parser


def _console(color: str, stream: Any = None) -> Console:
    force = {"always": True, "never": False}.get(color)
    return Console(
        file=stream or sys.stdout,
        force_terminal=force,
        no_color=color == "never",
        highlight=False,
        emoji=False,  # ":name:" in a model's text stays as written
    )


def _short(text: str, width: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _open_store(url: str | None) -> ToolOutputStore:
    """The store at ``url``; raises ``ValueError`` with a one-line reason if it cannot be used."""
    try:
        store = ToolOutputStore(url)
        store.count()  # opens a connection: a bad file or server fails here, not mid-turn
        return store
    except Exception as exc:
        reason = mask_url_password(" ".join(str(exc).split("\n")[0].split()), url)[:300]
        shown = mask_url_password(url) if url else "the default store"
        raise ValueError(
            f"cannot use {shown!r} as the store ({type(exc).__name__}: {reason}); give --db a "
            "SQLAlchemy URL such as sqlite:///var/my.sqlite"
        ) from None


def _usage_error(args: argparse.Namespace, message: str) -> int:
    """Report bad usage: one JSON object on stdout with ``--json``, else a line on stderr."""
    if getattr(args, "json", False):
        _print_json({"status": "usage_error", "error": message})
    else:
        print(f"workbook: {for_terminal(message)}", file=sys.stderr)
    return EXIT_USAGE


def _print_tool_call(out: Console, call: ToolCallRecord) -> None:
    """A tool call and what the model saw of its result, on two lines."""
    style = _KIND_STYLE.get(call.result_kind, "white")
    out.print(f"[cyan]→ {for_rich(call.name)}[/]({for_rich(_short(call.arguments, 200))})")
    size = f", full output {call.output_chars} chars" if call.output_chars is not None else ""
    guards = f" [magenta]guard: {', '.join(call.guards)}[/]" if call.guards else ""
    out.print(f"  [{style}]← {call.result_kind}{size}:[/] {for_rich(_short(call.result))}{guards}")


def cmd_ask(args: argparse.Namespace) -> int:
    try:
        config = _persona_model(resolve_model(args.profile, args.model), args.persona)
        policy = policy_for(
            args.strategy, limit=args.limit, threshold=args.threshold, boxing=args.boxing
        )
    except (ConfigError, ValueError) as exc:
        return _usage_error(args, str(exc))
    if args.new_thread and args.thread is None:
        return _usage_error(args, "--new-thread starts the thread named by --thread ID")
    if has_unpaired_surrogate(args.prompt):
        return _usage_error(
            args,
            "the prompt is not valid UTF-8 text (the terminal passed bytes that do not decode)",
        )
    try:
        store = _open_store(args.db)
    except ValueError as exc:
        return _usage_error(args, str(exc))
    try:
        thread_id, history = open_thread(store, args.thread, new=args.new_thread)
    except ThreadError as exc:
        store.close()
        return _usage_error(args, str(exc))
    client = make_client(config, max_retries=args.max_retries, timeout_s=args.timeout)
    registry = for_mode(default_registry(), args.mode)
    out = _console(args.color)
    human = not args.json

    if args.print_tools:
        schemas = registry.merged(policy.internal_tools()).schemas()
        if human:
            out.print_json(json.dumps(schemas))
        else:
            print(for_json(schemas), file=sys.stderr)

    status = None
    if human:
        out.print(f"[bold]Model:[/] {for_rich(config.describe())}")
        out.print(f"[bold]Strategy:[/] {for_rich(policy.describe())}")
        if args.mode:
            out.print(f"[bold]Mode:[/] {args.mode} ({', '.join(registry.names())})")
        if history:
            out.print(
                f"[bold]Thread:[/] {for_rich(thread_id)}, continued: {len(history)} earlier messages"
            )
        if not config.offline:
            status = out.status("waiting for the model…")
            status.start()

    def on_event(event: TurnEvent) -> None:
        if not human:
            return
        match event:
            case ModelCallRecord():
                counted = "" if event.usage_source == "response" else f" ({event.usage_source})"
                out.print(
                    f"[dim]model call {event.index + 1}: {event.prompt_tokens} prompt tokens, "
                    f"{event.completion_tokens} completion tokens{counted}[/]"
                )
            case CompactionEvent():
                out.print(
                    f"[bold magenta]⟲ compacted {event.folded_calls} earlier tool calls: "
                    f"{event.tokens_before:,} → {event.tokens_after:,} context tokens[/]"
                )
            case ToolCallRecord():
                _print_tool_call(out, event)

    try:
        record = run_turn(
            args.prompt,
            client=client,
            model=config.model,
            policy=policy,
            registry=registry,
            store=store,
            thread_id=thread_id,
            max_iterations=args.max_iterations,
            few_shot=args.few_shot,
            history=history,
            temperature=config.temperature,
            on_event=on_event,
            compaction=_compaction(args),
        )
    finally:
        if status is not None:
            status.stop()
        store.close()

    if args.json:
        _print_json(record.to_json(include_context=args.dump_context))
    else:
        _print_outcome(out, record)
        if args.dump_context:
            # rich writes the parsed JSON again: ASCII only, so escapes stay escapes
            out.print_json(for_json(record.messages), ensure_ascii=True)
    return EXIT_CODES.get(record.status, EXIT_FAILED)


def _print_outcome(out: Console, record: Any) -> None:
    """The answer (or why there is none), then usage and how to continue the thread."""
    if record.ok:
        out.print(Panel(for_rich(record.answer or ""), title="answer", expand=False))
    elif record.status == "incomplete":
        out.print(f"[bold yellow]Incomplete:[/] {for_rich(record.error or '')}")
        if (record.answer or "").strip():
            out.print(Panel(for_rich(record.answer), title="what came back", expand=False))
        if record.reasoning:
            out.print(
                Panel(
                    for_rich(_short(record.reasoning, 2000)),
                    title="the model's reasoning (not an answer)",
                    expand=False,
                )
            )
    else:
        out.print(f"[bold red]No answer ({record.status}):[/] {for_rich(record.error or '')}")
    usage = record.usage()
    guards = record.guard_counts()
    out.print(
        f"[bold]Usage:[/] {usage['prompt_tokens']} prompt tokens, "
        f"{usage['completion_tokens']} completion tokens, {usage['calls']} model calls, "
        f"{len(record.tool_calls)} tool calls"
        + (f"; guards: {', '.join(f'{g} ×{n}' for g, n in guards.items())}" if guards else "")
    )
    out.print(
        f"[bold]Thread:[/] {for_rich(record.thread_id)} (continue it: --thread {for_rich(record.thread_id)})"
    )


def _progress(out: Console, disable: bool) -> Progress:
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=out,
        disable=disable,
        transient=True,
    )


def _load_cases_or_fail(pattern: str) -> list[Case] | None:
    try:
        cases = load_cases(pattern)
    except CaseError as exc:
        print(f"workbook: {for_terminal(str(exc))}", file=sys.stderr)
        return None
    if not cases:
        print(f"workbook: no case files match {for_terminal(repr(pattern))}", file=sys.stderr)
        return None
    return cases


def cmd_cases(args: argparse.Namespace) -> int:
    cases = _load_cases_or_fail(args.pattern)
    if cases is None:
        return EXIT_USAGE
    strategies = list(THE_THREE) if args.strategy == "all" else [args.strategy]
    targets = [(p, m) for p in (args.profile or [None]) for m in (args.model or [None])]
    personas: list[str | None] = [None]
    if args.persona:
        personas = list(PERSONAS) if "all" in args.persona else list(dict.fromkeys(args.persona))
    try:
        configs = [
            _persona_model(resolve_model(p, m), persona) for p, m in targets for persona in personas
        ]
    except ConfigError as exc:
        return _usage_error(args, str(exc))
    try:
        store = _open_store(args.db)
    except ValueError as exc:
        return _usage_error(args, str(exc))
    out = _console(args.color, sys.stderr if args.json else None)
    results: list[tuple[ModelConfig, CaseRun]] = []
    with _progress(out, disable=args.json) as progress:
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
                limit=args.limit,
                few_shot=args.few_shot,
                boxing=args.boxing,
                temperature=config.temperature,
                registry=for_mode(default_registry(), args.mode),
                compaction=_compaction(args),
                on_done=done,
            ):
                results.append((config, run))
    store.close()
    failed = [run for _, run in results if not run.passed]
    if args.json:
        print(
            for_json(
                {
                    "runs": [_run_json(c, r, args.few_shot) for c, r in results],
                    "failed": len(failed),
                }
            )
        )
    else:
        table = Table(
            title=f"Prompt cases: {len(results) - len(failed)}/{len(results)} passed",
            caption="tokens: o200k_base, from usage; calls: model calls / tool calls",
        )
        several = len(configs) > 1
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
        out.print(table)
    if args.markdown:
        path = Path(args.markdown)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(matrix_markdown(results, args.few_shot), encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)
    return EXIT_FAILED if failed else EXIT_OK


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
            f"{'✅' if run.passed else '❌'} |"
        )
    return "\n".join(lines) + "\n"


def cmd_compare(args: argparse.Namespace) -> int:
    cases = _load_cases_or_fail(args.cases)
    if cases is None:
        return EXIT_USAGE
    try:
        config = resolve_model(args.profile, args.model)
    except ConfigError as exc:
        return _usage_error(args, str(exc))
    out = _console(args.color)
    out.print(f"[bold]Model:[/] {for_rich(config.describe())}")
    personas = [PERSONAS[name] for name in MISTAKE_PERSONAS] if args.personas else []
    if personas and not config.offline:
        out.print("[dim]personas are offline only: no persona rows for a real model[/]")
        personas = []
    try:
        price_model = load_prices().get(args.price_model).model
    except ValueError as exc:
        return _usage_error(args, str(exc))
    strategies = [*COMPARED_STRATEGIES, *(DESIGN_STEPS if args.design_steps else ())]
    try:
        store = _open_store(args.db)
    except ValueError as exc:
        return _usage_error(args, str(exc))
    client = client_for_cases(config, cases)
    common: dict[str, Any] = {
        "client": client,
        "store": store,
        "threshold": args.threshold,
        "limit": args.limit,
        "temperature": config.temperature,
    }
    sizes = [s for s in SCALING_SIZES_BYTES if s <= args.scaling_max_bytes] if args.scaling else []
    if sizes and not config.offline:
        out.print("[dim]the scaling run is offline only: no scaling for a real model[/]")
        sizes = []
    total_runs = len(cases) * (len(strategies) + len(personas)) + len(sizes) * len(
        COMPARED_STRATEGIES
    )
    with _progress(out, disable=False) as progress:
        task = progress.add_task("comparing", total=total_runs)
        runs = run_cases(
            cases,
            strategies,
            model=config.model,
            on_done=lambda _run: progress.advance(task),
            **common,
        )
        runs += run_personas(cases, personas, on_done=lambda _run: progress.advance(task), **common)
        scaling = None
        if sizes:
            scaling = run_scaling(
                sizes,
                COMPARED_STRATEGIES,
                price_model=price_model,
                store=store,
                on_done=lambda _size, _strategy: progress.advance(task),
            )
    store.close()
    comparison = Comparison(
        runs, config.model, args.threshold, args.limit, price_model=price_model, scaling=scaling
    )
    paths = write_report(comparison, Path(args.out), focus_case=args.focus)
    data = json.loads(paths["json"].read_text(encoding="utf-8"))
    out.print(_totals_table(data))
    missed = {
        c: e["box_goal"]
        for c, e in data["cases"].items()
        if e.get("box_goal", {}).get("met") is False
    }
    if missed:
        out.print(f"[yellow]box goal missed on {len(missed)} case(s):[/]")
        for case_id, goal in missed.items():
            out.print(f"  {for_rich(case_id)}: {for_rich(goal.get('why', ''))}")
    else:
        out.print(
            f"[green]box goal met on every case[/] (≤ {data['box_goal_ratio']}× the cheaper of "
            "inline and truncate)"
        )
    if scaling:
        for strategy, sentence in scaling["breaks"].items():
            out.print(f"  [bold]{strategy}[/] {for_rich(sentence)}")
    if data["personas"]:
        out.print(_persona_table(data["personas"]))
    for kind, path in paths.items():
        out.print(f"wrote {path} ({kind})")
    return EXIT_OK


def _totals_table(data: dict[str, Any]) -> Table:
    pricing = data["pricing"]
    table = Table(
        title="Totals per strategy (runs that passed)",
        caption=f"dollars at {pricing['model']} list prices (checked {pricing['checked']}); "
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
    for strategy, total in data["totals"].items():
        if strategy == "floor":
            table.add_row("floor", "–", "–", f"{total['prompt_tokens']:,}", "", "1.0", "", "")
            continue
        table.add_row(
            strategy,
            f"{total['passed']}/{total['cases']}",
            str(total["context_overflows"]),
            f"{total['prompt_tokens']:,}",
            str(total["ratio_to_inline"] if total["ratio_to_inline"] is not None else "–"),
            str(total["ratio_to_floor"] if total["ratio_to_floor"] is not None else "–"),
            f"${total.get('usd_uncached', 0):,.4f}",
            f"${total.get('usd_cached', 0):,.4f}",
        )
    return table


def _persona_table(rows: dict[str, Any]) -> Table:
    table = Table(
        title="When the model gets it wrong (offline personas)",
        caption="guard: the client check meant to catch the mistake (✓ it fired); × ideal: "
        "prompt tokens against the ideal model on the same cases and strategy",
    )
    for column in ("persona", "strategy", "guard", "passed", "prompt tokens", "× ideal"):
        numeric = column in ("passed", "prompt tokens", "× ideal")
        table.add_column(column, justify="right" if numeric else "left")
    for name, row in rows.items():
        if row["guard"] is None:
            guard = "[yellow]none: costs tokens[/]"
        else:
            mark = "[green]✓[/]" if row["caught"] else "[red]✗[/]"
            guard = f"{mark} {row['guard']} ×{row['guard_hits'].get(row['guard'], 0)}"
        table.add_row(
            name,
            row["strategy"],
            guard,
            f"{row['passed']}/{row['cases']}",
            f"{row['prompt_tokens']:,}",
            str(row["ratio_to_ideal"]),
        )
    return table


def cmd_outputs(args: argparse.Namespace) -> int:
    try:
        store = _open_store(args.db)
    except ValueError as exc:
        return _usage_error(args, str(exc))
    try:
        return run_outputs(args, store, _console(args.color))
    finally:
        store.close()


def cmd_build_data(_args: argparse.Namespace) -> int:
    from helpers.paths import reference_db_path
    from helpers.tooling.dataset import build_reference_db
    from helpers.tooling.pages import build_pages, pages_dir

    counts = build_reference_db()
    rows = ", ".join(f"{table} {n}" for table, n in counts.items())
    print(f"built {reference_db_path()}: {rows} rows")
    print(f"built {pages_dir()}: {build_pages()} documentation pages")
    return EXIT_OK


def cmd_restore(args: argparse.Namespace) -> int:
    from helpers.course.student_notebooks import restore

    try:
        path, backup = restore(args.notebook)
    except FileNotFoundError as exc:
        return _usage_error(args, str(exc))
    print(f"restored {path}")
    if backup is not None:
        print(f"your copy is in {backup}")
    return EXIT_OK


def cmd_serve_offline(args: argparse.Namespace) -> int:
    from helpers.models.offline_server import OfflineServer

    with OfflineServer(port=args.port) as server:
        print(f"offline reference model at {server.base_url} (Ctrl-C to stop)", flush=True)
        server.serve_until_interrupted()
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``workbook`` console script; returns the exit code."""
    _Parser.json_errors = "--json" in (sys.argv[1:] if argv is None else list(argv))
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, or bad usage (already reported)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    handlers = {
        "ask": cmd_ask,
        "cases": cmd_cases,
        "compare": cmd_compare,
        "build-data": cmd_build_data,
        "restore": cmd_restore,
        "serve-offline": cmd_serve_offline,
        "outputs": cmd_outputs,
    }
    try:
        return handlers[args.command](args)
    except KeyboardInterrupt:
        print("workbook: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a verdict, never a traceback (unless asked for)
        if os.environ.get("WORKBOOK_DEBUG"):
            traceback.print_exc()
        message = f"internal error: {type(exc).__name__}: {exc}"
        if getattr(args, "json", False):
            _print_json({"status": "error", "error": message})
        else:
            print(
                f"workbook: {for_terminal(message)} (WORKBOOK_DEBUG=1 shows the traceback)",
                file=sys.stderr,
            )
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
