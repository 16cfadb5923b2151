"""Notebook 07's plumbing: the modes at a glance, a forged write put to the attendee's guard, a
registry and an agent that run a real turn through her two mode functions (beside the library's
mode, under the same policy), and the dual stream's results, scripted turn and checks.

The lesson's own code stays in the notebook: ``schemas_for_mode``, ``guarded_call`` and
``summarize`` are the attendee's, and each helper here takes them as arguments, so every turn
and every check below runs her code, never the library's in its place.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from helpers.base.paths import outbox_dir
from helpers.context.dual_stream import MAX_SUMMARY_CHARS, DualStreamPolicy
from helpers.context.modes import MODES
from helpers.context.policies import Presented
from helpers.context.strategies import build_policy
from helpers.course.choices import explain_choice
from helpers.display.charts import themed_chart
from helpers.loop.agent import Agent
from helpers.models.llm import make_client
from helpers.models.offline import OfflineModel, offline_client
from helpers.text.escaping import for_terminal
from helpers.tooling.registry import Tool, ToolContext, ToolRegistry
from helpers.tooling.tools import default_registry, run_sql

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from helpers.display.theme import ChartTheme
    from helpers.loop.records import TurnRecord
    from helpers.models.llm import ModelConfig
    from helpers.store.reading import StoredOutput
    from helpers.store.tool_outputs import ToolOutputStore

#: The attendee's TODO 1: ``schemas_for_mode(registry, mode)``, the chat-completions schemas
#: (each as :meth:`~helpers.tooling.registry.Tool.schema` gives it) of the tools ``mode`` allows.
SchemasForMode = Callable[[ToolRegistry, str], list[dict[str, Any]]]
#: The attendee's TODO 2: ``guarded_call(registry, mode, name, arguments)``, the tool's result
#: text or a JSON error; ``arguments`` maps each parameter's name to its (JSON) value.
GuardedCall = Callable[[ToolRegistry, str, str, dict[str, Any]], str]
#: The attendee's TODO 3: ``summarize(result, max_chars) -> str``.
Summarize = Callable[[str, int], str]

#: The write tool a mode without writes must neither offer nor run.
WRITE_TOOL = "google_drive_write_file"
#: The file a forged call (an injected instruction) asks the write tool for, in the outbox.
FORGED_FILE_NAME = "forged-by-a-prompt-injection.txt"
#: The policy both mode turns run under: tool-context-relay's box, which offers the registry's
#: own schemas (the ones a mode lets through); the workbook's ``box`` chooses the tools a task
#: names by itself (tool search), which adds a ``tool_search`` call the mode never decided.
MODE_POLICY = "box-tcr"
#: The query of the dual stream's SQL result: Norway's ISO 3166-2 subdivisions.
NORWAY_QUERY = (
    "SELECT code, name, type FROM subdivisions WHERE country_alpha_2 = 'NO' ORDER BY code"
)
#: How every PNG begins in base64 (its signature's first bytes): image bytes in a text.
PNG_BASE64 = "iVBOR"
#: The chart's title and text alternative.
CHART_TITLE = "ISO 3166-2 subdivisions of France, by type"


def modes_overview() -> dict[str, str | list[str]]:
    """Each mode of :data:`~helpers.context.modes.MODES` and what it allows: its whitelist's
    tool names, sorted, or ``"every tool"`` where the whitelist is ``None``."""
    return {mode: "every tool" if tools is None else sorted(tools) for mode, tools in MODES.items()}


def refuse_forged_write(guarded_call: GuardedCall, registry: ToolRegistry) -> None:
    """Put to the attendee's ``guarded_call`` the call an injected instruction would forge: the
    write tool (:data:`WRITE_TOOL`) in ``explore`` mode, writing :data:`FORGED_FILE_NAME` into
    the outbox. Prints the call and its result (escaped: it may quote the arguments).

    Raises:
        AssertionError: the file was written: the guard let the tool run.
    """
    forged_file = outbox_dir() / FORGED_FILE_NAME
    forged_file.unlink(missing_ok=True)
    arguments = {"file_name": forged_file.name, "file_content": "pwned"}
    refused = guarded_call(registry, "explore", WRITE_TOOL, arguments)
    print(for_terminal(f"guarded_call(registry, 'explore', {WRITE_TOOL!r}, {arguments}) →"))
    print(for_terminal(str(refused)))
    assert not forged_file.exists(), "the refused tool ran: the file was written"


class NotebookModeRegistry(ToolRegistry):
    """``full`` in ``mode``, through the attendee's functions: the model is offered
    ``schemas_for_mode(full, mode)``, and every call of a real tool goes through
    ``guarded_call(full, mode, name, arguments)`` (the policy's model-only tools run as they are).

    Args:
        full: every registered tool.
        mode: the mode's name (a key of :data:`~helpers.context.modes.MODES`).
        schemas_for_mode: the attendee's TODO 1.
        guarded_call: the attendee's TODO 2.
    """

    def __init__(
        self,
        full: ToolRegistry,
        mode: str,
        schemas_for_mode: SchemasForMode,
        guarded_call: GuardedCall,
    ) -> None:
        super().__init__(full)
        self.full, self.mode = full, mode
        self.schemas_for_mode, self.guarded_call = schemas_for_mode, guarded_call

    def schemas(self) -> list[dict[str, Any]]:
        """The schemas the attendee's ``schemas_for_mode`` offers in this mode."""
        return self.schemas_for_mode(self.full, self.mode)

    def get(self, name: str) -> Tool:
        """The tool ``name``, whose call goes through the attendee's ``guarded_call``.

        Raises:
            UnknownToolError: no tool of that name (the registry refuses it, as any registry).
        """
        tool = self.full.get(name)
        if tool.internal:
            return tool

        def through_guard(**arguments: Any) -> str:
            return self.guarded_call(self.full, self.mode, name, arguments)

        return dataclasses.replace(tool, fn=through_guard, takes_context=False)

    def merged(self, extra: Iterable[Tool]) -> NotebookModeRegistry:
        """The same mode, through the same functions, over ``full`` plus ``extra``."""
        return NotebookModeRegistry(
            self.full.merged(extra), self.mode, self.schemas_for_mode, self.guarded_call
        )


def mode_agent(tools: ToolRegistry, config: ModelConfig, store: ToolOutputStore) -> Agent:
    """An agent of ``config``'s model over ``tools`` (a mode's registry), under
    :data:`MODE_POLICY` whatever the mode: two turns of the same prompt then differ by their
    mode alone, the attendee's against the library's."""
    return Agent(make_client(config), config.model, build_policy(MODE_POLICY), tools, store)


@contextlib.contextmanager
def nothing_written_to(file_name: str) -> Iterator[None]:
    """Around a turn: ``file_name`` is removed from the outbox before it, so a file there after
    it was written by it.

    Raises:
        AssertionError: the file is in the outbox after the block: a tool outside the mode
            wrote it.
    """
    written = outbox_dir() / file_name
    written.unlink(missing_ok=True)
    yield
    assert not written.exists(), "a tool outside the mode wrote a file"


def print_mode_turn(turn: TurnRecord) -> None:
    """Print each tool call of ``turn`` (name, result kind, the result's first 100 characters)
    and its answer, escaped (a model's text is untrusted)."""
    for call in turn.tool_calls:
        print(for_terminal(f"{call.name:24} {call.result_kind:6} {call.result[:100]}"))
    print("answer:", for_terminal(str(turn.answer)))


def confirm_write_tool_not_offered(turn: TurnRecord) -> None:
    """Check that no model call of ``turn`` was offered :data:`WRITE_TOOL` (the schemas of each
    call, :attr:`~helpers.loop.records.TurnRecord.schemas_per_call`), and print that it was not.

    Raises:
        AssertionError: a model call was offered it (the mode's schemas let it through).
    """
    per_call = [*turn.schemas_per_call, turn.tool_schemas]
    offered = {schema["function"]["name"] for schemas in per_call for schema in schemas}
    assert WRITE_TOOL not in offered, f"the mode offered the write tool {WRITE_TOOL}"
    print(f"the model was never offered {WRITE_TOOL}")


def explain_same_calls_as_library(yours: TurnRecord, library: TurnRecord) -> None:
    """Whether the attendee's mode and the library's led the model to the same tool calls, in
    order (the same prompt and the same policy on both sides), said with
    :func:`~helpers.course.choices.explain_choice`.

    Raises:
        AssertionError: the calls differ while ``WORKBOOK_REFERENCE_CHOICES_ONLY=1``.
    """
    mine, theirs = [c.name for c in yours.tool_calls], [c.name for c in library.tool_calls]
    explain_choice(
        mine == theirs,
        expected=f"your mode and the library's led to the same calls: {mine}.",
        otherwise=f"your mode led to {mine}, the library's to {theirs}: a real model may choose "
        "differently on each run; with the offline model a difference is in your two functions.",
    )


@functools.cache
def _chart_result() -> str:
    """What a chart tool returns: MCP content, a text part and the chart of France's
    subdivisions by type as two PNG image parts (light and dark theme), as JSON text."""
    rows = json.loads(
        run_sql(
            "SELECT type, count(*) FROM subdivisions WHERE country_alpha_2 = 'FR' GROUP BY type"
        )
    )["rows"]

    def draw(fig: Figure, theme: ChartTheme) -> None:  # once in each theme's colours
        fig.subplots().barh([r[0] for r in rows], [r[1] for r in rows])
        fig.suptitle(CHART_TITLE)

    chart = themed_chart(draw, size=(600, 300), alt=CHART_TITLE)
    content = [{"type": "text", "text": "Chart generated."}, *chart.as_mcp_content()]
    return json.dumps({"content": content})


def dual_stream_results() -> tuple[str, str]:
    """Two results to summarise: ``(image_result, sql_result)``, a chart tool's MCP content (a
    text part and two PNG image parts, base64) and ``run_sql``'s rows of Norway's subdivisions
    (:data:`NORWAY_QUERY`), both JSON text."""
    return _chart_result(), run_sql(NORWAY_QUERY)


class NotebookDualStream(DualStreamPolicy):
    """The library's dual stream with the attendee's summariser: every result is logged whole to
    the store; the model's ``tool`` message carries ``summarize(output, max_chars)``.

    Args:
        summarize: the attendee's TODO 3.
        max_chars: the summary's bound, in characters.
    """

    def __init__(self, summarize: Summarize, max_chars: int = MAX_SUMMARY_CHARS) -> None:
        super().__init__(max_chars)
        self.summarize = summarize

    def present(
        self, ctx: ToolContext, tool: Tool, tool_call_id: str, output: str, row: StoredOutput | None
    ) -> Presented:
        """What the model's ``tool`` message carries for ``output``: the attendee's
        ``summarize(output, max_chars)``, marked ``truncated`` when ``output`` is longer than
        ``max_chars`` characters, else ``inline`` (the whole result is in the store already)."""
        return Presented(
            self.summarize(output, self.max_chars),
            "truncated" if len(output) > self.max_chars else "inline",
        )


def dual_stream_agent(
    prompt: str, policy: DualStreamPolicy, config: ModelConfig, store: ToolOutputStore
) -> Agent:
    """An agent for the dual stream's turn: the workbook's tools plus ``plot_subdivisions`` (it
    returns the chart of :func:`dual_stream_results`), under ``policy``, driven by the offline
    model with a scripted plan for ``prompt``: :data:`NORWAY_QUERY` with ``run_sql``, then the
    chart, then an answer (a real model may not draw a chart at all; the plan shows both
    streams to everyone)."""

    def plot_subdivisions() -> str:
        """Draw a chart of France's ISO 3166-2 subdivisions by type."""
        return _chart_result()

    registry = default_registry()
    registry.register(plot_subdivisions)
    model = OfflineModel()
    model.add_plan(
        prompt,
        [
            {"call": "run_sql", "args": {"query": NORWAY_QUERY}},
            {"call": "plot_subdivisions", "args": {}},
            {"answer": "Both are on your screen: {result1} and {result2}"},
        ],
    )
    name = config.model if config.offline else "offline-reference"
    return Agent(offline_client(model), name, policy, registry, store)


def print_model_side(turn: TurnRecord) -> None:
    """What the model saw of each tool result in ``turn``: the first 90 characters of each
    ``tool`` message, escaped."""
    seen = [m["content"][:90] for m in turn.messages if m["role"] == "tool"]
    print("model saw:", for_terminal(str(seen)))


def confirm_both_streams(turn: TurnRecord, view: Any) -> None:
    """The dual stream held: no SQL row (``Oslo``) and no image byte (base64 PNG, ``iVBOR``)
    reached the model's ``tool`` messages, and the interface (``view``, from
    :func:`~helpers.course.views.full_result_widget`) has both. Prints both sizes, in characters.

    Raises:
        AssertionError: rows or image bytes reached the context, or the interface lost them.
    """
    tool_text = " ".join(m["content"] for m in turn.messages if m["role"] == "tool")
    full_text = " ".join(view.full_results.values())
    assert "Oslo" not in tool_text and PNG_BASE64 not in tool_text, (
        "rows or image bytes reached the context"
    )
    assert "Oslo" in full_text and PNG_BASE64 in full_text, (
        "the interface lost the rows or the image"
    )
    print(f"context: {len(tool_text):,} chars of tool results; interface: {len(full_text):,} chars")
