"""What the ``workbook`` commands share beyond :mod:`~helpers.cli.exits` and
:mod:`~helpers.cli.output` (printing): option groups (each declared once), argument types,
the store and progress bars."""

from __future__ import annotations

import argparse
import contextlib
import gc
import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from helpers.base.limits import DEFAULT_THRESHOLD_TOKENS
from helpers.base.paths import CASES_DIR
from helpers.cases.case_files import Case, CaseError, load_cases
from helpers.cli.exits import usage_error
from helpers.context.modes import MODES
from helpers.context.preview import DEFAULT_PREVIEW_LIMIT_CHARS
from helpers.context.read_back import ResultKind
from helpers.context.strategies import (
    LESSON_ROLES,
    build_policy,
    strategies_in_role,
    strategy_in_role,
    strategy_names,
    unhonoured_options,
)
from helpers.models.personas import PERSONAS, get_persona
from helpers.models.providers import DEFAULT_MAX_RETRIES
from helpers.text.redaction import mask_url_password

# a turn's imports (the SDK, SQLAlchemy, rich's progress bar) wait for the function that needs
# them: ``workbook ask --help`` imports none of them
if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

    from helpers.context.policies import ResultPolicy
    from helpers.loop.agent import CompactionSettings
    from helpers.models.llm import ModelConfig
    from helpers.store.tool_outputs import ToolOutputStore

DEFAULT_CASES = str(CASES_DIR / "*.md")
#: The colour each kind of result is shown in.
KIND_STYLE: dict[ResultKind, str] = {
    "boxed": "magenta",
    "truncated": "yellow",
    "saved": "blue",
    "middle": "red",
    "error": "red",
    "inline": "green",
}


def whole_number(minimum: int) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


def port(text: str) -> int:
    value = whole_number(1)(text)
    if value > 65_535:
        raise argparse.ArgumentTypeError(f"a port is 1-65535, got {value}")
    return value


non_negative = whole_number(0)
positive = whole_number(1)


def add_context_controls(parser: argparse.ArgumentParser) -> None:
    """--mode, --compact and --compact-at, shared by ask and cases.

    ``--compact`` takes no value, so ``workbook ask --compact "PROMPT"`` is the prompt
    compacted, never the prompt read as a token count; ``--compact-at TOKENS`` sets the
    threshold and turns compaction on."""
    parser.add_argument(
        "--mode",
        choices=tuple(MODES),
        help="expose only this mode's tools (cases: a case whose task calls a tool the mode withholds is reported as not run)",
    )
    parser.add_argument(
        "--compact",
        action="store_true",
        help="compact earlier tool calls once the context passes "
        f"{DEFAULT_THRESHOLD_TOKENS:,} tokens (o200k_base)",
    )
    parser.add_argument(
        "--compact-at",
        type=positive,
        metavar="TOKENS",
        help="compact past this many context tokens instead (implies --compact)",
    )


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be above 0 seconds, got {text}")
    return value


def add_model_controls(parser: argparse.ArgumentParser, *, repeat: bool = False) -> None:
    """--timeout and --persona, shared by ask and cases."""
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
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


def persona_model(config: ModelConfig, persona: str | None) -> ModelConfig:
    """``config`` with the persona's model name; raises ConfigError for a real model."""
    from helpers.models.llm import ConfigError, ModelConfig

    if persona is None:
        return config
    if not config.offline:
        raise ConfigError(
            f"--persona is part of the offline reference model, but profile {config.profile!r} "
            "is a real model; use --profile offline"
        )
    return ModelConfig(config.profile, "offline", get_persona(persona).model_name)


def compaction(args: argparse.Namespace) -> CompactionSettings | None:
    """The turn's compaction (``--compact``, ``--compact-at``), or None when neither is given."""
    from helpers.loop.agent import CompactionSettings

    if args.compact_at is not None:
        return CompactionSettings(args.compact_at)
    return CompactionSettings() if args.compact else None


# -- options shared by several commands: each declared once, here -------------------------------

DB_HELP = "the store, any SQLAlchemy URL (default: $WORKBOOK_DB_URL, else sqlite:///var/tool_outputs.sqlite)"


def model_options(*, repeat: bool = False) -> argparse.ArgumentParser:
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


def store_options(db_help: str = DB_HELP) -> argparse.ArgumentParser:
    """--db: where tool outputs and threads are stored (``db_help``: its help line)."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--db", metavar="URL", help=db_help)
    return options


def size_options() -> argparse.ArgumentParser:
    """-t/--threshold and -l/--limit: when a result is boxed, how long a preview is."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "-t",
        "--threshold",
        type=non_negative,
        default=None,
        help="box: the longest result kept inline (default: the design's: 1,000 tokens for "
        "box, 256 characters for box-tcr)",
    )
    options.add_argument(
        "-l",
        "--limit",
        type=non_negative,
        default=None,
        help=f"truncate: preview length in characters (default {DEFAULT_PREVIEW_LIMIT_CHARS})",
    )
    return options


def limit_chars(args: argparse.Namespace) -> int:
    """The preview length a run uses, in characters: ``-l/--limit``, else the default."""
    return DEFAULT_PREVIEW_LIMIT_CHARS if args.limit is None else args.limit


def policy_from_args(args: argparse.Namespace) -> ResultPolicy:
    """The policy ``-s/--strategy`` names, with ``-t``, ``-l`` and ``--boxing`` as given.

    Raises:
        ValueError: an option the strategy does not honour (:func:`options_refused`), or one it
            cannot take (:func:`~helpers.context.strategies.build_policy`).
    """
    refused = options_refused(args, [args.strategy])
    if refused:
        raise ValueError(refused)
    return build_policy(
        args.strategy, limit_chars=limit_chars(args), threshold=args.threshold, boxing=args.boxing
    )


def options_refused(args: argparse.Namespace, strategies: Sequence[str]) -> str | None:
    """Why ``-t``, ``-l`` or ``--boxing``, as given, would do nothing for ``strategies``, or
    ``None``: an option no strategy of the run honours is refused, never ignored
    (:func:`~helpers.context.strategies.unhonoured_options`)."""
    given = [
        option
        for option in ("threshold", "limit", "boxing")
        if getattr(args, option, None) is not None
    ]
    return unhonoured_options(strategies, given)


#: What ``workbook cases --strategy all`` runs: the three strategies notebooks 01-04 build
#: (inline, truncate and box: the baseline, the rival and the subject).
THE_THREE = strategies_in_role(*LESSON_ROLES)


def strategy_options(*, with_all: bool = False) -> argparse.ArgumentParser:
    """-s/--strategy, --boxing and --few-shot; the strategies are those registered now
    (:mod:`helpers.context.strategies`)."""
    names = strategy_names()
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "-s",
        "--strategy",
        choices=(*names, "all") if with_all else names,
        default=strategy_in_role("subject"),
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


def retry_options() -> argparse.ArgumentParser:
    """--max-retries."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "--max-retries",
        type=non_negative,
        default=DEFAULT_MAX_RETRIES,
        help="the SDK's retries of a failed request (default %(default)s)",
    )
    return options


def short(text: str, width: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@contextlib.contextmanager
def long_lived_imports(args: argparse.Namespace) -> Iterator[None]:
    """Import, in the ``with`` block, what a command's run needs (the SDK, SQLAlchemy, the
    agent: over 100,000 objects that live as long as the process) with Python's cyclic garbage
    collector paused; then, in a process that runs this one command and exits
    (``args.one_command_process``: :func:`helpers.cli.console_main`), move every object of the
    process to the collector's permanent generation (``gc.freeze()``). Without it, one
    ``workbook ask`` turn spends a third of its CPU (0.35 s of 1.35 s) walking them: full
    collections while importing, and the interpreter's collections at exit, which take the
    modules' classes and functions apart cycle by cycle.

    What the run makes afterwards is collected as usual. A caller that goes on after the command
    (a test or a notebook calling :func:`helpers.cli.main`) freezes nothing: what is alive then,
    garbage cycles too, would never be collected. An import that raises leaves the collector as
    it was and freezes nothing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
        if getattr(args, "one_command_process", False) and gc.get_freeze_count() == 0:
            gc.freeze()
    finally:
        if enabled:
            gc.enable()


def open_store(url: str | None) -> ToolOutputStore:
    """The store at ``url``; raises ``ValueError`` with a one-line reason if it cannot be used."""
    from helpers.store.tool_outputs import ToolOutputStore

    try:
        store = ToolOutputStore(url)
        store.count()  # opens a connection: a bad file or server fails here, not mid-turn
        return store
    except Exception as exc:
        reason = mask_url_password(" ".join(str(exc).split("\n")[0].split()), url)[:300]
        shown = mask_url_password(url) if url else "the default store"
        raise ValueError(
            f"cannot use {shown!r} as the store ({type(exc).__name__}: {reason}); give --db a "
            "store of your own, e.g. sqlite:///var/my.sqlite (a new file is made a store)"
        ) from None


def progress_bar(out: Console, disable: bool) -> Progress:
    """A progress bar on ``out`` (drawn only on a terminal): description, bar, runs done of
    all, time elapsed and the time left (rich's estimate from the recent pace of runs, so it
    settles after the first few); it disappears when done."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=out,
        disable=disable,
        transient=True,
    )


def load_cases_or_fail(
    patterns: str | Sequence[str], args: argparse.Namespace
) -> list[Case] | None:
    """The cases of every file or glob in ``patterns`` (a shell's expansion of
    ``data/cases/*.md`` is a list of files; a quoted pattern is expanded here), in the order
    given, each file once; ``None``, said as a usage error (:func:`helpers.cli.exits.usage_error`:
    one line, or one JSON object under ``--json``), when a case file is bad or a pattern matches
    no file (each one named: an unmatched pattern is a typo, never silently skipped)."""
    cases: list[Case] = []
    seen: set[str] = set()
    for pattern in [patterns] if isinstance(patterns, str) else patterns:
        try:
            found = load_cases(pattern)
        except CaseError as exc:
            usage_error(args, str(exc))
            return None
        if not found:
            usage_error(args, f"no case files match {pattern!r} (a path is from this folder)")
            return None
        for case in found:
            if str(case.path) not in seen:
                seen.add(str(case.path))
                cases.append(case)
    return cases
