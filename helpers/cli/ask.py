"""``workbook ask``: one agent turn on a prompt, shown as it goes, then the answer."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from helpers.base.limits import DEFAULT_MAX_ITERATIONS
from helpers.cli.common import (
    KIND_STYLE,
    add_context_controls,
    add_model_controls,
    compaction,
    long_lived_imports,
    model_options,
    open_store,
    persona_model,
    policy_from_args,
    positive,
    retry_options,
    short,
    size_options,
    store_options,
    strategy_options,
)
from helpers.cli.exits import (
    EXIT_BROKEN_PIPE,
    EXIT_CODES,
    EXIT_FAILED,
    print_json,
    usage_error,
)
from helpers.cli.output import console, output_options, quiet_stdout
from helpers.context.modes import for_mode
from helpers.loop.records import CompactionEvent, ModelCallRecord, ToolCallRecord, TurnEvent
from helpers.models.settings import load_env
from helpers.text.escaping import for_json, for_rich
from helpers.text.unicode import has_unpaired_surrogate

# what a turn needs (the SDK, SQLAlchemy, the tools) is imported when one runs: ``ask --help``
# imports none of it
if TYPE_CHECKING:
    from rich.console import Console

    from helpers.mcp.client import McpServers
    from helpers.mcp.settings import McpServerSpec
    from helpers.models.offline import OfflineModel, Suggestion
    from helpers.store.tool_outputs import ToolOutputStore
    from helpers.tooling.registry import ToolRegistry

#: How ``ask``'s status maps to its exit code, at the end of its help.
ASK_EXIT_CODES = """\
status -> exit code: ok 0; error 1; max_iterations 1; context_exceeded 1; usage_error 2;
incomplete 3 (cut, filtered, refused, empty, or only in the model's reasoning);
no_plan 4 (the offline model has no plan for the prompt: it knows only the case prompts,
and its answer names the nearest)"""


def add_command(sub: Any, name: str, help: str) -> None:
    """Add ``ask`` to the ``workbook`` subparsers, with :func:`run` as its handler."""
    ask = sub.add_parser(
        name,
        help=help,
        parents=[
            model_options(),
            strategy_options(),
            size_options(),
            store_options(),
            retry_options(),
            output_options(),
        ],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=ASK_EXIT_CODES,
    )
    ask.add_argument(
        "prompt",
        nargs="?",
        help="the user message; '-' or nothing reads it from standard input",
    )
    ask.add_argument(
        "--max-iterations",
        type=positive,
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
    ask.add_argument(
        "-c",
        "--continue",
        dest="continue_last",
        action="store_true",
        help="continue the thread written to last (in the store of --db)",
    )
    add_context_controls(ask)
    add_model_controls(ask)
    ask.add_argument(
        "--no-mcp",
        action="store_true",
        help="run without the MCP servers MCP_SERVERS names (docs/mcp.md)",
    )
    ask.add_argument("--print-tools", action="store_true", help="print the tool schemas first")
    ask.add_argument("--dump-context", action="store_true", help="print the final messages")

    ask.set_defaults(handler=run)


def print_tool_call(out: Console, call: ToolCallRecord) -> None:
    """A tool call and what the model saw of its result, on two lines; a call a program made
    (code mode), indented, with what the program got (none of it entered the context)."""
    style = KIND_STYLE.get(call.result_kind, "white")
    guards = f" [magenta]guard: {', '.join(call.guards)}[/]" if call.guards else ""
    arguments = for_rich(short(call.arguments, 200))
    if call.program_call_id is not None:
        out.print(f"  [cyan]⤷ in the program: {for_rich(call.name)}[/]({arguments})")
        if call.result_kind == "error":
            got = f"[red]an error:[/] {for_rich(short(call.result))}"
        else:
            got = f"{call.output_chars:,} chars, not in the context"
        out.print(f"    [dim]← to the program:[/] {got}{guards}")
        return
    served = f" [dim](MCP server {for_rich(call.server)})[/]" if call.server else ""
    out.print(f"[cyan]→ {for_rich(call.name)}[/]({arguments}){served}")
    size = f", full output {call.output_chars} chars" if call.output_chars is not None else ""
    out.print(f"  [{style}]← {call.result_kind}{size}:[/] {for_rich(short(call.result))}{guards}")


def read_prompt(args: argparse.Namespace, stdin: Any = None) -> str | None:
    """The prompt: the argument, or standard input when it is ``-`` or left out (and stdin is
    not a terminal), trailing newlines dropped. ``None`` when there is none to read."""
    if args.prompt not in (None, "-"):
        return str(args.prompt)
    stdin = stdin or sys.stdin
    if stdin is None or stdin.isatty():
        return None
    return stdin.read().rstrip("\n")


def _usage_problem(args: argparse.Namespace) -> str | None:
    """What makes ``args`` unusable before anything is opened, or ``None``."""
    if args.continue_last and (args.thread is not None or args.new_thread):
        return "-c/--continue continues the last thread: leave out --thread and --new-thread"
    if args.new_thread and args.thread is None:
        return "--new-thread starts the thread named by --thread ID"
    if not (args.prompt or "").strip():
        return "no prompt: give one, or pipe it in (echo '...' | workbook ask)"
    if has_unpaired_surrogate(args.prompt):
        return "the prompt is not valid UTF-8 text (the terminal passed bytes that do not decode)"
    return None


def show_event(out: Console, event: TurnEvent) -> None:
    """One line (two for a tool call) for each event of the turn, as it happens."""
    match event:
        case ModelCallRecord():
            counted = "" if event.usage_source == "response" else f" ({event.usage_source})"
            out.print(
                f"[dim]model call {event.index + 1}: {event.prompt_tokens} prompt tokens, "
                f"{event.completion_tokens} completion tokens{counted}[/]"
            )
        case CompactionEvent():
            out.print(
                f"[bold magenta]⟲ compacted {event.folded_calls} earlier tool "
                f"call{'' if event.folded_calls == 1 else 's'}: "
                f"{event.tokens_before:,} → {event.tokens_after:,} context tokens[/]"
            )
        case ToolCallRecord():
            print_tool_call(out, event)


class Progress:
    """What ``ask`` prints before and during the turn: the heading (:meth:`say`), the turn's
    events as they happen (:func:`show_event`, when it is called with one), and while the turn
    runs (a ``with`` block) a "waiting for the model…" spinner when ``waiting`` (a real model:
    the offline one answers at once). When the reader of stdout goes away (``workbook ask … |
    head``, ``| true``), stdout points at the null device and the turn goes on unseen: its
    thread is saved whole, and the command exits :data:`helpers.cli.exits.EXIT_BROKEN_PIPE`
    (141) when the turn is over, not 1 for a turn its own progress line broke, and not before
    the turn for a heading line."""

    def __init__(self, out: Console, *, waiting: bool) -> None:
        self.out = out
        self.reader_gone = False
        self.status = out.status("waiting for the model…") if waiting else None

    def __enter__(self) -> Progress:
        if self.status is not None:
            self.status.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.status is not None:
            self.status.stop()

    def __call__(self, event: TurnEvent) -> None:
        self.say(lambda: show_event(self.out, event))

    def say(self, write: Callable[[], object]) -> None:
        """Run ``write`` (it prints), unless the reader of stdout has gone away, as it may then."""
        if self.reader_gone:
            return
        try:
            write()
        except BrokenPipeError:
            self.reader_gone = True
            quiet_stdout()


def _store_and_thread(
    args: argparse.Namespace,
) -> tuple[ToolOutputStore, str, list[dict[str, Any]]] | int:
    """The store, the thread to run in (``--thread``, ``-c``: the last one, or a new one) and
    its history; or, for bad usage, the exit code (the store closed again)."""
    from helpers.loop.threads import ThreadError, open_thread
    from helpers.store.database import default_db_url, sqlite_file

    db_file = sqlite_file(args.db or default_db_url())
    if args.continue_last and db_file is not None and not db_file.exists():
        return usage_error(args, f"no thread to continue: {db_file} holds no store yet")
    try:
        store = open_store(args.db)
    except ValueError as exc:
        return usage_error(args, str(exc))
    if args.continue_last:
        args.thread = store.last_thread()
        if args.thread is None:
            store.close()
            return usage_error(args, f"no thread to continue in {store!r}: start one first")
    try:
        thread_id, history = open_thread(store, args.thread, new=args.new_thread)
    except ThreadError as exc:
        store.close()
        return usage_error(args, str(exc))
    return store, thread_id, history


def run(args: argparse.Namespace) -> int:
    """Run the turn; the exit code says how it ended (:data:`EXIT_CODES`)."""
    with long_lived_imports(args):
        from helpers.loop.agent import Agent, RunConfig
        from helpers.mcp.settings import McpConfigError, McpServerError, mcp_servers_from_env
        from helpers.models.llm import ConfigError, make_client, resolve_model
        from helpers.models.offline import OfflineModel
        from helpers.tooling.tools import default_registry

    try:
        config = persona_model(resolve_model(args.profile, args.model), args.persona)
        policy = policy_from_args(args)
        mcp_specs = [] if args.no_mcp else mcp_servers_from_env(load_env())
    except (ConfigError, ValueError) as exc:
        return usage_error(args, str(exc))
    args.prompt = read_prompt(args)
    problem = _usage_problem(args)
    if problem:
        return usage_error(args, problem)
    opened = _store_and_thread(args)
    if isinstance(opened, int):
        return opened
    store, thread_id, history = opened
    # the offline model answers only the case prompts: the same object answers and tells
    offline = OfflineModel() if config.offline else None
    client = make_client(
        config, max_retries=args.max_retries, timeout_s=args.timeout, offline_model=offline
    )
    with contextlib.ExitStack() as stack:  # the servers stop, then the store closes
        stack.callback(store.close)
        try:  # their tools join the registry; nothing of them runs without a call
            servers = start_servers(stack, mcp_specs)
        except (McpServerError, McpConfigError) as exc:
            return usage_error(args, str(exc))
        base = default_registry()
        registry = for_mode(servers.registry(base) if servers else base, args.mode)
        out = console(args.color)
        human = not args.json
        progress = Progress(out, waiting=human and not config.offline)
        if args.print_tools:
            progress.say(lambda: print_tools(out, args, policy, registry))
        if human:
            heading = [f"[bold]Model:[/] {for_rich(config.describe())}"]
            heading += [f"[bold]Strategy:[/] {for_rich(policy.describe())}"]
            if args.mode:
                heading += [f"[bold]Mode:[/] {args.mode} ({', '.join(registry.names())})"]
            if servers is not None:
                heading += server_lines(servers, base, registry)
            if history:
                heading += [
                    f"[bold]Thread:[/] {for_rich(thread_id)}, continued: {len(history)} "
                    "earlier messages"
                ]
            progress.say(lambda: out.print(*heading, sep="\n"))
        with progress:
            agent = Agent(client, config.model, policy, registry, store)
            record = agent.run(
                args.prompt,
                thread_id=thread_id,
                history=history,
                config=RunConfig(
                    max_iterations=args.max_iterations,
                    few_shot=args.few_shot,
                    temperature=config.temperature,
                    compaction=compaction(args),
                ),
                on_event=progress if human else None,
            )
        mcp = mcp_summary(servers, base) if servers is not None else None

    suggestions = no_plan_suggestions(offline, args.prompt) if record.ok else None
    code = report(args, out, record, suggestions, mcp=mcp)
    return EXIT_BROKEN_PIPE if progress.reader_gone else code


def start_servers(stack: contextlib.ExitStack, specs: list[McpServerSpec]) -> McpServers | None:
    """The MCP servers ``specs`` names, started, their stop on ``stack``; ``None`` for none (the
    SDK is imported only when there are some: ask --help and a plain turn stay quick).

    Raises:
        McpServerError: a server did not start.
        McpConfigError: two servers offer one tool name.
    """
    if not specs:
        return None
    from helpers.mcp.client import McpServers

    return stack.enter_context(McpServers(specs))


def print_tools(
    out: Console, args: argparse.Namespace, policy: Any, registry: ToolRegistry
) -> None:
    """``--print-tools``: the schemas the first model call offers (a policy may narrow them),
    on stdout, or on stderr under ``--json``."""
    from helpers.tooling.effects import TurnView

    first = TurnView(prompt=args.prompt)  # the turn as its first call sees it: nothing shown yet
    schemas = policy.task_tools(registry, first).merged(policy.tools_for(first)).schemas()
    if args.json:
        print(for_json(schemas), file=sys.stderr)
    else:
        out.print_json(json.dumps(schemas))


def server_lines(servers: McpServers, base: ToolRegistry, offered: ToolRegistry) -> list[str]:
    """A line (rich markup, escaped) per MCP server of the run (its tools, and those the mode
    leaves out of ``offered``), then its notes (a tool left out or renamed, one that stands in
    for a workbook tool of ``base``)."""
    lines = []
    for server in servers.servers:
        names = ", ".join(tool.name for tool in server.tools) or "none"
        withheld = [t.name for t in server.tools if t.name not in offered]
        held = f"; not in this mode: {', '.join(withheld)}" if withheld else ""
        lines += [f"[bold]MCP server:[/] {for_rich(server.spec.name)} ({for_rich(names + held)})"]
    for name, notes in servers.notes(base).items():
        lines += [
            f"[bold cyan]Note:[/] MCP server {for_rich(name)}: {for_rich(note)}" for note in notes
        ]
    return lines


def mcp_summary(servers: McpServers, base: ToolRegistry) -> list[dict[str, Any]]:
    """The MCP servers of the run for ``--json``: each one's name, the tools taken and the
    notes (empty when ``.env`` names none)."""
    notes = servers.notes(base)
    return [
        {
            "name": server.spec.name,
            "tools": [tool.name for tool in server.tools],
            "notes": notes[server.spec.name],
        }
        for server in servers.servers
    ]


def report(
    args: argparse.Namespace,
    out: Console,
    record: Any,
    suggestions: list[Suggestion] | None,
    *,
    mcp: list[dict[str, Any]] | None = None,
) -> int:
    """Print how the turn ended (with ``--json``, one JSON object: ``status`` ``no_plan`` and
    the ``suggestions`` when the offline model had no plan, see :func:`no_plan_suggestions`;
    ``mcp_servers`` when ``.env`` names MCP servers, see :func:`mcp_summary`); returns the exit
    code (:data:`EXIT_CODES`)."""
    verdict = record.status if suggestions is None else "no_plan"
    if args.json:
        data = record.to_json(include_context=args.dump_context)
        if mcp:
            data["mcp_servers"] = mcp
        if suggestions is not None:
            data["status"] = verdict
            data["suggestions"] = [s.to_json() for s in suggestions]
        print_json(data)
    else:
        print_outcome(out, record, suggestions, compacting=compaction(args) is not None)
        if args.dump_context:
            # rich writes the parsed JSON again: ASCII only, so escapes stay escapes
            out.print_json(for_json(record.messages), ensure_ascii=True)
    return EXIT_CODES.get(verdict, EXIT_FAILED)


def no_plan_suggestions(offline: OfflineModel | None, prompt: str) -> list[Suggestion] | None:
    """``None`` when ``offline`` (the offline model in use, ``None`` for a real model, which
    answers anything) has a plan for ``prompt``; else the nearest case prompts its answer named
    (:meth:`OfflineModel.nearest`, the model's own choice), possibly none."""
    if offline is None or offline.plan_for(prompt) is not None:
        return None
    return offline.nearest(prompt)


def print_outcome(
    out: Console,
    record: Any,
    no_plan: list[Suggestion] | None = None,
    *,
    compacting: bool = False,
) -> None:
    """The answer (or why there is none), then usage and how to continue the thread. After a
    request longer than the context window: with ``--compact``, which folds the earlier turns
    to fit (:meth:`helpers.loop.agent._Turn.compact_if_due`); when the turn was ``compacting``
    already, its own tool results overflowed, so with a strategy that keeps them out too. With
    ``no_plan`` (the suggestions of :func:`no_plan_suggestions`), a line says that the offline
    model carried nothing out. What the client learned about the endpoint (a completion limit
    it refused) is said first, once."""
    from rich.panel import Panel

    for notice in record.notices:
        out.print(f"[bold cyan]Note:[/] {for_rich(notice)}")
    if record.ok:
        out.print(Panel(for_rich(record.answer or ""), title="answer", expand=False))
        if no_plan is not None:
            nearest = f"its answer names the {len(no_plan)} nearest" if no_plan else "none is near"
            out.print(
                "[bold yellow]No plan:[/] the offline reference model carries out only the "
                f"workbook's case prompts ({nearest}); anything else needs a real model or a "
                "local server in .env (docs/models.md)."
            )
    elif record.status == "incomplete":
        out.print(f"[bold yellow]Incomplete:[/] {for_rich(record.error or '')}")
        if (record.answer or "").strip():
            out.print(Panel(for_rich(record.answer), title="what came back", expand=False))
        if record.reasoning:
            out.print(
                Panel(
                    for_rich(short(record.reasoning, 2000)),
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
    thread = for_rich(record.thread_id)
    if record.status == "context_exceeded" and compacting:  # this turn's own results overflow
        how = (
            f"--thread {thread} --compact -s box: this turn's own tool results are longer than "
            "the window, and box keeps them out of it"
        )
    elif record.status == "context_exceeded":  # as it is, every later request overflows too
        how = f"--thread {thread} --compact, which folds its tool calls to fit"
    else:
        how = f"--thread {thread}"
    out.print(f"[bold]Thread:[/] {thread} (continue it: {how})")
