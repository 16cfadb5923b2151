"""Notebook 03's plumbing (truncated previews and ``fetch_tool_output``): the policy built from
the attendee's two functions, the view of a turn's calls, and the measurements the notebook
prints (what ``deep_check`` received, the fetches per case, truncation against inline).

Every function here takes the attendee's own functions (or an agent whose policy holds them) as
arguments: what runs is her code, and the verdicts go through
:func:`helpers.course.choices.explain_choice`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from helpers.cases.case_files import load_cases
from helpers.context.policies import Presented, TruncatePolicy
from helpers.course.budget import approve_spend
from helpers.course.choices import deep_check_received, explain_choice
from helpers.loop.agent import Agent, run_turn
from helpers.loop.records import TurnRecord
from helpers.models.llm import ModelConfig
from helpers.store.reading import StoredOutput
from helpers.store.tool_outputs import ToolOutputStore
from helpers.text.escaping import for_terminal
from helpers.tooling.registry import Tool, ToolContext, tool_from_function

#: ``make_preview(output, tool_call_id, limit) -> str``, as notebook 03's TODO 1 writes it.
MakePreview = Callable[[str, str, int], str]
#: ``fetch_tool_output(store, thread_id, tool_call_id) -> str`` (JSON text), TODO 2's.
FetchToolOutput = Callable[[ToolOutputStore, str, str], str]
#: Fetches, prompt tokens and whether the turn answered, per case id (:func:`fetches_per_case`).
FetchRows = dict[str, tuple[int, int, bool]]
#: The case whose answer (the page's title) is in the preview: no fetch needed.
PREVIEW_CASE = "web3"
#: The case whose whole value must move on to another tool: fetched, then copied.
ROUTE_CASE = "case1"


class NotebookTruncatePolicy(TruncatePolicy):
    """The truncate strategy built from the notebook's ``make_preview`` and
    ``fetch_tool_output``: ``present`` shows the preview ``make_preview`` builds, and the model's
    ``fetch_tool_output`` tool runs the attendee's function.

    Args:
        make_preview: the attendee's preview (TODO 1).
        fetch_tool_output: the attendee's way back (TODO 2).
        limit: the preview's length in characters.
        truncate_fetch: the pitfall: cut the fetch's own result too (a policy must never do it).

    Raises:
        ValueError: ``limit`` is not a preview length the library takes.
    """

    def __init__(
        self,
        make_preview: MakePreview,
        fetch_tool_output: FetchToolOutput,
        limit: int = 600,
        *,
        truncate_fetch: bool = False,
    ) -> None:
        super().__init__(limit)
        self.make_preview = make_preview
        self.fetch_tool_output = fetch_tool_output
        self.truncate_fetch = truncate_fetch

    def internal_tools(self) -> list[Tool]:
        """The model's way back: one internal tool, ``fetch_tool_output(tool_call_id)``, that
        runs the attendee's ``fetch_tool_output`` on the call's thread (its JSON text)."""
        fetch = self.fetch_tool_output

        def fetch_tool_output_tool(ctx: ToolContext, tool_call_id: str) -> str:
            """Retrieve the full, untruncated output of an earlier tool call of this conversation.

            Args:
                tool_call_id: the id named in the truncation marker.
            """
            return fetch(ctx.store, ctx.thread_id, tool_call_id)

        return [tool_from_function(fetch_tool_output_tool, name="fetch_tool_output", internal=True)]

    def present(
        self, ctx: ToolContext, tool: Tool, tool_call_id: str, output: str, row: StoredOutput | None
    ) -> Presented:
        """What the model sees of ``output``: the attendee's ``make_preview`` of it
        (``truncated`` when it cut, else ``inline``); a fetch's result whole, unless
        ``truncate_fetch`` (the pitfall) cuts it too."""
        if tool.internal and not self.truncate_fetch:  # a fetch is never cut
            return super().present(ctx, tool, tool_call_id, output, row)
        content = self.make_preview(output, tool_call_id, self.limit)
        return Presented(content, "truncated" if content != output else "inline")


def print_calls(turn: TurnRecord, *, width: int = 100) -> None:
    """Print a turn: its prompt tokens and status, then each tool call (its arguments and the
    head of what the model saw of its result, with the result's kind), then the answer.

    Args:
        turn: the record :func:`helpers.loop.agent.run_turn` returned.
        width: the most characters shown of each call's arguments and of each result.

    Model text and tool output are escaped for the notebook (:func:`for_terminal`).
    """
    usage = turn.usage()
    print(
        f"{usage['prompt_tokens']:,} prompt tokens over {usage['calls']} model calls; "
        f"{len(turn.tool_calls)} tool calls; status {turn.status}"
    )
    for call in turn.tool_calls:
        arguments = call.arguments if len(call.arguments) <= width else call.arguments[:width] + "…"
        print(for_terminal(f"  {call.name}({arguments})"))
        print(f"    -> {call.result_kind}: {for_terminal(repr(call.result[:width]))}")
    print("answer:", for_terminal((turn.answer or turn.error or "")[:300]))


def count_fetches(turn: TurnRecord) -> int:
    """How many times the model called ``fetch_tool_output`` in ``turn``."""
    return sum(1 for call in turn.tool_calls if call.name == "fetch_tool_output")


def explain_transcript_routed(
    turn: TurnRecord, transcript: str, *, route: Literal["fetch", "reference"]
) -> None:
    """Say whether the whole ``transcript`` reached ``deep_check`` in ``turn``, read from the
    tool's own report (:func:`helpers.course.choices.deep_check_received`), and how it got there.

    Args:
        turn: the transcript turn (:data:`helpers.course.lessons.inline.TRANSCRIPT_TASK`).
        transcript: the whole transcript, as ``yt_transcribe`` returns it.
        route: the policy's way to move it: ``fetch`` (notebook 03: the model fetches the full
            output behind the preview, then passes it on; the verdict counts the fetches) or
            ``reference`` (notebook 04: the model passes the reference, the client unboxes it).

    Raises:
        AssertionError: under ``WORKBOOK_REFERENCE_CHOICES_ONLY=1``, when it did not
            (:func:`explain_choice`).
    """
    received = deep_check_received(turn)
    whole = f"{len(transcript):,}"
    if route == "fetch":
        fetched = count_fetches(turn)
        how = f"it fetched the full output (fetches: {fetched}) and "
        lost = (
            f"after {fetched} fetches: a model that passes the preview on, or stops at it, loses "
            "the rest; the marker is its way back."
        )
    else:
        how = "the model passed only the reference, and "
        lost = "read the calls above for what the model passed instead of the reference alone."
    explain_choice(
        len(transcript) in received,
        expected=f"{how}deep_check received all {whole} characters.",
        otherwise=f"deep_check received {received or 'nothing'} characters of {whole} (the "
        f"turn ended {turn.status!r}): {lost}",
    )


def explain_truncated_fetch(turn: TurnRecord, transcript: str) -> None:
    """The pitfall's verdict: in ``turn`` (run with ``truncate_fetch=True``) no call can have
    received the whole ``transcript``; say whether the model gave up or passed a preview on.

    Raises:
        AssertionError: ``deep_check`` received the whole transcript (a truncated fetch let it
            through: the policy did not cut the fetch), or, under
            ``WORKBOOK_REFERENCE_CHOICES_ONLY=1``, the model called ``deep_check`` at all.
    """
    received = deep_check_received(turn)
    # whatever the model tries, no call can see more than the preview: the whole never arrives
    assert len(transcript) not in received, (
        "a truncated fetch can never pass the whole transcript on"
    )
    explain_choice(
        not received,
        expected="it never called deep_check: every fetch ended in another marker.",
        otherwise=f"it called deep_check anyway, with {received} characters of "
        f"{len(transcript):,}: a preview passed on as the value, the other way this pitfall fails.",
    )


def fetches_per_case(agent: Agent, config: ModelConfig, *, approve: bool = False) -> FetchRows:
    """Run every shipped case with ``agent`` (the notebook's truncate policy) and print, per
    case, the ``fetch_tool_output`` calls and the prompt tokens.

    Args:
        agent: the agent whose policy holds the attendee's functions.
        config: the model in use: with a real model the cell first asks for a go-ahead
            (:func:`helpers.course.budget.approve_spend`).
        approve: the go-ahead for a real model's spend.

    Returns:
        ``{case id: (fetches, prompt tokens, whether the turn answered)}``.

    Raises:
        helpers.course.budget.SpendNotApproved: a real model and no go-ahead.
    """
    approve_spend(
        config,
        what=f"every case under your truncate policy, then {PREVIEW_CASE} and {ROUTE_CASE} inline",
        model_calls=56,
        prompt_tokens=352_000,
        completion_tokens=48_000,
        approve=approve,
    )
    rows: FetchRows = {}
    for case in load_cases():
        turn = run_turn(case.prompt, agent)
        rows[case.id] = (count_fetches(turn), turn.usage()["prompt_tokens"], turn.ok)
    print(f"{'case':6} {'fetches':>7} {'prompt tokens':>14}")
    for case_id, (fetched, tokens, ok) in rows.items():
        print(
            f"{for_terminal(case_id):6} {fetched:>7} {tokens:>14,}{'' if ok else '  (no answer)'}"
        )
    return rows


def compare_truncate_with_inline(rows: FetchRows, inline_agent: Agent) -> None:
    """Run :data:`PREVIEW_CASE` and :data:`ROUTE_CASE` again with ``inline_agent`` (an agent with
    the ``inline`` policy) and print, for each, what truncation cost against inline, from
    ``rows`` (:func:`fetches_per_case`); then say whether the model answered
    :data:`PREVIEW_CASE` from the preview, with no fetch.

    Raises:
        KeyError: one of the two cases is not in ``rows`` or not shipped.
        AssertionError: under ``WORKBOOK_REFERENCE_CHOICES_ONLY=1``, when the model fetched on
            :data:`PREVIEW_CASE` (:func:`explain_choice`).
    """
    cases = {c.id: c for c in load_cases()}
    for case_id in (PREVIEW_CASE, ROUTE_CASE):
        fetched, truncated, _ = rows[case_id]
        inline = run_turn(cases[case_id].prompt, inline_agent).usage()["prompt_tokens"]
        print(
            f"{for_terminal(case_id)}: {fetched} fetches; truncate {truncated:,} prompt tokens, "
            f"inline {inline:,}: truncation cost {truncated / inline:.2f}× inline "
            f"({'less' if truncated < inline else 'more'})"
        )
    fetched = rows[PREVIEW_CASE][0]
    explain_choice(
        fetched == 0,
        expected=f"{PREVIEW_CASE}'s answer, the page's title, is in the preview: no fetch.",
        otherwise=f"it fetched {PREVIEW_CASE}'s page {fetched} times though the title is in the "
        "preview: a model that does not trust a preview pays for the whole value anyway.",
    )
