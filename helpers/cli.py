"""The ``workbook`` command.

    workbook ask PROMPT [--strategy inline|truncate|box] [--boxing opaque|json] [--json] ...
    workbook build-data
    workbook serve-offline [--port N]

Exit codes: 0 success, 1 a failed run (no final answer, the model endpoint failed), 2 bad usage
(unknown option, bad value, unusable ``.env`` profile).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel

from helpers.agent import DEFAULT_MAX_ITERATIONS, ModelCallRecord, ToolCallRecord, run_turn
from helpers.llm import DEFAULT_MAX_RETRIES, ConfigError, make_client, resolve_model
from helpers.policies import DEFAULT_BOX_THRESHOLD_CHARS, STRATEGIES, make_policy
from helpers.preview import DEFAULT_PREVIEW_LIMIT_CHARS
from helpers.store import ToolOutputStore
from helpers.tools import default_registry

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
_KIND_STYLE = {"boxed": "magenta", "truncated": "yellow", "error": "red", "inline": "green"}


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also used to document the CLI in tests)."""
    parser = argparse.ArgumentParser(
        prog="workbook", description="Context Relay Workbook: run agent turns and build data."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    ask = sub.add_parser("ask", help="run one agent turn on a prompt")
    ask.add_argument("prompt", help="the user message")
    ask.add_argument("--strategy", choices=STRATEGIES, default="box", help="result policy")
    ask.add_argument("--boxing", choices=("opaque", "json"), default="opaque", help="box format")
    ask.add_argument("--profile", help="a .env profile (default: WORKBOOK_PROFILE)")
    ask.add_argument("--model", help="override the profile's model name")
    ask.add_argument(
        "--threshold",
        type=_non_negative,
        default=DEFAULT_BOX_THRESHOLD_CHARS,
        help="box: longest result kept inline, in characters (default %(default)s)",
    )
    ask.add_argument(
        "--limit",
        type=_non_negative,
        default=DEFAULT_PREVIEW_LIMIT_CHARS,
        help="truncate: preview length in characters (default %(default)s)",
    )
    ask.add_argument("--few-shot", action=argparse.BooleanOptionalAction, default=True)
    ask.add_argument("--max-iterations", type=int, default=DEFAULT_MAX_ITERATIONS)
    ask.add_argument("--max-retries", type=_non_negative, default=DEFAULT_MAX_RETRIES)
    ask.add_argument("--thread", help="continue this thread id (its references stay valid)")
    ask.add_argument("--db", help="store URL (default: WORKBOOK_DB_URL or var/tool_outputs.sqlite)")
    ask.add_argument("--print-tools", action="store_true", help="print the tool schemas first")
    ask.add_argument("--dump-context", action="store_true", help="print the final messages")
    ask.add_argument("--json", action="store_true", help="print one JSON object, nothing else")
    ask.add_argument("--color", choices=("auto", "always", "never"), default="auto")

    sub.add_parser("build-data", help="(re)build the reference database from pycountry")

    serve = sub.add_parser("serve-offline", help="serve the offline model over loopback HTTP")
    serve.add_argument("--port", type=int, default=8765)
    return parser


def _console(color: str, stream: Any = None) -> Console:
    force = {"always": True, "never": False}.get(color)
    return Console(
        file=stream or sys.stdout,
        force_terminal=force,
        no_color=color == "never",
        highlight=False,
    )


def _short(text: str, width: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def cmd_ask(args: argparse.Namespace) -> int:
    try:
        config = resolve_model(args.profile, args.model)
        policy = make_policy(
            args.strategy, limit=args.limit, threshold=args.threshold, boxing=args.boxing
        )
    except (ConfigError, ValueError) as exc:
        print(f"workbook: {exc}", file=sys.stderr)
        return EXIT_USAGE
    client = make_client(config, max_retries=args.max_retries)
    registry = default_registry()
    store = ToolOutputStore(args.db)
    out = _console(args.color)
    human = not args.json

    if args.print_tools:
        schemas = registry.merged(policy.internal_tools()).schemas()
        if human:
            out.print_json(json.dumps(schemas))
        else:
            print(json.dumps(schemas), file=sys.stderr)

    status = None
    if human:
        out.print(f"[bold]Model:[/] {escape(config.describe())}")
        out.print(f"[bold]Strategy:[/] {escape(policy.describe())}")
        if not config.offline:
            status = out.status("waiting for the model…")
            status.start()

    def on_event(name: str, data: Any) -> None:
        if not human:
            return
        if name == "model_call" and isinstance(data, ModelCallRecord):
            out.print(
                f"[dim]model call {data.index + 1}: {data.prompt_tokens} prompt tokens, "
                f"{data.completion_tokens} completion tokens[/]"
            )
        elif name == "tool_call" and isinstance(data, ToolCallRecord):
            style = _KIND_STYLE.get(data.result_kind, "white")
            out.print(f"[cyan]→ {escape(data.name)}[/]({escape(_short(data.arguments, 200))})")
            size = (
                f", full output {data.output_chars} chars" if data.output_chars is not None else ""
            )
            out.print(f"  [{style}]← {data.result_kind}{size}:[/] {escape(_short(data.result))}")

    try:
        record = run_turn(
            args.prompt,
            client=client,
            model=config.model,
            policy=policy,
            registry=registry,
            store=store,
            thread_id=args.thread,
            max_iterations=args.max_iterations,
            few_shot=args.few_shot,
            temperature=config.temperature,
            on_event=on_event,
        )
    finally:
        if status is not None:
            status.stop()
        store.close()

    if args.json:
        print(json.dumps(record.to_json(include_context=args.dump_context), ensure_ascii=False))
    else:
        if record.ok:
            out.print(Panel(escape(record.answer or ""), title="answer", expand=False))
        else:
            out.print(f"[bold red]No answer:[/] {escape(record.error or record.status)}")
        usage = record.usage()
        out.print(
            f"[bold]Usage:[/] {usage['prompt_tokens']} prompt tokens, "
            f"{usage['completion_tokens']} completion tokens, {usage['calls']} model calls, "
            f"{len(record.tool_calls)} tool calls; thread {record.thread_id}"
        )
        if args.dump_context:
            out.print_json(json.dumps(record.messages, ensure_ascii=False))
    return EXIT_OK if record.ok else EXIT_FAILED


def cmd_build_data(_args: argparse.Namespace) -> int:
    from helpers.dataset import build_reference_db
    from helpers.paths import reference_db_path

    counts = build_reference_db()
    rows = ", ".join(f"{table} {n}" for table, n in counts.items())
    print(f"built {reference_db_path()}: {rows} rows")
    return EXIT_OK


def cmd_serve_offline(args: argparse.Namespace) -> int:
    from helpers.offline import OfflineServer

    with OfflineServer(port=args.port) as server:
        print(f"offline reference model at {server.base_url} (Ctrl-C to stop)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server._thread.join()
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``workbook`` console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    handlers = {"ask": cmd_ask, "build-data": cmd_build_data, "serve-offline": cmd_serve_offline}
    return handlers[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
