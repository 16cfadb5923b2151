"""Notebook 06's plumbing (tool-history compaction): the scripted session the notebook compacts,
run turn by turn in one thread and measured, and the checks and views of what compaction kept.

The notebook keeps in sight what the lesson is about (the attendee's ``categorize``,
``summarize_writes`` and ``fold_indices``, :class:`~helpers.context.compaction.CompactionRules`,
:func:`~helpers.context.compaction.compact`, :class:`~helpers.context.compaction.CompactionSettings`
and :class:`~helpers.context.context_editing.ClearToolUses`); the harness that runs a session
under them, and the verdicts on what the model chose, are here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from helpers.cases.case_files import load_cases
from helpers.context.compaction import Compaction, compact, is_summary, quoted
from helpers.context.context_editing import ClearToolUses, policy_with_clearing
from helpers.context.strategies import build_policy
from helpers.course.choices import explain_choice
from helpers.course.views import markdown_view, messages_html
from helpers.evaluation.pricing import SentRequest, load_prices, session_requests
from helpers.evaluation.report import session_costs_markdown
from helpers.loop.agent import Agent, CompactionSettings, RunConfig
from helpers.loop.records import TurnRecord, new_thread_id
from helpers.models.llm import ModelConfig
from helpers.models.offline import OfflineModel, offline_client
from helpers.store.tool_outputs import ToolOutputStore
from helpers.text.escaping import for_terminal
from helpers.tooling.tools import default_registry

#: The session's two requests that fail (a missing page, a bad SQL column), each with the plan
#: the offline model follows for it, so the summary has errors to keep.
FAILING_PLANS: dict[str, list[dict[str, Any]]] = {
    "Fetch the page https://example.org/missing and tell me its title.": [
        {"call": "get_page", "args": {"url": "https://example.org/missing"}},
        {"answer": "{result1}"},
    ],
    "Using run_sql, list the population of every country.": [
        {"call": "run_sql", "args": {"query": "SELECT name, population FROM countries"}},
        {"answer": "{result1}"},
    ],
}
#: The cases whose prompts come before the failing requests, and after them.
CASES_BEFORE = ("case1", "case2", "sql2", "web1")
CASES_AFTER = ("two1", "pipe1", "case3", "case4")
#: The tool whose calls write a file (the summary must name every one).
WRITE_TOOL = "google_drive_write_file"
#: The chars of each turn's message shown in the view of the last turn's context.
VIEW_MAX_CHARS = 700


@dataclass
class SessionRun:
    """What :meth:`CompactionSession.run` measured: the turns that fit the budget, their tool
    calls, the largest prompt of a model call (``peak``, in tokens), the thread's history after
    the last turn that fit (no system message), the compactions that ran (each a dict of figures),
    the file names written and the error messages of failed calls (model and tool text,
    untrusted), the last turn that fit, and every request of those turns as sent (for its
    price)."""

    turns: int = 0
    tool_calls: int = 0
    peak: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)
    compactions: list[dict[str, int]] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    last_turn: TurnRecord | None = None
    requests: list[SentRequest] = field(default_factory=list)

    def describe(self) -> str:
        """One line: ``"10 turns (24 tool calls), peak context 3,120 tokens"``, with the
        compactions when any ran."""
        line = (
            f"{self.turns} turns ({self.tool_calls} tool calls), peak context {self.peak:,} tokens"
        )
        return line + (f", {len(self.compactions)} compactions" if self.compactions else "")

    def summaries(self) -> list[str]:
        """The texts of the compaction summaries in the history, oldest first: the messages
        :func:`~helpers.context.compaction.is_summary` takes for one (a model's or a tool's text
        that merely starts like a summary is not)."""
        return [str(m["content"]) for m in self.history if is_summary(m)]


class CompactionSession:
    """Notebook 06's session: ten requests in one thread under the box strategy (eight cases
    and the two of :data:`FAILING_PLANS`), scripted on the offline model.

    The session runs on the offline model whatever the profile: the model named by ``config``
    when it is offline (an offline persona, ``OFFLINE_MODEL=offline-reference:<persona>``, makes
    its mistakes), else the reference model.

    Attributes: ``client`` (an ``openai.OpenAI`` on that offline model, which also carries out
    :data:`FAILING_PLANS`), ``model`` (the model name it asks), ``store`` (the session's own
    in-memory :class:`~helpers.store.tool_outputs.ToolOutputStore`), ``registry`` (the default tools)
    and ``prompts`` (the ten requests, in order).
    """

    def __init__(self, config: ModelConfig) -> None:
        model = OfflineModel()
        for prompt, plan in FAILING_PLANS.items():
            model.add_plan(prompt, plan)
        self.client = offline_client(model)
        self.model = config.model if config.offline else "offline-reference"
        self.store = ToolOutputStore()  # the session's own, in memory
        self.registry = default_registry()
        cases = {c.id: c for c in load_cases()}
        self.prompts: list[str] = (
            [cases[c].prompt for c in CASES_BEFORE]
            + list(FAILING_PLANS)
            + [cases[c].prompt for c in CASES_AFTER]
        )

    def run(
        self,
        prompts: Sequence[str],
        *,
        compaction: CompactionSettings | None = None,
        budget_tokens: int | None = None,
        clearing: ClearToolUses | None = None,
    ) -> SessionRun:
        """Run ``prompts`` as the turns of one new thread, each turn getting the history so far.

        Args:
            prompts: the requests, in order.
            compaction: compaction's settings (``None``: none), given to every turn's
                :class:`~helpers.loop.agent.RunConfig`.
            budget_tokens: the context budget per model call, in tokens: the session stops
                before the first turn one of whose model calls sent a prompt over it (that turn
                does not count). ``None``: no budget.
            clearing: clears old tool results from each request, as Anthropic's
                ``clear_tool_uses`` does (``None``: none).

        Returns:
            The figures of the turns that fit (:class:`SessionRun`).
        """
        sent: list[list[dict[str, Any]]] = []  # each request's messages, as sent
        policy = policy_with_clearing(build_policy("box"), clearing, sent=sent)
        agent = Agent(self.client, self.model, policy, self.registry, self.store)
        thread, run, records = new_thread_id(), SessionRun(), []
        for prompt in prompts:
            # a thread's next turn: the agent gets the history (run_turn starts from none)
            turn = agent.run(
                prompt,
                thread_id=thread,
                history=run.history,
                config=RunConfig(compaction=compaction),
            )
            peak = max([run.peak] + [c.prompt_tokens for c in turn.model_calls])
            if budget_tokens and peak > budget_tokens:
                break
            run.peak, run.turns = peak, run.turns + 1
            run.tool_calls += len(turn.tool_calls)
            run.history = turn.messages[1:]
            records.append(turn)
            run.compactions += turn.compactions
            run.written += [
                json.loads(c.arguments)["file_name"]
                for c in turn.tool_calls
                if c.name == WRITE_TOOL
            ]
            run.errors += [c.error for c in turn.tool_calls if c.error] + [
                json.loads(c.result)["error"]
                for c in turn.tool_calls
                if c.result.startswith('{"error"')
            ]
            run.last_turn = turn
        run.requests = session_requests(records, sent)  # the requests of the turns that fit
        return run


def confirm_compaction_against_library(
    history: list[dict[str, Any]], result: Compaction, *, keep_last: int
) -> None:
    """Confirm a compaction run with the attendee's rules (``result``, from ``history`` with
    ``keep_last`` calls kept whole): every file a folded call wrote is named (quoted) in its
    summary, and the library's own rules (``compact`` without ``rules``) fold the same calls of
    ``history`` into the same summary. Prints one line when both hold.

    Raises:
        AssertionError: a file is not named, or the library's rules fold differently.
    """
    for e in result.folded:  # every file written, whatever the model wrote, is named
        if e.name == WRITE_TOOL:
            name = e.arguments.get("file_name", "?")
            assert quoted(name) in result.summary, (
                f"the summary lost {for_terminal(repr(name))}"  # a model's file name
            )
    reference = compact(history, keep_last=keep_last, force=True)  # the library's rules
    assert result.folded_calls == reference.folded_calls and result.summary == reference.summary, (
        "with your rules, compaction should fold the same calls into the same summary as the library's"
    )
    print(
        "Every file written is named, and the library's rules fold the same "
        f"{reference.folded_calls} calls into the same summary."
    )


def explain_turns_that_fit(without: SessionRun, with_: SessionRun, requests: int) -> None:
    """Print how many times the turns of ``without`` fit with compaction (``with_``), then say
    (:func:`~helpers.course.choices.explain_choice`) whether the whole session of ``requests``
    requests fit, as it does with the reference model.

    Raises:
        AssertionError: it did not, while ``WORKBOOK_REFERENCE_CHOICES_ONLY=1``.
    """
    ratio = with_.turns / max(1, without.turns)
    print(f"→ {ratio:.1f}× the turns")
    explain_choice(
        with_.turns == requests,
        expected=f"with compaction the whole session of {requests} requests fit the "
        f"budget: {ratio:.1f}× the turns that fit without it.",
        otherwise=f"with compaction {with_.turns} of {requests} requests fit, "
        f"{ratio:.1f}× the turns without it: a model that keeps more in each turn (reading what it "
        "only routes, say) fills the budget sooner, compaction or not.",
    )


def confirm_summary_keeps_what_matters(run: SessionRun) -> None:
    """Say whether compaction ran in ``run`` (a model's choice:
    :func:`~helpers.course.choices.explain_choice`) and, when it did, check that every file the
    session wrote is still named (in the first summary, or in a call still kept whole) and print
    how many of its distinct errors are still quoted (each section of the summary keeps its
    newest lines, within the summary's bound).

    Raises:
        AssertionError: a file written is no longer named; or no compaction ran, while
            ``WORKBOOK_REFERENCE_CHOICES_ONLY=1``.
    """
    summaries = run.summaries()
    explain_choice(
        bool(summaries),
        expected=f"{len(run.compactions)} compactions ran; the summary they left is below.",
        otherwise=f"no compaction ran: the session stopped at request {run.turns + 1}, whose "
        f"own calls passed the budget (peak {run.peak:,} tokens) before any call was old enough "
        "to fold. Compaction folds earlier turns; it cannot shrink the current one.",
    )
    if not summaries:
        return
    marker = summaries[0]
    kept_calls = json.dumps([m.get("tool_calls") for m in run.history if m.get("tool_calls")])
    files = set(run.written)  # after every merged compaction, each file is still named
    lost = [name for name in files if quoted(name) not in marker and name not in kept_calls]
    assert not lost, f"files written but no longer named: {for_terminal(repr(lost))}"
    errors = set(run.errors)
    named = [e for e in errors if quoted(e, 40)[:-2] in marker or e[:40] in kept_calls]
    print(
        f"{len(files)} files written, every one still named; {len(named)} of {len(errors)} "
        "distinct errors still quoted (each section keeps its newest lines, within the "
        "summary's bound; its counts cover every call)"
    )


def last_context_view(run: SessionRun) -> Any:
    """The messages of ``run``'s last turn as the model saw them
    (:func:`~helpers.course.views.messages_html`, each shortened to :data:`VIEW_MAX_CHARS`), as
    an ``IPython.display.HTML`` object: the marked summary in place of the old tool calls. When
    no compaction ran (no summary to show) it prints so and returns ``None``."""
    from IPython.display import HTML

    if not run.summaries() or run.last_turn is None:
        print("No summary to show: no compaction ran in this session.")
        return None
    title = "The last turn's context: the marked summary replaced the old tool calls"
    return HTML(messages_html(run.last_turn, max_chars=VIEW_MAX_CHARS, title=title))


def session_costs_view(sessions: Mapping[str, SessionRun]) -> Any:
    """The table of :func:`~helpers.evaluation.report.session_costs_markdown` for ``sessions``
    (``{name: run}``, names as data), priced with the price table (``data/pricing.yaml``), as a
    Markdown view (:func:`~helpers.course.views.markdown_view`)."""
    table = {name: (run.turns, run.requests) for name, run in sessions.items()}
    return markdown_view(session_costs_markdown(table, load_prices()))
