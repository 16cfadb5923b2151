"""Tools for the model only: they read the store, so it can look inside a long result when it must.

- ``fetch_tool_output(tool_call_id)``: the truncate strategy's way back to a full output (Part 11
  "Tool-Output Offload" of the Oracle AI Developer Hub agent workshop).
- ``internal_resource(opaque_reference, op, ...)``: the same five operations behind one schema
  (the workbook's box design: one tool costs a third of the tokens of five).
- ``internal_resource_*``: the box strategy's resolve tools, with the semantics of
  *tool-context-relay* by grzegorz-aniol: ``length``, ``read_slice`` (negative start counts from the end, Python-style),
  ``read_lines`` (zero-based start line, negative from the end), ``grep`` (a regex per line with
  ±window lines of context, overlapping ranges merged, lines numbered from 1 as in an editor),
  and ``read`` (the full value: a last resort). Grep uses RE2 (google-re2), a linear-time
  engine, so no pattern can make it backtrack for ever.

Their results are never boxed or truncated (a fetch that is cut again can never show more than
the cut). Bad arguments raise ``ValueError`` (or a guard refusal: ``ReferenceRefused``,
:class:`UnknownToolCallId`) with a message for the model; the agent turns that into an error tool
result. A resolve tool takes its reference in any form :func:`helpers.context.boxing.reference_id`
accepts (wrapped, or a resource-link object: the box strategy brings it to ``internal://<id>``).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal

import re2

from helpers.base.guards import GuardRefusal
from helpers.context.boxing import MalformedReference, reference_id, resolve_in_thread
from helpers.text.patterns import re2_options
from helpers.tooling.effects import CallEffects, Reported
from helpers.tooling.registry import Tool, ToolContext, tool_from_function

if TYPE_CHECKING:
    from helpers.store.reading import StoredOutput
    from helpers.store.tool_outputs import ToolOutputStore

#: The most characters one slice may ask for.
MAX_SLICE_CHARS = 100_000
#: The most characters ``read_lines`` and ``read`` return; past it they stop and say how to ask
#: for the rest.
MAX_READ_CHARS = 100_000
#: The longest grep pattern, in characters, and the largest compiled RE2 program (a measure of
#: how much work each character of the text costs): a pattern over either is refused.
MAX_GREP_PATTERN_CHARS = 1_000
MAX_GREP_PROGRAM_SIZE = 1_000
#: The most characters of grep output (lines past it are left out, and the output says so).
MAX_GREP_OUTPUT_CHARS = 50_000
#: The most lines of context around a grep match.
MAX_GREP_WINDOW = 50
#: A grep stops after this many lines of output, or this many seconds of its thread's CPU time
#: (checked at every block of lines and every line tested alone: the time the thread waits for a
#: core on a busy machine is not counted), and says so.
MAX_GREP_OUTPUT_LINES = 500
GREP_CPU_TIME_LIMIT_S = 10.0
#: Lines :func:`grep_text` tests at once, joined, before testing any of them alone.
GREP_BLOCK_LINES = 256

_RE2_OPTIONS = re2_options(8 << 20)  # errors are reported to the model, not logged to stderr


class UnknownToolCallId(GuardRefusal):
    """``fetch_tool_output`` named a ``tool_call_id`` this thread never had (an invented one)."""

    guard = "refused_unknown_tool_call_id"


def _store(ctx: ToolContext) -> ToolOutputStore:
    if ctx.store is None:
        raise ValueError("this agent has no tool-output store")
    return ctx.store


def fetch_tool_output(ctx: ToolContext, tool_call_id: str) -> Reported:
    """Retrieve the full, untruncated output of an earlier tool call in this conversation.

    Use it when a tool result was cut with
    '...[+N chars. full output: fetch_tool_output(tool_call_id=...)]' and you need the rest.

    Args:
        tool_call_id: the id named in the truncation marker, e.g. 'call_abc123'.

    Returns:
        JSON {"tool_name", "tool_args", "tool_output"}.
    """
    wanted = tool_call_id.strip().strip("`'\"").strip()
    row = _store(ctx).get(ctx.thread_id, wanted, with_content=True)
    if row is None:
        raise UnknownToolCallId(
            f"no tool call with id {tool_call_id!r} in this thread: use the tool_call_id named in "
            "a truncation marker you received, exactly as written there"
        )
    text = json.dumps(
        {"tool_name": row.tool_name, "tool_args": row.args, "tool_output": row.content},
        ensure_ascii=False,
    )
    return Reported(text, CallEffects(fetched=frozenset({wanted})))  # the loop records the fetch


def _row(ctx: ToolContext, opaque_reference: str) -> StoredOutput:
    ref_id = reference_id(opaque_reference)
    if ref_id is None:
        shown = opaque_reference if len(opaque_reference) <= 80 else opaque_reference[:77] + "..."
        raise MalformedReference(
            f"{shown!r} is not an opaque reference (expected internal://<id>, as a tool result "
            "gave it to you)"
        )
    return resolve_in_thread(_store(ctx), ctx.thread_id, ref_id)


def _value(ctx: ToolContext, opaque_reference: str) -> str:
    row = _row(ctx, opaque_reference)
    return _store(ctx).read_all(row.id)


def internal_resource_length(ctx: ToolContext, opaque_reference: str) -> str:
    """Return the length of the value behind an opaque reference, in characters.

    Args:
        opaque_reference: an opaque reference such as 'internal://<id>'.

    Returns:
        JSON {"length_chars": N}.
    """
    return json.dumps({"length_chars": _row(ctx, opaque_reference).n_chars})


def internal_resource_read_slice(
    ctx: ToolContext, opaque_reference: str, start_index: int, length: int
) -> str:
    """Return a substring of the value behind an opaque reference.

    Args:
        opaque_reference: an opaque reference such as 'internal://<id>'.
        start_index: zero-based index of the first character; negative counts from the end
            (Python-style), e.g. -200 for the last 200 characters.
        length: how many characters to return (0-100000).

    Returns:
        The characters [start_index, start_index + length), cut at the end of the value.
    """
    if not 0 <= length <= MAX_SLICE_CHARS:
        raise ValueError(f"length must be between 0 and {MAX_SLICE_CHARS} characters, got {length}")
    row = _row(ctx, opaque_reference)
    start = max(row.n_chars + start_index, 0) if start_index < 0 else start_index
    if start >= row.n_chars:
        return ""
    return _store(ctx).read_range(row.id, start, length)


def internal_resource_read_lines(
    ctx: ToolContext, opaque_reference: str, start_line: int, line_count: int
) -> str:
    """Return a range of lines of the value behind an opaque reference.

    Args:
        opaque_reference: an opaque reference such as 'internal://<id>'.
        start_line: zero-based index of the first line; negative counts from the end.
        line_count: how many lines to return (>= 0).

    Returns:
        The lines joined with newlines ("" past the end). At most 100000 characters: a longer
        range stops at a whole line (or cuts a single long line) and ends with a note saying
        which start_line to ask for next.
    """
    if line_count < 0:
        raise ValueError(f"line_count must be >= 0, got {line_count}")
    lines = _value(ctx, opaque_reference).splitlines()
    start = max(len(lines) + start_line, 0) if start_line < 0 else start_line
    chosen = lines[start : start + line_count]
    out: list[str] = []
    size = 0
    for offset, line in enumerate(chosen):
        if size + len(line) > MAX_READ_CHARS:
            if not out:  # one line longer than the cap: cut it
                out.append(line[:MAX_READ_CHARS])
                next_hint = "internal_resource_read_slice for the rest of this line"
            else:
                next_hint = f"start_line={start + offset}"
            out.append(
                f"[cut at {MAX_READ_CHARS} characters; {len(chosen) - offset} of the "
                f"{len(chosen)} lines asked for not shown: ask again with {next_hint}]"
            )
            break
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)


def compile_grep_pattern(pattern: str) -> Any:
    """``pattern`` compiled with RE2 under the grep bounds (length, program size, memory).

    Raises:
        ValueError: an empty, too long, invalid or too complex pattern (the message says which).
    """
    if not pattern:
        raise ValueError("pattern must be a non-empty regular expression")
    if len(pattern) > MAX_GREP_PATTERN_CHARS:
        raise ValueError(
            f"the pattern has {len(pattern):,} characters; at most {MAX_GREP_PATTERN_CHARS:,}"
        )
    try:
        regex = re2.compile(pattern, _RE2_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        shown = pattern if len(pattern) <= 80 else pattern[:77] + "..."
        raise ValueError(
            f"invalid regular expression {shown!r}: {reason} (RE2 syntax, which runs in "
            "linear time: no backreferences or lookaround)"
        ) from None
    if regex.programsize > MAX_GREP_PROGRAM_SIZE:
        raise ValueError(
            f"the pattern is too complex (RE2 program size {regex.programsize}, at most "
            f"{MAX_GREP_PROGRAM_SIZE}): use fewer or smaller counted repetitions like {{1,100}}"
        )
    return regex


class _GrepTimedOut(Exception):
    """A grep ran past :data:`GREP_CPU_TIME_LIMIT_S`; ``line`` (from 1) is where it stopped."""

    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


#: ``\A``, ``\z`` or a flag group that turns a flag off (``(?-m)``): a pattern holding one may
#: match a line alone and not the same line inside a block, so no block prefilter for it.
_NOT_BLOCKWISE_RE = re.compile(r"\\[Az]|\(\?[A-Za-z]*-")


def _block_pattern(pattern: str) -> Any | None:
    r"""A pattern that matches lines joined by ``"\n"`` whenever ``pattern`` matches one of them
    alone: ``pattern`` in multi-line mode, where ``^`` and ``$`` match at each line's ends (and
    a line end is a non-word character, as the end of a lone line is for ``\b``). ``None`` when
    that cannot be promised (:data:`_NOT_BLOCKWISE_RE`)."""
    if _NOT_BLOCKWISE_RE.search(pattern):
        return None
    try:
        return re2.compile("(?m)" + pattern, _RE2_OPTIONS)
    except re2.error:
        return None


def _matching_lines(lines: list[str], regex: Any, block: Any | None) -> Iterator[int]:
    """The indexes of ``lines`` that ``regex`` matches, in order. Lines are read
    :data:`GREP_BLOCK_LINES` at a time: a block ``block`` does not match holds no matching line
    and is skipped whole (one RE2 call instead of hundreds). Raises :class:`_GrepTimedOut` past
    :data:`GREP_CPU_TIME_LIMIT_S` of this thread's CPU time (checked at every block and every
    line tested alone)."""
    deadline = time.thread_time() + GREP_CPU_TIME_LIMIT_S
    for first in range(0, len(lines), GREP_BLOCK_LINES):
        chunk = lines[first : first + GREP_BLOCK_LINES]
        if time.thread_time() > deadline:
            raise _GrepTimedOut(first + 1)
        if block is not None and not block.search("\n".join(chunk)):
            continue
        for offset, line in enumerate(chunk):
            if time.thread_time() > deadline:
                raise _GrepTimedOut(first + offset + 1)
            if regex.search(line):
                yield first + offset


def grep_text(value: str, pattern: str, window: int) -> str:
    """What :func:`internal_resource_grep` answers for ``value``: its lines (``str.splitlines``:
    LF, CRLF and the other Unicode line ends) matched one by one against ``pattern``, each
    match shown with ``window`` lines before and after, ranges that overlap or touch merged, lines
    numbered from 1.

    Args:
        value: the text to search.
        pattern: a regular expression (RE2 syntax), see :func:`compile_grep_pattern`.
        window: lines of context each side of a match, 0-50.

    Returns:
        Blocks ``Lines A-B:`` then ``N: text`` lines, separated by a blank line, or
        ``No matches found.``; bounded as :func:`internal_resource_grep` says.

    Raises:
        ValueError: a window out of range, or a pattern :func:`compile_grep_pattern` refuses.
    """
    if not 0 <= window <= MAX_GREP_WINDOW:
        raise ValueError(f"window must be between 0 and {MAX_GREP_WINDOW} lines, got {window}")
    regex = compile_grep_pattern(pattern)
    lines = value.splitlines()
    merged: list[list[int]] = []
    shown = 0
    stopped = ""
    try:
        for index in _matching_lines(lines, regex, _block_pattern(pattern)):
            start, end = max(0, index - window), min(len(lines) - 1, index + window)
            if merged and start <= merged[-1][1] + 1:
                shown += end - merged[-1][1]
                merged[-1][1] = max(merged[-1][1], end)
            else:
                shown += end - start + 1
                merged.append([start, end])
            if shown >= MAX_GREP_OUTPUT_LINES:
                stopped = (
                    f"stopped after {MAX_GREP_OUTPUT_LINES} lines of output at line {index + 1} "
                    f"of {len(lines)}; narrow the pattern or lower the window"
                )
                break
    except _GrepTimedOut as late:
        stopped = (
            f"stopped after {GREP_CPU_TIME_LIMIT_S:g} s of CPU time at line {late.line} of "
            f"{len(lines)}"
        )
    if not merged:
        return f"No matches found.{f' [grep {stopped}]' if stopped else ''}"
    blocks: list[str] = []
    size = 0
    for start, end in merged:
        body = []
        for n in range(start, end + 1):
            text = f"{n + 1}: {lines[n]}"
            room = MAX_GREP_OUTPUT_CHARS - size
            if len(text) > room:
                body.append(text[: max(room, 0)])
                stopped = stopped or (
                    f"output cut at {MAX_GREP_OUTPUT_CHARS} characters at line {n + 1}; narrow "
                    "the pattern, lower the window, or read that line with "
                    "internal_resource_read_slice"
                )
                break
            body.append(text)
            size += len(text) + 1
        blocks.append(f"Lines {start + 1}-{end + 1}:\n" + "\n".join(body))
        if size >= MAX_GREP_OUTPUT_CHARS or (stopped and stopped.startswith("output cut")):
            break
    if stopped:
        blocks.append(f"[grep {stopped}]")
    return "\n\n".join(blocks)


def internal_resource_grep(
    ctx: ToolContext, opaque_reference: str, pattern: str, window: int
) -> str:
    """Search the value behind an opaque reference, line by line, with a regular expression.

    Args:
        opaque_reference: an opaque reference such as 'internal://<id>'.
        pattern: a regular expression (RE2 syntax: like Python's, without backreferences or
            lookaround) matched against each line.
        window: lines of context to show before and after each matching line (0-50).

    Returns:
        Blocks headed 'Lines A-B:' with each line numbered from 1 ('12: text'); overlapping
        blocks are merged. 'No matches found.' when nothing matches. Line N here is
        start_line N-1 for internal_resource_read_lines. Output stops after 500 lines, 50000
        characters or 10 s, with a note saying so.
    """
    return grep_text(_value(ctx, opaque_reference), pattern, window)


def internal_resource_read(ctx: ToolContext, opaque_reference: str) -> str:
    """Return the full value behind an opaque reference.

    A last resort: it brings the whole value into the conversation. Prefer passing the
    reference on unchanged, or length / read_slice / read_lines / grep for a detail.

    Args:
        opaque_reference: an opaque reference such as 'internal://<id>'.

    Returns:
        The full value, up to 100000 characters; a longer value is cut there, with a note saying
        how to read the rest (internal_resource_read_slice from that index).
    """
    row = _row(ctx, opaque_reference)
    if row.n_chars <= MAX_READ_CHARS:
        return _store(ctx).read_all(row.id)
    head = _store(ctx).read_range(row.id, 0, MAX_READ_CHARS)
    return (
        f"{head}\n[cut at {MAX_READ_CHARS} of {row.n_chars} characters: read the rest with "
        f"internal_resource_read_slice(start_index={MAX_READ_CHARS}, length=...), or pass the "
        "reference on unchanged if a tool needs the whole value]"
    )


ResolveOp = Literal["length", "slice", "lines", "grep", "read"]


# The docstring is the tool's whole description, sent with every call that offers the tool
# (every call after the first reference, whether the model looks inside or not): each operation
# is said once there, and the parameters carry no descriptions of their own.
def internal_resource(
    ctx: ToolContext,
    opaque_reference: str,
    op: ResolveOp,
    start: int = 0,
    count: int = 2000,
    pattern: str = "",
    window: int = 0,
) -> str:
    """Look inside a long result (internal://<id>) for a detail; to give a tool the value, pass the
    reference itself. op: length | slice (count chars from start, <0: from the end) | lines (the
    same in lines, 0-based) | grep (lines matching the RE2 pattern, window lines around) | read
    (all: a last resort).
    """
    if op == "length":
        return internal_resource_length(ctx, opaque_reference)
    if op == "slice":
        return internal_resource_read_slice(ctx, opaque_reference, start, count)
    if op == "lines":
        return internal_resource_read_lines(ctx, opaque_reference, start, count)
    if op == "grep":
        return internal_resource_grep(ctx, opaque_reference, pattern, window)
    if op == "read":
        return internal_resource_read(ctx, opaque_reference)
    raise ValueError(f"op must be one of length, slice, lines, grep, read; got {op!r}")


#: Each operation of ``internal_resource`` and the one of the five resolve tools that does it.
OP_TOOL_NAMES: dict[str, str] = {
    "length": "internal_resource_length",
    "slice": "internal_resource_read_slice",
    "lines": "internal_resource_read_lines",
    "grep": "internal_resource_grep",
    "read": "internal_resource_read",
}


def as_five_tool_name(name: str, arguments: str | None) -> str:
    """A resolve call's tool name in the five-tool form the cases are written with: a call to
    ``internal_resource`` with ``op="grep"`` is ``internal_resource_grep``; any other name (or a
    call whose arguments are not a JSON object with a known ``op``) is returned as it is.

    Args:
        name: the tool name the model called.
        arguments: the call's arguments, as the JSON text the model sent.
    """
    if name != "internal_resource":
        return name
    try:
        op = json.loads(arguments or "{}").get("op")
    except (ValueError, AttributeError):
        return name
    return OP_TOOL_NAMES.get(op, name)


RESOLVE_TOOL_FUNCTIONS = (
    internal_resource_length,
    internal_resource_read_slice,
    internal_resource_read_lines,
    internal_resource_grep,
    internal_resource_read,
)
#: Each resolve tool's compaction category: reading the whole value is a read, measuring or
#: searching it a query.
_RESOLVE_CATEGORY = {internal_resource_read: "read"}


def fetch_tools() -> list[Tool]:
    """The truncate strategy's internal tool: ``fetch_tool_output``."""
    return [tool_from_function(fetch_tool_output, internal=True, category="read")]


def resolve_tools(form: str = "five") -> list[Tool]:
    """The box strategy's internal tools: the five ``internal_resource_*`` resolve tools of
    *tool-context-relay* (``form="five"``), or the one :func:`internal_resource` tool that takes
    the operation as an argument (``form="one"``: one schema instead of five, about a third of the
    tokens, the same semantics).

    Raises:
        ValueError: an unknown form.
    """
    if form == "five":
        return [
            tool_from_function(fn, internal=True, category=_RESOLVE_CATEGORY.get(fn, "query"))
            for fn in RESOLVE_TOOL_FUNCTIONS
        ]
    if form == "one":
        # its operations are small questions about a stored value (a full read among them): a
        # query, as the five tools' slice, lines, grep and length are
        return [tool_from_function(internal_resource, internal=True, category="query")]
    raise ValueError(f"form must be 'five' or 'one', got {form!r}")
