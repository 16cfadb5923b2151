"""Notebook 08's plumbing: the hosts a program's calls go to, what a run shows, and the run of
the ``box`` and ``code`` strategies on the shipped cases with its verdict.

The notebook keeps in view what the lesson is about: :func:`helpers.run_program`, the programs
themselves, the attendee's ``bridge`` (which :class:`BridgeHost` calls) and her
``error_report_program``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from helpers.cases.case_files import load_cases
from helpers.course.budget import approve_spend
from helpers.course.choices import explain_choice
from helpers.course.progress import progress
from helpers.course.views import markdown_view
from helpers.evaluation.compare import Comparison
from helpers.evaluation.metrics import ComparisonMetrics
from helpers.evaluation.report import strategies_side_by_side_markdown
from helpers.evaluation.runs import client_for_cases, run_cases
from helpers.models.llm import ModelConfig
from helpers.store.tool_outputs import ToolOutputStore
from helpers.text.escaping import for_terminal
from helpers.tooling.program_sandbox import ProgramLimits, ProgramResult, run_program
from helpers.tooling.registry import ToolRegistry

#: The two strategies the notebook sets side by side.
BOX_AND_CODE = ("box", "code")
#: What :func:`run_box_and_code` costs on a paid model, for
#: :func:`helpers.course.budget.approve_spend`: measured with the offline model on the same tasks
#: (every case under ``box`` and under ``code``, the model calls and the o200k_base tokens of all
#: the turns), on the shipped cases (13) and on :data:`helpers.cases.case_files.ALL_CASES` (19, the large
#: ones too), rounded up.
SHIPPED_CASES_SPEND = {"model_calls": 69, "prompt_tokens": 64_000, "completion_tokens": 4_100}
ALL_CASES_SPEND = {"model_calls": 100, "prompt_tokens": 94_000, "completion_tokens": 5_700}


class EchoHost:
    """A host with one tool, ``echo``, that returns its arguments: ``echo got {...}``."""

    def tool_names(self) -> list[str]:
        """The tools a program may call: ``["echo"]``."""
        return ["echo"]

    def __call__(self, name: str, arguments_json: str) -> tuple[bool, str]:
        """``(True, "echo got " + the arguments' JSON)``, whatever the name."""
        return True, f"echo got {arguments_json}"


#: The notebook's TODO 1: ``bridge(tools, name, arguments_json, max_output_chars)``, what a
#: program's call gets back: ``(True, the tool's output)`` or ``(False, why not)``.
Bridge = Callable[[ToolRegistry, str, str, int], tuple[bool, str]]


@dataclass
class BridgeHost:
    """A host that sends every call of a program through ``bridge`` (the attendee's), to the
    tools of ``tools``, and records the names called in ``calls``.

    Args:
        bridge: the bridge (notebook 08's TODO 1).
        tools: the registry whose tools a program may call.
        max_output_chars: the longest output that goes into the program, in characters.
    """

    bridge: Bridge
    tools: ToolRegistry
    max_output_chars: int = 20_000
    calls: list[str] = field(default_factory=list)

    def tool_names(self) -> list[str]:
        """The names of the registry's tools."""
        return self.tools.names()

    def __call__(self, name: str, arguments_json: str) -> tuple[bool, str]:
        """What ``bridge`` gives for this call."""
        self.calls.append(name)
        return self.bridge(self.tools, name, arguments_json, self.max_output_chars)


def show_run(result: ProgramResult, host: BridgeHost | None = None) -> None:
    """Print how a program ended: what it returned (what the model reads), with the tool calls
    it made (their names, when ``host`` recorded them) and its seconds; or the error that stopped
    it. A program's text is untrusted: shown escaped."""
    if not result.ok:
        print(f"stopped: {for_terminal(result.error or '')}")
        return
    count = f"{result.tool_calls} tool call{'s' * (result.tool_calls != 1)}"
    calls = f"{count}: {', '.join(host.calls)}" if host is not None else count
    said = (
        f"the program returned {len(result.text):,} characters, what the model reads ({calls}; "
        f"{result.seconds:.2f} s):\n{result.text}"
    )
    print(for_terminal(said))


#: The CPU-time limit :func:`show_stopped` runs each program within, in seconds.
STOPPED_CPU_TIME_LIMIT_S = 1.0


def show_stopped(attempts: Sequence[str]) -> None:
    """Run each program of ``attempts`` with an :class:`EchoHost`, within a CPU-time limit of
    :data:`STOPPED_CPU_TIME_LIMIT_S` seconds, and print, beside each, why the sandbox stopped it
    (or what it returned, when it was not stopped), escaped."""
    limits = ProgramLimits(cpu_time_limit_s=STOPPED_CPU_TIME_LIMIT_S)
    for attempt in attempts:
        result = run_program(attempt, EchoHost(), limits)
        said = result.error if not result.ok else f"returned {result.text}"
        print(f"{attempt!r:28} → {for_terminal(said or '')}")


def run_box_and_code(
    config: ModelConfig, pattern: str | Path | None = None, *, approve: bool = False
) -> ComparisonMetrics:
    """Run every case of ``pattern`` (:func:`helpers.cases.case_files.load_cases`'s glob: the shipped cases
    by default; :data:`helpers.cases.case_files.ALL_CASES` adds the large ones) under ``box`` and under
    ``code`` with the model of ``config``, showing a progress bar, then the table of the two
    side by side, case by case (prompt tokens, model and tool calls, verdicts). The whole
    outputs go to the workbook's store (a :class:`~helpers.store.tool_outputs.ToolOutputStore` on
    :func:`~helpers.store.database.default_db_url`).

    Args:
        config: the model in use: a paid one first asks for a go-ahead
            (:func:`helpers.course.budget.approve_spend`), with the estimate
            :data:`SHIPPED_CASES_SPEND` for the shipped cases, :data:`ALL_CASES_SPEND` for any
            other pattern (every case the workbook has).
        pattern: the cases' glob (``None``: the shipped cases).
        approve: the go-ahead for a paid model's spend.

    Returns:
        The comparison's metrics (``.totals[strategy]``: prompt tokens, cases passed).

    Raises:
        helpers.course.budget.SpendNotApproved: a paid model, and no go-ahead (``approve=True``
            or ``WORKBOOK_APPROVE_SPEND=1``).
    """
    from IPython.display import display

    cases = {case.id: case for case in load_cases(pattern)}
    spend = SHIPPED_CASES_SPEND if pattern is None else ALL_CASES_SPEND
    what = f"{len(cases)} cases × {len(BOX_AND_CODE)} strategies"
    approve_spend(config, what=what, approve=approve, **spend)
    runs = run_cases(
        cases.values(),
        BOX_AND_CODE,
        client=client_for_cases(config, cases.values()),
        model=config.model,
        store=ToolOutputStore(),
        on_done=progress(len(BOX_AND_CODE) * len(cases), "runs"),
    )
    metrics = Comparison(runs, config.model, threshold=None, limit=600).metrics()
    display(markdown_view(strategies_side_by_side_markdown(metrics, BOX_AND_CODE)))
    return metrics


def box_and_code_totals(metrics: ComparisonMetrics) -> None:
    """Print each strategy's prompt tokens over the cases it passed, then the verdict on the
    model's choice (:func:`helpers.course.choices.explain_choice`): it wrote a program for every
    case, and each passed."""
    box, code = metrics.totals["box"], metrics.totals["code"]
    print(
        f"box: {box.prompt_tokens:,} prompt tokens on {box.passed}/{box.cases} cases; "
        f"code: {code.prompt_tokens:,} on {code.passed}/{code.cases}"
    )
    explain_choice(
        code.passed == code.cases,
        expected="the model wrote a program for every case, and each passed its checks.",
        otherwise="the model called the tools another way, or a program failed: the table's "
        "failures say what it did on each.",
    )
