"""Result policies: what the model sees of a tool result. One switch, three strategies.

- ``inline``: the full result goes into the ``tool`` message.
- ``truncate``: a result longer than ``limit`` characters becomes a preview ending in a
  truncation marker; ``fetch_tool_output`` brings the full output back (Part 11 "Tool-Output
  Offload" of the Oracle AI Developer Hub agent workshop). A tool argument that still holds a
  marker is refused: the model passed the preview on instead of the full output.
- ``box``: a result longer than ``threshold`` characters becomes an opaque reference (or an MCP
  resource link); references in tool arguments are unboxed before a real tool runs; resolve tools
  let the model look inside (*tool-context-relay* by grzegorz-aniol). The unboxing rules for
  references as models really write them are in :mod:`helpers.context.boxing`.

The agent asks a policy three things, in the order data flows (tool → policy → store →
messages): which extra tools the model gets (:meth:`ResultPolicy.internal_tools`), what a real
tool receives (:meth:`ResultPolicy.prepare_arguments`), and what the model sees of the logged
result (:meth:`ResultPolicy.present`). A policy writes no state of the turn: what it did (the
guards that repaired a call, the reference it showed) it returns, on :class:`Prepared` and
:class:`Presented` (:class:`~helpers.tooling.effects.CallEffects`), and the loop records it; what
it decides by (the references shown, the outputs fetched, the prompt) the loop passes in,
read-only (:class:`~helpers.tooling.effects.TurnView`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from helpers.base.guards import GuardRefusal
from helpers.base.paths import DATA_DIR
from helpers.context.boxing import (
    BOXING_MODES,
    SCHEME,
    IdFinder,
    ReferenceRefused,
    canonical_reference,
    canonicalize_references,
    find_references,
    make_reference,
    presented_reference_id,
    reference_id,
    refuse_embedded,
    render_reference,
    resolve_in_thread,
    unbox_arguments,
)
from helpers.context.instructions import (
    BOX_INSTRUCTIONS,
    BOX_SHORT_INSTRUCTIONS,
    INLINE_INSTRUCTIONS,
    MIDDLE_INSTRUCTIONS,
    TRUNCATE_INSTRUCTIONS,
    for_boxing,
)
from helpers.context.preview import (
    DEFAULT_PREVIEW_LIMIT_CHARS,
    PreviewPassedAsValue,
    make_preview,
    parse_preview,
    preview_limit_chars,
)
from helpers.context.read_back import ResultKind, Seen
from helpers.context.resolve_tools import fetch_tools, resolve_tools
from helpers.context.tool_search import matching_tools, tool_search_tool
from helpers.text.tokens import count_tokens
from helpers.tooling.effects import NO_EFFECTS, NO_TURN, CallEffects, TurnView
from helpers.tooling.registry import Tool, ToolContext, ToolRegistry

if TYPE_CHECKING:
    from helpers.store.reading import StoredOutput

#: The most references one tool call may unbox, and the most characters they may stand for in
#: all (box strategy): a call over either is refused before anything is read.
MAX_REFERENCES_PER_CALL = 16
MAX_UNBOXED_CHARS = 64_000_000
#: A string that starts with this many characters (or more) of a truncated output the model
#: never fetched is taken for a preview passed on as a value (truncate strategy).
PREVIEW_PREFIX_MIN_CHARS = 64
_FETCH_FIRST = (
    "Fetch the full output first with fetch_tool_output(tool_call_id='{call_id}') and pass that "
    "(or, after fetching, only the part you need)."
)
#: Default boxing threshold in characters (``MAX_RESULT_SIZE`` of *tool-context-relay* by grzegorz-aniol).
DEFAULT_BOX_THRESHOLD_CHARS = 256


@dataclass(frozen=True)
class BoxDesign:
    """How the box strategy boxes: one named, measurable configuration.

    Attributes:
        name: its name in reports (``box-<name>``; the workbook's own design is plain ``box``).
        threshold_chars: box a result longer than this many characters (``None``: use tokens).
        threshold_tokens: box a result longer than this many o200k_base tokens (when
            ``threshold_chars`` is ``None``): what a result costs the context, whatever its
            characters.
        resolve: ``"five"`` resolve tools (``internal_resource_length`` / ``_read_slice`` /
            ``_read_lines`` / ``_grep`` / ``_read``, as *tool-context-relay*) or ``"one"``
            (``internal_resource`` with an ``op`` argument: the same operations, one schema).
        instructions: ``"original"`` (*tool-context-relay*'s own system prompt, word for word:
            :data:`TCR_INSTRUCTIONS_FILE`), ``"full"`` (the workbook's rules and few-shot examples
            in the system message: a shorter paraphrase of the original) or ``"short"`` (one
            sentence; the rest travels with each boxed result and in the tool's description).
        offer_tools: ``"always"``, or ``"referenced"``: the resolve tools are offered only once a
            reference exists in the thread (a turn with no long result costs what inline costs).
        task_tools: ``"all"`` (every real tool in every call) or ``"searched"``: only the tools
            the prompt's words name, and ``tool_search`` to load the others
            (:mod:`helpers.context.tool_search`).
        preview_chars: with opaque boxing, the head of the value shown under the reference, its
            whole lines within this many characters (:func:`head_lines`; 0: the bare
            reference), so a detail at the top needs no resolve call.
        step: what this design changes from the one before it, for the report.
    """

    name: str
    threshold_chars: int | None = None
    threshold_tokens: int = 1_000
    resolve: Literal["five", "one"] = "one"
    instructions: Literal["original", "full", "short"] = "short"
    offer_tools: Literal["always", "referenced"] = "referenced"
    task_tools: Literal["all", "searched"] = "all"
    preview_chars: int = 0
    step: str = ""

    def rule(self) -> str:
        """When a result is boxed, in words: ``over 256 chars`` or ``over 1,000 tokens``."""
        if self.threshold_chars is not None:
            return f"over {self.threshold_chars:,} chars"
        return f"over {self.threshold_tokens:,} tokens"


#: The head of a boxed value the workbook's design shows under its reference, at most this many
#: characters of whole lines (:func:`head_lines`): a title, a header row or the opening of a JSON
#: document, for a few dozen tokens a call.
BOX_PREVIEW_CHARS = 120

#: *tool-context-relay*'s system prompt (grzegorz-aniol/tool-context-relay at commit
#: 7ddb5b03b1aff86fb4e66bf93adfe113e55f9733, Apache-2.0): its general rules
#: (``src/tool_context_relay/agent/agent.py``, ``general_instructions``), the opaque boxing
#: mode's rules and its few-shot examples (``src/tool_context_relay/agent/boxing_modes/opaque.py``,
#: ``SPEC``), joined by blank lines as its ``build_agent`` joins them with few-shot on.
TCR_INSTRUCTIONS_FILE = DATA_DIR / "anchors" / "tool_context_relay_opaque_instructions.txt"

_TCR_ORIGINAL = BoxDesign(
    "tcr-original",
    threshold_chars=DEFAULT_BOX_THRESHOLD_CHARS,
    resolve="five",
    instructions="original",
    offer_tools="always",
    step="tool-context-relay's settings and its own prompt: 256 chars, five resolve tools",
)
_TCR = replace(
    _TCR_ORIGINAL,
    name="tcr",
    instructions="full",
    step="the workbook's paraphrase of that prompt (its rules and examples, shorter)",
)
_ONE = replace(_TCR, name="one-tool", resolve="one", step="one resolve tool with an op argument")
_SHORT = replace(_ONE, name="short-prompt", instructions="short", step="a one-sentence prompt")
_LAZY = replace(
    _SHORT,
    name="lazy-tools",
    offer_tools="referenced",
    step="the resolve tool offered only once a reference exists",
)
_TOKENS = replace(
    _LAZY, name="token-threshold", threshold_chars=None, step="box only results over 1,000 tokens"
)
_PREVIEW = replace(
    _TOKENS,
    name="preview",
    preview_chars=BOX_PREVIEW_CHARS,
    step=f"the first whole lines (up to {BOX_PREVIEW_CHARS} chars) shown under the reference",
)
_WORKBOOK = replace(
    _PREVIEW,
    name="workbook",
    task_tools="searched",
    step="only the tools the prompt's words name offered; tool_search loads the others",
)
#: The box designs, in the order the workbook improved them, each one step from the one before:
#: from *tool-context-relay*'s settings and prompt (``tcr-original``), through its settings with
#: the workbook's paraphrase of the prompt (``tcr``, the comparison's ``box-tcr``), to the
#: workbook's (``workbook``).
BOX_DESIGNS: dict[str, BoxDesign] = {
    d.name: d for d in (_TCR_ORIGINAL, _TCR, _ONE, _SHORT, _LAZY, _TOKENS, _PREVIEW, _WORKBOOK)
}
#: The design ``workbook ask --strategy box`` and ``compare`` use unless told otherwise.
DEFAULT_BOX_DESIGN = "workbook"


#: Where *tool-context-relay*'s few-shot examples start in its prompt.
TCR_EXAMPLES_START = "\n\nExamples (follow exactly):"


@lru_cache(maxsize=2)
def tcr_instructions(*, few_shot: bool = True) -> str:
    """*tool-context-relay*'s own system prompt, as :data:`TCR_INSTRUCTIONS_FILE` holds it;
    without ``few_shot``, up to its examples (as its ``build_agent`` leaves them out). Raises
    ``OSError`` if the file is missing."""
    text = TCR_INSTRUCTIONS_FILE.read_text(encoding="utf-8")
    return text if few_shot else text.split(TCR_EXAMPLES_START, 1)[0]


def box_design(name: str) -> BoxDesign:
    """The design called ``name``; raises ``ValueError`` naming the known ones."""
    try:
        return BOX_DESIGNS[name]
    except KeyError:
        raise ValueError(
            f"box design must be one of {', '.join(BOX_DESIGNS)}, got {name!r}"
        ) from None


@dataclass(frozen=True)
class Presented:
    """What the model sees of one tool result, and how it was made from the full output;
    ``effects``: what presenting it did to the turn (a boxed result shows its reference id)."""

    content: str
    kind: ResultKind
    effects: CallEffects = NO_EFFECTS


@dataclass(frozen=True)
class Prepared:
    """The arguments a tool runs with (:meth:`ResultPolicy.prepare_arguments`), and what
    preparing them did: ``effects.guards``, the guards that repaired them on the way (a wrapped
    reference brought to ``internal://<id>``: ``reference_unwrapped``)."""

    arguments: Any
    effects: CallEffects = NO_EFFECTS


def guess_mime_type(output: str) -> str:
    """``text/html``, ``application/json`` or ``text/plain``, from the first characters."""
    head = output.lstrip()[:64].lower()
    if head.startswith(("<!doctype html", "<html")):
        return "text/html"
    if head[:1] in ("{", "["):
        try:
            json.loads(output)
            return "application/json"
        except ValueError:
            pass
    return "text/plain"


class TooMuchToUnbox(ReferenceRefused):
    """A call names more references, or more characters behind them, than one call may unbox."""

    guard = "refused_too_much_to_unbox"


class ResultPolicy:
    """Base policy: results inline, arguments untouched, no extra tools."""

    name: str = "inline"
    boxing: str = "opaque"
    needs_store: bool = False
    #: the agent's own limit on model calls in a turn, in words with its source, when it is not
    #: the workbook's cap: a run the cap stops is then reported as stopped by the cap, not as
    #: the agent failing (the anchors set it)
    own_step_limit: str = ""

    def internal_tools(self) -> list[Tool]:
        """Tools the model gets besides the real ones."""
        return []

    def tools_for(self, turn: TurnView) -> list[Tool]:
        """The internal tools to offer in the next model call of ``turn`` (by default, all of
        them)."""
        return self.internal_tools()

    def task_tools(self, registry: ToolRegistry, turn: TurnView) -> ToolRegistry:
        """The real tools to offer in the next model call of ``turn``, with any tool the policy
        adds to find the others (by default, every real tool)."""
        return registry

    def instructions(self, *, few_shot: bool = True) -> str:
        """The system message: what the model is told about tool results, declared by each
        policy (an :class:`~helpers.context.instructions.Instructions`' text), so a new strategy's
        policy brings its own. Here: every result in full."""
        return INLINE_INSTRUCTIONS.text(few_shot=few_shot)

    def messages_for_call(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The messages to send in the next model call (by default, all of them as they are;
        a policy may trim what it sends without changing the stored history)."""
        return messages

    def prepare_arguments(
        self, ctx: ToolContext, tool: Tool, arguments: Any, turn: TurnView = NO_TURN
    ) -> Prepared:
        """The arguments ``tool`` runs with, and the guards that repaired them, in ``turn`` (the
        default: a call outside any turn). Raises a
        :class:`~helpers.base.guards.GuardRefusal` (e.g. ``ReferenceRefused``) to stop the call."""
        return Prepared(arguments)

    def present(
        self, ctx: ToolContext, tool: Tool, tool_call_id: str, output: str, row: StoredOutput | None
    ) -> Presented:
        """What the model sees of ``output`` (``row`` is its store row, if it was logged)."""
        return Presented(output, "inline")

    def is_long(self, output: str) -> bool:
        """Whether ``output`` is long under this policy's rule (by default nothing is)."""
        return False

    def shown_whole(self, tool: Tool, output: str) -> bool:
        """Whether ``output`` reaches the model as it is: it is not long, or it is a model-only
        tool's (a fetch or a read cut again could never show more than the rule allows)."""
        return tool.internal or not self.is_long(output)

    def logged(self, row: StoredOutput | None) -> StoredOutput:
        """``row``, the long result's store row, which this policy reads back.

        Raises:
            RuntimeError: the result was not logged to the store.
        """
        if row is None:
            raise RuntimeError(
                f"the {self.name} strategy needs every long result logged to the store"
            )
        return row

    def describe(self) -> str:
        """A one-line description, e.g. ``box (opaque, threshold 256 chars)``."""
        return self.name

    @staticmethod
    def read_back(call_id: str, content: str) -> Seen | None:
        """What a model sees in a ``tool`` message this policy wrote, when it is this policy's
        presentation of a long result (:mod:`helpers.context.read_back`); ``None`` otherwise.
        The base policy presents every result as it is: nothing to read back."""
        return None

    def box_threshold_chars(self) -> int | None:
        """The longest result left inline, in characters, for a policy that boxes by a
        character rule; ``None`` otherwise. A turn's record reports it."""
        return None

    def box_rule(self) -> str | None:
        """The boxing rule in words (a box design's :meth:`BoxDesign.rule`), for a policy that
        boxes; ``None`` otherwise. A turn's record reports it."""
        return None


class InlinePolicy(ResultPolicy):
    """Every result goes into the context in full."""


class TruncatePolicy(ResultPolicy):
    """Long results become a preview of ``limit`` characters plus a truncation marker."""

    name = "truncate"
    needs_store = True

    def __init__(self, limit: int = DEFAULT_PREVIEW_LIMIT_CHARS):
        self.limit = preview_limit_chars(limit)

    def internal_tools(self) -> list[Tool]:
        return fetch_tools()

    def instructions(self, *, few_shot: bool = True) -> str:
        """A preview with its truncation marker, and ``fetch_tool_output`` for the rest."""
        return TRUNCATE_INSTRUCTIONS.text(few_shot=few_shot)

    @staticmethod
    def read_back(call_id: str, content: str) -> Seen | None:
        """A preview ending in its truncation marker (:func:`parse_preview`): the id to fetch
        and the text shown."""
        preview = parse_preview(content)
        if preview is None:
            return None
        return Seen(call_id, content, "truncated", uri=preview.tool_call_id, head=preview.text)

    def prepare_arguments(
        self, ctx: ToolContext, tool: Tool, arguments: Any, turn: TurnView = NO_TURN
    ) -> Prepared:
        """Refuse a real tool's call that passes a preview on as if it were the full output.

        Two signs, for any string at any depth of the arguments: it names the ``tool_call_id``
        of a truncated result of this thread (the marker, however the model rewrote it: other
        quotes, ``…`` for ``...``, a line break inside), or it starts with the first
        :data:`PREVIEW_PREFIX_MIN_CHARS` characters of a truncated output whose full text the
        model has not fetched in this turn (``turn.fetched``) and is not that whole output (the
        preview with its marker cut off, or a piece of it). Otherwise the arguments as they are.

        Raises:
            PreviewPassedAsValue: the message tells the model to fetch the full output first.
        """
        store = ctx.store
        if tool.internal or store is None:
            return Prepared(arguments)
        cut = [row for row in store.list_thread(ctx.thread_id) if row.n_chars > self.limit]
        if not cut:
            return Prepared(arguments)
        markers = IdFinder(row.tool_call_id for row in cut)
        for path, text in _strings(arguments):
            where = repr(path or "value")
            call_id = markers.find(text)
            if call_id is not None:
                raise PreviewPassedAsValue(
                    f"argument {where} holds a truncated preview (it names tool_call_id "
                    f"{call_id!r}, from the truncation marker), not the full output. "
                    f"{_FETCH_FIRST.format(call_id=call_id)}"
                )
            if len(text) < PREVIEW_PREFIX_MIN_CHARS:
                continue
            for row in cut:
                if row.tool_call_id in turn.fetched:
                    continue
                if not text.startswith(store.read_range(row.id, 0, PREVIEW_PREFIX_MIN_CHARS)):
                    continue
                if len(text) >= row.n_chars and store.read_all(row.id) == text[: row.n_chars]:
                    continue  # the whole output (fetched in an earlier turn): what it meant
                raise PreviewPassedAsValue(
                    f"argument {where} starts with the output of {row.tool_call_id!r}, but the "
                    f"model has seen only its preview, not all of its {row.n_chars} characters. "
                    f"{_FETCH_FIRST.format(call_id=row.tool_call_id)}"
                )
        return Prepared(arguments)

    def present(
        self, ctx: ToolContext, tool: Tool, tool_call_id: str, output: str, row: StoredOutput | None
    ) -> Presented:
        if self.shown_whole(tool, output):
            return Presented(output, "inline")
        self.logged(row)
        return Presented(make_preview(output, tool_call_id, self.limit), "truncated")

    def is_long(self, output: str) -> bool:
        """Whether ``output`` is longer than the preview, in characters."""
        return len(output) > self.limit

    def describe(self) -> str:
        return f"truncate (preview {self.limit} chars)"


class MiddleTruncatePolicy(ResultPolicy):
    """Reference point: keep the head and the tail, drop the middle, offer no way back.

    What coding agents commonly do with long logs: the first and last ``limit // 2`` characters
    with a ``…N chars truncated…`` marker between them. Cheap, but the dropped middle is gone:
    a tool that needs the whole value gets the cut one.
    """

    name = "middle"

    def __init__(self, limit: int = DEFAULT_PREVIEW_LIMIT_CHARS):
        self.limit = preview_limit_chars(limit)

    def instructions(self, *, few_shot: bool = True) -> str:
        """Head and tail, and the middle gone for good."""
        return MIDDLE_INSTRUCTIONS.text(few_shot=few_shot)

    def present(
        self, ctx: ToolContext, tool: Tool, tool_call_id: str, output: str, row: StoredOutput | None
    ) -> Presented:
        if len(output) <= self.limit:
            return Presented(output, "inline")
        head = self.limit // 2
        tail = self.limit - head
        dropped = len(output) - head - tail
        return Presented(
            f"{output[:head]}\n…{dropped} chars truncated…\n{output[len(output) - tail :]}",
            "middle",
        )

    def describe(self) -> str:
        return f"middle (head + tail {self.limit} chars)"


class BoxPolicy(ResultPolicy):
    """Long results become opaque references; references in arguments are unboxed."""

    name = "box"
    needs_store = True

    def __init__(
        self,
        threshold: int | None = None,
        boxing: str = "opaque",
        design: BoxDesign | str = "tcr",
    ):
        """Args:
            threshold: box results longer than this many characters (default: the design's
                rule); with a token-threshold design, this many tokens.
            boxing: ``opaque`` (``internal://<id>``) or ``json`` (an MCP resource link).
            design: a :class:`BoxDesign` or the name of one in :data:`BOX_DESIGNS`; the default,
                ``tcr``, is *tool-context-relay*'s (256 chars, five resolve tools), as notebook
                04 builds it.

        Raises:
            ValueError: a negative threshold, or an unknown boxing mode or design.
        """
        design = box_design(design) if isinstance(design, str) else design
        if threshold is not None:
            if threshold < 0:
                raise ValueError(f"threshold must be >= 0, got {threshold}")
            if design.threshold_chars is not None:
                design = replace(design, threshold_chars=threshold)
            else:
                design = replace(design, threshold_tokens=threshold)
        if boxing not in BOXING_MODES:
            raise ValueError(f"boxing must be one of {BOXING_MODES}, got {boxing!r}")
        self.design = design
        self.threshold = design.threshold_chars  # None when the design counts tokens
        self.boxing = boxing

    def internal_tools(self) -> list[Tool]:
        return resolve_tools(self.design.resolve)

    def box_threshold_chars(self) -> int | None:
        return self.threshold

    @staticmethod
    def read_back(call_id: str, content: str) -> Seen | None:
        """A reference as a box policy presents it: ``internal://<id>`` alone, or with a note
        and a preview under it (``head``), or an MCP resource link naming one."""
        stripped = content.strip()
        ref_id = presented_reference_id(content) if content.startswith(SCHEME) else None
        if ref_id is not None and "\n" in content:  # a reference, a note, a preview under it
            head = content.split("\n", 2)[2] if content.count("\n") >= 2 else ""
            return Seen(call_id, content, "boxed", make_reference(ref_id), head=head)
        if stripped.startswith(SCHEME) and len(stripped) < 100 and " " not in stripped:
            return Seen(call_id, content, "boxed", stripped)
        if not stripped.startswith("{"):
            return None
        try:
            data = json.loads(stripped)
        except ValueError:
            return None
        if isinstance(data, dict) and data.get("type") == "resource_link":
            uri = str(data.get("uri", ""))
            return Seen(call_id, content, "boxed", uri) if uri.startswith(SCHEME) else None
        return None

    def box_rule(self) -> str | None:
        return self.design.rule()

    def tools_for(self, turn: TurnView) -> list[Tool]:
        """The resolve tools, unless the design offers them only once the model was shown a
        reference in the thread (``turn.shown_references``) and it was shown none yet."""
        if self.design.offer_tools == "referenced" and not turn.shown_references:
            return []
        return self.internal_tools()

    def task_tools(self, registry: ToolRegistry, turn: TurnView) -> ToolRegistry:
        """Every real tool, or (a ``searched`` design) the ones the turn's prompt names and those
        ``tool_search`` loaded in it (``turn.loaded_tools``), and ``tool_search`` while any is
        left out."""
        if self.design.task_tools == "all":
            return registry
        wanted = set(matching_tools(turn.prompt, registry)) | turn.loaded_tools
        left_out = [t for t in registry if t.name not in wanted]
        offered = registry.only(wanted)
        return offered.merged([tool_search_tool(left_out)]) if left_out else offered

    def instructions(self, *, few_shot: bool = True) -> str:
        if self.design.instructions == "short":
            return for_boxing(BOX_SHORT_INSTRUCTIONS, self.boxing).text(few_shot=False)
        if self.design.instructions == "original":
            return tcr_instructions(few_shot=few_shot)
        return for_boxing(BOX_INSTRUCTIONS, self.boxing).text(few_shot=few_shot)

    def is_long(self, output: str) -> bool:
        """Whether ``output`` is boxed under this design's rule (characters or tokens)."""
        design = self.design
        if design.threshold_chars is not None:
            return len(output) > design.threshold_chars
        if len(output) <= design.threshold_tokens:  # a token is at least one character
            return False
        if len(output) > 40 * design.threshold_tokens:  # no text averages 40 chars a token
            return True
        return count_tokens(output) > design.threshold_tokens

    def prepare_arguments(
        self, ctx: ToolContext, tool: Tool, arguments: Any, turn: TurnView = NO_TURN
    ) -> Prepared:
        """Unbox every whole reference (wrapped ones too) and refuse references inside text.

        A resolve tool takes the reference itself: its ``opaque_reference`` is only brought to
        the bare ``internal://<id>`` form (from a wrapped string or a resource-link object).

        The turn checked the arguments' shape before this (each reference standing for a
        string: :func:`helpers.loop.dispatch.dispatch`); here, before anything is read, the
        number of references and the size of what they stand for are capped
        (:data:`MAX_REFERENCES_PER_CALL`, :data:`MAX_UNBOXED_CHARS`); the turn checks the
        arguments it gets back in full before the tool runs.

        Returns:
            The arguments, with ``reference_unwrapped`` among its guards once for each
            reference that came wrapped.

        Raises:
            ReferenceRefused: a malformed, unknown, foreign or embedded reference, or too much
                to unbox (:class:`TooMuchToUnbox`); its ``repaired``: the guards that fired
                before it.
        """
        repaired: list[str] = []
        try:
            unboxed = self._unboxed(ctx, tool, arguments, repaired)
        except GuardRefusal as exc:
            exc.repaired = (*repaired, *exc.repaired)
            raise
        return Prepared(unboxed, CallEffects(guards=tuple(repaired)))

    def _unboxed(self, ctx: ToolContext, tool: Tool, arguments: Any, repaired: list[str]) -> Any:
        """:meth:`prepare_arguments`' arguments, each guard that repairs them added to
        ``repaired`` (this call's own list) as it fires."""
        store = ctx.store
        if store is None:
            raise RuntimeError("the box strategy needs a store")
        if tool.internal:
            if not isinstance(arguments, dict) or "opaque_reference" not in arguments:
                return arguments
            given = arguments["opaque_reference"]
            bare = canonical_reference(given)
            if bare != given:
                repaired.append("reference_unwrapped")
            ref_id = reference_id(bare)
            if ref_id is not None:  # refuse an unknown or foreign reference before the tool runs
                resolve_in_thread(store, ctx.thread_id, ref_id)
            return {**arguments, "opaque_reference": bare}

        arguments = canonicalize_references(arguments, on_guard=repaired.append)
        wanted = find_references(arguments)
        if len(wanted) > MAX_REFERENCES_PER_CALL:
            raise TooMuchToUnbox(
                f"{len(wanted)} references in one call; at most {MAX_REFERENCES_PER_CALL}"
            )
        known = IdFinder(store.ref_ids(ctx.thread_id))
        for ref_id in wanted:  # internal://<id>-1 and the like: an id of ours with more glued on
            if ref_id not in known.ids:
                refuse_embedded(make_reference(ref_id), "a reference", known)
        rows = {ref_id: resolve_in_thread(store, ctx.thread_id, ref_id) for ref_id in wanted}
        total = sum(rows[ref_id].n_chars for ref_id in wanted)
        if total > MAX_UNBOXED_CHARS:
            raise TooMuchToUnbox(
                f"the references in this call stand for {total:,} characters; at most "
                f"{MAX_UNBOXED_CHARS:,} may be unboxed into one call"
            )
        return unbox_arguments(
            arguments,
            lambda ref_id: store.read_all(rows[ref_id].id),
            known=known,
        )

    def present(
        self, ctx: ToolContext, tool: Tool, tool_call_id: str, output: str, row: StoredOutput | None
    ) -> Presented:
        if self.shown_whole(tool, output):
            return Presented(output, "inline")
        row = self.logged(row)
        preview = head_lines(output, self.design.preview_chars) if self.boxing == "opaque" else ""
        content = render_reference(
            row.ref_id,
            boxing=self.boxing,
            name=f"{tool.name} result",
            mime_type=guess_mime_type(output),
            size_bytes=len(output.encode("utf-8", "surrogatepass")),
            size_chars=len(output),
            preview=preview,
        )
        return Presented(content, "boxed", CallEffects(shown_references=frozenset({row.ref_id})))

    def describe(self) -> str:
        design = "" if self.design.name == DEFAULT_BOX_DESIGN else f", design {self.design.name}"
        return f"box ({self.boxing}, {self.design.rule()}{design})"


def head_lines(output: str, limit: int) -> str:
    """The head of ``output`` shown under a reference: its whole lines within ``limit``
    characters, each with its line end (a line cut in the middle is a fragment a model can
    neither read nor pass on); the first ``limit`` characters when the first line is longer."""
    if len(output) <= limit or limit <= 0:
        return output[: max(limit, 0)]
    head = output[:limit]
    end = head.rfind("\n")
    return head[: end + 1] if end > 0 else head


def _strings(value: Any, path: str = "") -> list[tuple[str, str]]:
    """Every string in a JSON value, with its path (``files[0].content``)."""
    if isinstance(value, str):
        return [(path, value)]
    if isinstance(value, dict):
        return [
            found
            for key, item in value.items()
            for found in _strings(item, f"{path}.{key}" if path else str(key))
        ]
    if isinstance(value, list):
        return [found for i, item in enumerate(value) for found in _strings(item, f"{path}[{i}]")]
    return []
