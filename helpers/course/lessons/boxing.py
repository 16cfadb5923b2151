"""Notebook 04's plumbing (opaque references): the box policy built from the attendee's four
functions, two threads with a transcript logged in each, the agent's per-call path run as a
model would call it, and the verdicts the notebook prints.

Every function here takes the attendee's own functions (or an agent whose policy holds them) as
arguments: what runs is her code, and the verdicts go through
:func:`helpers.course.choices.explain_choice`.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
from collections.abc import Callable, Iterable
from typing import Any

from helpers.cases.case_files import load_cases
from helpers.context.boxing import ReferenceRefused, make_reference
from helpers.context.policies import BoxPolicy, Prepared, Presented
from helpers.context.resolve_tools import internal_resource_grep
from helpers.course.choices import explain_choice
from helpers.loop.agent import Agent, run_turn
from helpers.loop.dispatch import dispatch
from helpers.loop.records import ToolCallRecord
from helpers.store.reading import StoredOutput
from helpers.store.tool_outputs import ToolOutputStore
from helpers.text.escaping import for_terminal
from helpers.tooling.effects import NO_TURN, TurnView
from helpers.tooling.registry import Tool, ToolContext, ToolRegistry

#: ``box_result(output, ref_id, tool_name, threshold, boxing) -> str``: notebook 04's TODO 1.
BoxResult = Callable[[str, str, str, int, str], str]
#: ``unbox(arguments, store, thread_id) -> arguments``: TODO 2 (raises ``ReferenceRefused``).
Unbox = Callable[[Any, ToolOutputStore, str], Any]
#: ``read_slice(value, start_index, length) -> str``: TODO 3.
ReadSlice = Callable[[str, int, int], str]
#: ``grep(value, pattern, window) -> str``: TODO 4.
Grep = Callable[[str, str, int], str]


class NotebookBoxPolicy(BoxPolicy):
    """The box strategy built from the notebook's ``box_result``, ``unbox``, ``read_slice`` and
    ``grep``: ``present`` boxes with ``box_result``, ``prepare_arguments`` unboxes with
    ``unbox``, and the model's slice and grep tools run ``read_slice`` and ``grep`` (the same
    names, descriptions and schemas as the library's; length, lines and read stay the
    library's). The design is *tool-context-relay*'s (``tcr``: five resolve tools).

    Args:
        box_result, unbox, read_slice, grep: the attendee's functions (TODOs 1 to 4).
        threshold: box results longer than this many characters (default: the design's, 256).
        boxing: ``opaque`` (``internal://<id>``) or ``json`` (an MCP resource link).

    Raises:
        ValueError: a negative threshold or an unknown boxing mode.
    """

    def __init__(
        self,
        box_result: BoxResult,
        unbox: Unbox,
        read_slice: ReadSlice,
        grep: Grep,
        threshold: int | None = None,
        boxing: str = "opaque",
    ) -> None:
        super().__init__(threshold, boxing)
        self.box_result, self.unbox = box_result, unbox
        self.read_slice, self.grep = read_slice, grep

    def present(
        self, ctx: ToolContext, tool: Tool, tool_call_id: str, output: str, row: StoredOutput | None
    ) -> Presented:
        """What the model sees of ``output``: the attendee's ``box_result`` of it, with the
        logged row's ``ref_id`` (``boxed`` when it boxed, else ``inline``); a resolve tool's
        answer inline, never boxed."""
        if tool.internal:  # a resolve tool's answer is never boxed
            return Presented(output, "inline")
        ref_id = self.logged(row).ref_id
        assert self.threshold is not None  # the tcr design counts characters
        shown = self.box_result(output, ref_id, tool.name, self.threshold, self.boxing)
        return Presented(shown, "boxed" if shown != output else "inline")

    def prepare_arguments(
        self, ctx: ToolContext, tool: Tool, arguments: Any, turn: TurnView = NO_TURN
    ) -> Prepared:
        """The arguments a real tool gets: the attendee's ``unbox`` of them in the call's
        thread (it raises :class:`ReferenceRefused`; it notes no guard); a resolve tool's as
        the library's policy prepares them (they take the reference itself)."""
        if tool.internal:  # resolve tools take the reference itself
            return super().prepare_arguments(ctx, tool, arguments, turn)
        return Prepared(self.unbox(arguments, ctx.store, ctx.thread_id))

    def internal_tools(self) -> list[Tool]:
        """The library's five resolve tools, with the attendee's ``read_slice`` and ``grep``
        behind ``internal_resource_read_slice`` and ``internal_resource_grep`` (each reading
        the value through her ``unbox``)."""
        unbox, read_slice, grep = self.unbox, self.read_slice, self.grep

        def value(ctx: ToolContext, opaque_reference: str) -> str:
            return unbox(opaque_reference, ctx.store, ctx.thread_id)  # it checks the thread

        def slice_tool(
            ctx: ToolContext, opaque_reference: str, start_index: int, length: int
        ) -> str:
            return read_slice(value(ctx, opaque_reference), start_index, length)

        def grep_tool(ctx: ToolContext, opaque_reference: str, pattern: str, window: int) -> str:
            return grep(value(ctx, opaque_reference), pattern, window)

        yours = {"internal_resource_read_slice": slice_tool, "internal_resource_grep": grep_tool}
        return [  # the same names, descriptions and schemas: only the code behind them is yours
            dataclasses.replace(t, fn=yours[t.name]) if t.name in yours else t
            for t in super().internal_tools()
        ]


@dataclasses.dataclass(frozen=True)
class TwoThreads:
    """Two threads of one store, with the same transcript logged in each: the notebook's turns
    and calls run in ``mine``; ``their_ref`` is the reference a model must never read from it.

    Attributes:
        store: the store both threads are in.
        registry: the real tools the calls may name.
        mine, theirs: the two thread ids (fresh on each run).
        ref, their_ref: ``internal://<id>`` of the transcript in ``mine`` and in ``theirs``.
    """

    store: ToolOutputStore
    registry: ToolRegistry
    mine: str
    theirs: str
    ref: str
    their_ref: str

    @property
    def ctx(self) -> ToolContext:
        """The tool context of a call in ``mine``."""
        return ToolContext(store=self.store, thread_id=self.mine)

    def log(self, thread_id: str, tool_name: str, output: str) -> str:
        """Log ``output`` as a call of ``tool_name`` in ``thread_id`` (a fresh call id each
        time: a rerun never collides) and return its reference ``internal://<id>``."""
        call_id = "call_" + secrets.token_hex(6)
        return make_reference(self.store.log_tool(thread_id, call_id, tool_name, {}, output).ref_id)

    def dispatch(self, tool_name: str, arguments: Any, policy: BoxPolicy) -> ToolCallRecord:
        """One call of ``tool_name`` in ``mine``, with ``arguments`` as a model would send them
        (dumped to JSON text), through the agent's per-call path
        (:func:`helpers.loop.dispatch.dispatch`) under ``policy``; print whether the tool ran,
        the guards that repaired or refused the call, and the head of its result (escaped).

        Returns:
            The call's record: ``ran``, ``result_kind``, ``guards``, ``result``.
        """
        call = dispatch(
            "call_" + secrets.token_hex(6),
            tool_name,
            json.dumps(arguments),
            self.registry.merged(policy.internal_tools()),
            policy,
            self.ctx,
        )
        head = call.result if len(call.result) <= 150 else call.result[:150] + " …"
        print(f"{tool_name}: {'ran' if call.ran else 'did not run'}; guards {call.guards}")
        print("  ->", for_terminal(head))
        return call

    def log_and_library_grep(self, value: str, pattern: str, window: int) -> str:
        """Log ``value`` in ``mine`` as a ``get_page`` result (a new row of the store, each
        call), then return the library's grep of it
        (:func:`helpers.context.resolve_tools.internal_resource_grep`), read back through its
        reference: the text the model's grep tool would get."""
        reference = self.log(self.mine, "get_page", value)
        return internal_resource_grep(self.ctx, reference, pattern, window)


def two_threads(store: ToolOutputStore, registry: ToolRegistry, transcript: str) -> TwoThreads:
    """Two fresh threads of ``store`` (random ids, a new pair on each call), each with
    ``transcript`` logged as a ``yt_transcribe`` result: one row written per thread.

    Returns:
        The :class:`TwoThreads`: ``mine`` and ``theirs``, with ``ref`` and ``their_ref``, the
        transcript's ``internal://<id>`` in each; ``registry`` for the calls run in ``mine``.
    """
    mine = "thread_nb04_" + secrets.token_hex(4)
    theirs = "thread_nb04_other_" + secrets.token_hex(4)
    empty = TwoThreads(store, registry, mine, theirs, "", "")
    ref = empty.log(mine, "yt_transcribe", transcript)
    return dataclasses.replace(
        empty, ref=ref, their_ref=empty.log(theirs, "yt_transcribe", transcript)
    )


def print_refusal(unbox: Unbox, arguments: Any, store: ToolOutputStore, thread_id: str) -> None:
    """Call the attendee's ``unbox(arguments, store, thread_id)`` and print its refusal (the
    :class:`ReferenceRefused` message), or what it returned when it did not refuse (shortened,
    escaped)."""
    try:
        returned = unbox(arguments, store, thread_id)
    except ReferenceRefused as exc:
        print("refused:", for_terminal(str(exc)))
        return
    print("not refused; it returned", for_terminal(repr(returned)[:200]))


def same_answers_as_library(agent: Agent, case_ids: Iterable[str] = ("case3", "web1")) -> None:
    """Run each of ``case_ids`` with ``agent`` (the notebook's box policy) and again with the
    library's :class:`BoxPolicy` (the same design and threshold), as a check; print the resolve
    calls the model made on the attendee's policy and its answer, and say whether the answers
    agree.

    Raises:
        TypeError: ``agent``'s policy is not a box policy.
        KeyError: a case id that is not shipped.
        AssertionError: under ``WORKBOOK_REFERENCE_CHOICES_ONLY=1``, when an answer differs
            (:func:`explain_choice`): with the offline model, a difference in her functions.
    """
    cases = {c.id: c for c in load_cases()}
    policy = agent.policy
    if not isinstance(policy, BoxPolicy):
        raise TypeError(f"the agent's policy is a {type(policy).__name__}, not a box policy")
    library_agent = dataclasses.replace(agent, policy=BoxPolicy(policy.threshold, policy.boxing))
    for case_id in case_ids:
        yours = run_turn(cases[case_id].prompt, agent)
        library = run_turn(cases[case_id].prompt, library_agent)
        resolve = ", ".join(c.name for c in yours.tool_calls if c.name.startswith("internal_"))
        print(f"--- {for_terminal(case_id)}: your resolve calls: {for_terminal(resolve or 'none')}")
        print(f"    answer: {for_terminal((yours.answer or yours.error or '')[:120])}")
        explain_choice(
            yours.ok and yours.answer == library.answer,
            expected="the same answer as with the library's policy: your four functions did "
            "what the library's do.",
            otherwise=f"with the library's policy the answer was "
            f"{(library.answer or library.error or '')[:100]!r}: a real model may answer "
            "differently on each run; with the offline model a difference means a difference "
            "in your functions.",
        )
