"""The anchors: what production agents do with a long tool result, as policies with their
published parameters, so ``workbook compare`` can set the workbook's strategies beside them.

Each runs with the same offline model and the same plans; the plan interpreter
(:mod:`helpers.models.offline_plan`) looks inside each one's way (a saved file read by offset and
limit, a grep over it, or nothing at all). The parameters are the projects' own defaults, read
from their code at the commits named below; a project may change them in a later release.

- ``codex``: OpenAI **Codex CLI** (openai/codex, ``codex-rs``). Its tool-output budget depends on
  the model (``find_model_info_for_slug`` in ``core/src/models_manager/model_info.rs`` at
  0666e95234407666790e1d6202d552a124e3f1a3): ``TruncationPolicyConfig::bytes(10_000)`` by
  default, which gpt-4o and the gpt-5 family keep (openai/codex#7906), ``::tokens(10_000)`` for
  the Codex models. Every function-call output gets 20% more (``policy * 1.2`` in
  ``ContextManager::process_item``, ``core/src/context_manager/history.rs`` at
  023fad268e08c252b94e4a95cb3c7f2f08c2a972): 12,000 bytes for gpt-4o, the model the comparison
  stands for. A longer output keeps its first and last half-budget, on character boundaries,
  with ``…N chars truncated…`` between them (``…N tokens truncated…`` under a token budget,
  tokens estimated at 4 bytes each: ``truncate_with_byte_estimate`` in
  ``utils/string/src/truncate.rs`` at b24d7f3c9a1acadc145019747224f7312bc9b3b4). The
  ``Warning: truncated output`` header is added to shell (exec) output only
  (``formatted_truncate_text``, ``utils/output-truncation/src/lib.rs`` at
  820f85cf597b492adc6149759a22e71c72b01afa). Nothing keeps the middle for the model: its way
  back is to run a narrower command, which a non-shell tool cannot offer.
- ``deepagents``: LangChain **deepagents** (langchain-ai/deepagents, ``FilesystemMiddleware``,
  values as at 23b83ad50f63d241d0069a3dc426d43b211adf2e of 2026-08-21, the same since January
  2026). A result over ``tool_token_limit_before_evict = 20000`` tokens (4 characters a token,
  ``NUM_CHARS_PER_TOKEN``) is written to ``/large_tool_results/<tool_call_id>`` and replaced by
  ``TOO_LARGE_TOOL_MSG`` with the first and last 5 lines (each cut at 1,000 characters); the
  model reads it with ``read_file(file_path, offset, limit)`` (offset 0, limit 100 lines by
  default; lines over 5,000 characters continue on rows ``N.1``, ``N.2``; an answer of 80,000
  characters or more is cut there and ends with ``READ_FILE_TRUNCATION_MSG``) and can ``grep``
  it.
  Its own step limit is far above the workbook's (``recursion_limit`` 9,999 in ``graph.py``).
- ``claude-code``: Anthropic **Claude Code** (closed source; its public CHANGELOG). A tool result
  over 50,000 characters (v2.1.51; a Bash output has its own 30,000) is saved to a file and the
  model gets a ``<persisted-output>`` note with the path and a 2 KB preview (as Claude Code
  transcripts show it); it reads the file with ``Read(file_path, offset, limit)`` (2,000 lines
  by default, lines over 2,000 characters cut; a read over 25,000 tokens is refused with an
  error that asks for a smaller ``offset``/``limit``, anthropics/claude-code#4002) or searches
  it with ``Grep``.
- ``agents-sdk``: the **OpenAI Agents SDK**'s ``ToolOutputTrimmer``
  (``agents/extensions/tool_output_trimmer.py``, a ``call_model_input_filter``): before each
  model call, a tool output older than the last ``recent_turns = 2`` user turns and longer than
  ``max_output_chars = 500`` is replaced by ``[Trimmed: <tool> output — N chars → 200 char
  preview]`` and its first ``preview_chars = 200`` characters; the full text is not kept where
  the model can reach it. Within one turn it changes nothing: a single long turn costs what
  inline costs.

Units: characters unless a name says bytes, tokens or lines.
"""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from helpers.context.instructions import (
    INLINE_INSTRUCTIONS,
    MIDDLE_INSTRUCTIONS,
    SAVED_INSTRUCTIONS,
)
from helpers.context.policies import Presented, ResultPolicy
from helpers.context.read_back import Seen
from helpers.context.resolve_tools import compile_grep_pattern
from helpers.text.tokens import count_tokens
from helpers.tooling.registry import Tool, ToolContext, tool_from_function

if TYPE_CHECKING:
    from helpers.store.reading import StoredOutput
    from helpers.store.tool_outputs import ToolOutputStore

# -- Codex CLI ----------------------------------------------------------------------------------

#: The model the comparison stands for and prices at (``DEFAULT_PRICE_MODEL`` of
#: :mod:`helpers.evaluation.pricing`, kept equal by a test): Codex picks its budget by model.
CODEX_PRICED_MODEL = "gpt-4o"
#: Codex CLI's tool-output budget (``TruncationPolicyConfig::bytes(10_000)`` for most models,
#: ``::tokens(10_000)`` for the Codex models), ``codex-rs/core/src/models_manager/model_info.rs``.
CODEX_TOOL_OUTPUT_BUDGET = 10_000
#: What a non-shell tool's output gets on top of the budget: ``policy * 1.2``, "the existing 20%
#: allowance for serialization and headers" (``ContextManager::process_item``,
#: ``codex-rs/core/src/context_manager/history.rs``), rounded up.
CODEX_SERIALIZATION_ALLOWANCE = 1.2
#: Codex CLI's token estimate: bytes per token (``APPROX_BYTES_PER_TOKEN``).
CODEX_BYTES_PER_TOKEN = 4
#: Model-name prefixes and the budget unit Codex gives them, first match wins, in the order of
#: ``find_model_info_for_slug`` (``codex-mini-latest`` keeps the byte default; every other
#: Codex model counts tokens). Any other model: bytes.
CODEX_TOKEN_BUDGET_PREFIXES: tuple[tuple[str, Literal["bytes", "tokens"]], ...] = (
    ("codex-mini-latest", "bytes"),
    ("test-gpt-5", "tokens"),
    ("exp-codex", "tokens"),
    ("codex-1p", "tokens"),
    ("gpt-5.2-codex", "tokens"),
    ("gpt-5.1-codex", "tokens"),
    ("gpt-5-codex", "tokens"),
    ("codex-", "tokens"),
)


@dataclass(frozen=True)
class CodexBudget:
    """A Codex truncation policy: ``bytes`` or ``tokens`` (estimated, 4 bytes each) and how many.

    Which one a model gets is Codex's own rule (:meth:`for_model`).
    """

    unit: Literal["bytes", "tokens"]
    size: int

    @classmethod
    def for_model(cls, model: str) -> CodexBudget:
        """The budget Codex CLI gives ``model``'s tool outputs (``find_model_info_for_slug``):
        ``tokens(10,000)`` for the Codex models (:data:`CODEX_TOKEN_BUDGET_PREFIXES`), else the
        ``model_info!`` default ``bytes(10,000)``, which gpt-4o, o3, gpt-4.1 and the gpt-5
        family keep (openai/codex#7906 reports the same for gpt-5.2)."""
        slug = model.lower()
        for prefix, unit in CODEX_TOKEN_BUDGET_PREFIXES:
            if slug.startswith(prefix):
                return cls(unit, CODEX_TOOL_OUTPUT_BUDGET)
        return cls("bytes", CODEX_TOOL_OUTPUT_BUDGET)

    def for_tool_output(self) -> CodexBudget:
        """The budget with the 20% allowance every function-call output gets, rounded up."""
        return CodexBudget(self.unit, math.ceil(self.size * CODEX_SERIALIZATION_ALLOWANCE))

    @property
    def bytes(self) -> int:
        """The budget in bytes (``byte_budget``)."""
        return self.size * (CODEX_BYTES_PER_TOKEN if self.unit == "tokens" else 1)


def _codex_tokens(n_bytes: int) -> int:
    """Codex's token estimate of ``n_bytes`` bytes, rounded up (``approx_tokens_from_byte_count``)."""
    return (n_bytes + CODEX_BYTES_PER_TOKEN - 1) // CODEX_BYTES_PER_TOKEN


def _cut_bytes(data: bytes, size: int, *, from_end: bool = False) -> str:
    """At most ``size`` bytes of ``data`` from its start (or end), on a character boundary."""
    part = data[len(data) - size :] if from_end else data[:size]
    return part.decode("utf-8", "ignore")


def codex_truncate(output: str, budget: CodexBudget) -> str:
    """``output`` as Codex CLI's ``truncate_text`` leaves it for ``budget``: unchanged within
    ``budget.bytes`` bytes (UTF-8), else the first half of those bytes and the last half, each
    on a character boundary, with ``…N chars truncated…`` between them (``N`` characters cut;
    ``…N tokens truncated…`` under a token budget, ``N`` the estimated tokens over it).
    ``codex-rs/utils/string/src/truncate.rs`` (``truncate_with_byte_estimate``). No header:
    Codex adds ``Warning: truncated output …`` to shell (exec) output only."""
    data = output.encode("utf-8", "surrogatepass")
    max_bytes = budget.bytes
    if len(data) <= max_bytes:
        return output
    head = _cut_bytes(data, max_bytes // 2)
    tail = _cut_bytes(data, max_bytes - max_bytes // 2, from_end=True)
    if budget.unit == "tokens":
        marker = f"…{_codex_tokens(len(data) - max_bytes)} tokens truncated…"
    else:
        marker = f"…{len(output) - len(head) - len(tail)} chars truncated…"
    return f"{head}{marker}{tail}"


class CodexPolicy(ResultPolicy):
    """Codex CLI: head and tail within its tool-output budget for the model, no way back."""

    name = "codex"

    def __init__(self, model: str = CODEX_PRICED_MODEL):
        self.model = model
        self.budget = CodexBudget.for_model(model).for_tool_output()

    def instructions(self, *, few_shot: bool = True) -> str:
        """Head and tail within the budget; the middle gone for good."""
        return MIDDLE_INSTRUCTIONS.text(few_shot=few_shot)

    def present(
        self, ctx: ToolContext, tool: Tool, tool_call_id: str, output: str, row: StoredOutput | None
    ) -> Presented:
        shown = codex_truncate(output, self.budget)
        return Presented(shown, "inline" if shown is output else "middle")

    def describe(self) -> str:
        return f"codex (head + tail within {self.budget.size:,} {self.budget.unit}, as for {self.model})"


# -- saved files: deepagents and Claude Code ------------------------------------------------------

#: deepagents: evict a result over this many tokens (``tool_token_limit_before_evict``) ...
DEEPAGENTS_EVICT_TOKENS = 20_000
#: ... estimated at this many characters a token (``NUM_CHARS_PER_TOKEN``).
DEEPAGENTS_CHARS_PER_TOKEN = 4
DEEPAGENTS_FOLDER = "/large_tool_results/"
#: deepagents' ``read_file`` defaults and its longest row before a line continues on the next.
DEEPAGENTS_READ_OFFSET = 0
DEEPAGENTS_READ_LIMIT_LINES = 100
DEEPAGENTS_MAX_LINE_CHARS = 5_000
#: deepagents' preview: head and tail lines, each cut at this many characters.
DEEPAGENTS_PREVIEW_LINES = 5
DEEPAGENTS_PREVIEW_LINE_CHARS = 1_000
#: deepagents' message for an evicted result (``TOO_LARGE_TOOL_MSG``).
DEEPAGENTS_TOO_LARGE_MSG = (
    "Tool result too large, the result of this tool call {tool_call_id} was saved in the "
    "filesystem at this path: {file_path}\n\nYou can read the result from the filesystem by using "
    "the read_file tool, but make sure to only read part of the result at a time.\n\nYou can do "
    "this by specifying an offset and limit in the read_file tool call. For example, to read the "
    "first 100 lines, you can use the read_file tool with offset=0 and limit=100.\n\n"
    "Here is a preview showing the head and tail of the result:\n\n{content_sample}"
)

#: deepagents' ``read_file`` cuts its answer at ``NUM_CHARS_PER_TOKEN * tool_token_limit_before_evict``
#: characters (80,000) and ends it with ``READ_FILE_TRUNCATION_MSG`` (``_truncate`` in
#: ``_create_read_file_tool``, ``libs/deepagents/deepagents/middleware/filesystem.py`` at the
#: commit above).
DEEPAGENTS_READ_MAX_CHARS = DEEPAGENTS_CHARS_PER_TOKEN * DEEPAGENTS_EVICT_TOKENS
DEEPAGENTS_READ_TRUNCATION_MSG = (
    "\n\n[Output was truncated due to size limits. "
    "The file content is very large. "
    "Consider reformatting the file to make it easier to navigate. "
    "For example, if this is JSON, use execute(command='jq . {file_path}') to pretty-print it with line breaks. "
    "For other formats, you can use appropriate formatting tools to split long lines.]"
)

#: Claude Code: a tool result over this many characters is persisted to a file. The CHANGELOG
#: of anthropics/claude-code (``CHANGELOG.md`` at 5cfc0a1905ce0c0a9bd81d8a90fe6b62ff614357),
#: v2.1.51: "Tool results larger than 50K characters are now persisted to disk (previously
#: 100K)". The Bash tool keeps its own 30,000-character inline limit (``BASH_MAX_OUTPUT_LENGTH``,
#: anthropics/claude-code#19901); the workbook's tools are not Bash.
CLAUDE_CODE_MAX_OUTPUT_CHARS = 50_000
#: Claude Code's preview of a saved output, in bytes ("Preview (first 2KB)").
CLAUDE_CODE_PREVIEW_BYTES = 2_000
CLAUDE_CODE_FOLDER = "/tool-results/"
#: Claude Code's ``Read``: lines per call by default, and the longest line it shows.
CLAUDE_CODE_READ_LIMIT_LINES = 2_000
CLAUDE_CODE_READ_LINE_CHARS = 2_000
#: Claude Code's ``Read`` refuses a read whose content is over this many tokens
#: (``MaxFileReadTokenExceededError``; its text as quoted in anthropics/claude-code#4002 and
#: #8163: "File content (28375 tokens) exceeds maximum allowed tokens (25000). Please use offset
#: and limit parameters to read specific portions of the file, or use the GrepTool to search
#: for specific content."). Counted here with o200k_base: Claude's tokenizer is not public.
CLAUDE_CODE_READ_MAX_TOKENS = 25_000

#: The most characters one read or grep of a saved file returns (a bound of ours, as for the
#: resolve tools): past it the tool stops and says where to go on.
MAX_FILE_READ_CHARS = 100_000
MAX_FILE_GREP_LINES = 500


def _lines(text: str) -> list[str]:
    return text.splitlines()


def _numbered_deepagents(lines: Sequence[str], first: int) -> list[str]:
    """deepagents' ``format_content_with_line_numbers``: ``{n:6d}\\t{line}``, a line over 5,000
    characters continued on rows ``n.1``, ``n.2``."""
    rows = []
    for n, line in enumerate(lines, first):
        chunks = [
            line[i : i + DEEPAGENTS_MAX_LINE_CHARS]
            for i in range(0, max(len(line), 1), DEEPAGENTS_MAX_LINE_CHARS)
        ]
        rows.append(f"{n:6d}\t{chunks[0]}")
        rows += [f"{f'{n}.{k}':>6}\t{chunk}" for k, chunk in enumerate(chunks[1:], 1)]
    return rows


def _human_size(n_bytes: int) -> str:
    return f"{n_bytes / 1024:.1f}KB" if n_bytes < 1024 * 1024 else f"{n_bytes / 1048576:.1f}MB"


_DEEPAGENTS_RE = re.compile(r"^Tool result too large, .*? at this path: (\S+)")
_CLAUDE_CODE_RE = re.compile(
    r"^<persisted-output>\nOutput too large \([^)]*\)\. Full output saved to: (\S+)"
)
NUMBERED_ROW_RE = re.compile(r"^\s*(\d+)(?:\.(\d+))?\t(.*)$")


def _unnumber(rows: list[str]) -> str:
    """The text of ``cat -n`` rows (``{n:6d}\\t{line}``; deepagents' continuation rows
    ``n.1``, ``n.2`` join the line they continue)."""
    lines: list[str] = []
    for row in rows:
        match = NUMBERED_ROW_RE.match(row)
        if match is None:
            continue
        if match[2] is not None and lines:
            lines[-1] += match[3]
        else:
            lines.append(match[3])
    return "\n".join(lines)


class _SavedFilePolicy(ResultPolicy):
    """A long result is saved as a file of the thread; the model reads or greps the file."""

    needs_store = True
    folder = "/"

    def path_for(self, tool_call_id: str) -> str:
        return f"{self.folder}{tool_call_id}"

    def call_id_of(self, path: str) -> str | None:
        path = path.strip().strip("`'\"")
        if not path.startswith(self.folder):
            return None
        return path[len(self.folder) :].removesuffix(".txt") or None

    read_tool = "read_file"
    grep_tool = "grep"

    def instructions(self, *, few_shot: bool = True) -> str:
        text = SAVED_INSTRUCTIONS.text(few_shot=few_shot)
        return text.format(read=self.read_tool, grep=self.grep_tool)

    def is_long(self, output: str) -> bool:
        raise NotImplementedError

    def notice(self, tool_call_id: str, output: str) -> str:
        raise NotImplementedError

    def present(
        self, ctx: ToolContext, tool: Tool, tool_call_id: str, output: str, row: StoredOutput | None
    ) -> Presented:
        if self.shown_whole(tool, output):
            return Presented(output, "inline")
        self.logged(row)
        return Presented(self.notice(tool_call_id, output), "saved")


#: The lines of the saved files read last, by their content (SHA-256 and characters): a model
#: pages through one file call after call, and splitting a 6 MB file into its lines again at
#: every call cost more than the rest of the call.
_SAVED_LINES: OrderedDict[tuple[str, int], tuple[str, ...]] = OrderedDict()
_SAVED_LINES_KEPT = 2
_SAVED_LINES_LOCK = threading.Lock()


def _saved_lines(ctx: ToolContext, policy: _SavedFilePolicy, file_path: str) -> tuple[str, ...]:
    """The lines (``str.splitlines``) of the output saved at ``file_path`` in the turn's
    thread, from :data:`_SAVED_LINES` when its content was split last.

    Raises:
        ValueError: no output of the thread is saved at ``file_path`` (the anchor's own words).
    """
    store: ToolOutputStore | None = ctx.store
    call_id = policy.call_id_of(file_path)
    row = store.get(ctx.thread_id, call_id) if store and call_id else None
    if store is None or call_id is None or row is None:
        raise ValueError(f"Error: File '{file_path}' not found")
    key = (row.sha256, row.n_chars)
    with _SAVED_LINES_LOCK:
        lines = _SAVED_LINES.get(key)
        if lines is not None:
            _SAVED_LINES.move_to_end(key)
            return lines
    row = store.get(ctx.thread_id, call_id, with_content=True)
    if row is None:  # pruned a moment ago
        raise ValueError(f"Error: File '{file_path}' not found")
    key = (row.sha256, row.n_chars)  # this row's: logged again a moment ago, it is another
    lines = tuple((row.content or "").splitlines())
    with _SAVED_LINES_LOCK:
        _SAVED_LINES[key] = lines
        while len(_SAVED_LINES) > _SAVED_LINES_KEPT:
            _SAVED_LINES.popitem(last=False)
    return lines


def _grep_lines(lines: Sequence[str], pattern: str) -> list[tuple[int, str]]:
    regex = compile_grep_pattern(pattern)
    hits = []
    for n, line in enumerate(lines, 1):
        if regex.search(line):
            hits.append((n, line))
            if len(hits) >= MAX_FILE_GREP_LINES:
                break
    return hits


class DeepAgentsPolicy(_SavedFilePolicy):
    """deepagents: evict results over 20,000 tokens to a file; ``read_file`` pages it."""

    name = "deepagents"
    folder = DEEPAGENTS_FOLDER
    own_step_limit = (
        "deepagents allows 9,999 steps (recursion_limit in libs/deepagents/deepagents/graph.py)"
    )

    def __init__(self, evict_tokens: int = DEEPAGENTS_EVICT_TOKENS):
        self.evict_tokens = evict_tokens

    @staticmethod
    def read_back(call_id: str, content: str) -> Seen | None:
        """deepagents' notice of a result saved to a file: the path, and the ``cat -n`` rows of
        its head and tail (``total_lines``: the last row's number)."""
        match = _DEEPAGENTS_RE.match(content)
        if match is None:
            return None
        sample = content.split("head and tail of the result:\n\n", 1)[-1]
        before, _, after = sample.partition("\n... [")
        head = _unnumber(before.splitlines())
        tail_rows = after.split("] ...\n", 1)[1].splitlines() if after else []
        numbers = [
            int(m[1])
            for row in (before + "\n" + "\n".join(tail_rows)).splitlines()
            if (m := NUMBERED_ROW_RE.match(row))
        ]
        return Seen(
            call_id,
            content,
            "saved",
            match[1],
            head=head,
            tail=_unnumber(tail_rows) if tail_rows else head,
            total_lines=max(numbers) if numbers else None,
        )

    def is_long(self, output: str) -> bool:
        return len(output) > DEEPAGENTS_CHARS_PER_TOKEN * self.evict_tokens

    def notice(self, tool_call_id: str, output: str) -> str:
        lines = _lines(output)
        cut = [line[:DEEPAGENTS_PREVIEW_LINE_CHARS] for line in lines]
        if len(lines) <= 2 * DEEPAGENTS_PREVIEW_LINES:
            sample = "\n".join(_numbered_deepagents(cut, 1))
        else:
            omitted = len(lines) - 2 * DEEPAGENTS_PREVIEW_LINES
            tail_start = len(lines) - DEEPAGENTS_PREVIEW_LINES
            sample = "\n".join(
                [
                    *_numbered_deepagents(cut[:DEEPAGENTS_PREVIEW_LINES], 1),
                    f"... [{omitted} lines truncated] ...",
                    *_numbered_deepagents(cut[tail_start:], tail_start + 1),
                ]
            )
        return DEEPAGENTS_TOO_LARGE_MSG.format(
            tool_call_id=tool_call_id, file_path=self.path_for(tool_call_id), content_sample=sample
        )

    def internal_tools(self) -> list[Tool]:
        policy = self

        def read_file(
            ctx: ToolContext,
            file_path: str,
            offset: int = DEEPAGENTS_READ_OFFSET,
            limit: int = DEEPAGENTS_READ_LIMIT_LINES,
        ) -> str:
            """Reads a file from the filesystem, with line numbers (cat -n format).

            Args:
                file_path: absolute path of the file, e.g. /large_tool_results/call_abc.
                offset: line number to start reading from (0-based).
                limit: maximum number of lines to read.
            """
            if offset < 0 or limit < 1:
                raise ValueError("offset must be >= 0 and limit >= 1")
            lines = _saved_lines(ctx, policy, file_path)
            if offset >= len(lines) and lines:
                raise ValueError(
                    f"Error: Line offset {offset} exceeds file length ({len(lines)} lines)"
                )
            content = "\n".join(_numbered_deepagents(lines[offset : offset + limit], offset + 1))
            if len(content) >= DEEPAGENTS_READ_MAX_CHARS:  # deepagents' own cut, as it makes it
                note = DEEPAGENTS_READ_TRUNCATION_MSG.format(file_path=file_path)
                content = content[: DEEPAGENTS_READ_MAX_CHARS - len(note)] + note
            return content

        def grep(ctx: ToolContext, pattern: str, path: str) -> str:
            """Search a file for a regular expression; matching lines with their numbers.

            Args:
                pattern: the regular expression (RE2 syntax).
                path: the file to search, e.g. /large_tool_results/call_abc.
            """
            hits = _grep_lines(_saved_lines(ctx, policy, path), pattern)
            if not hits:
                return "No matches found"
            return _bounded([f"{path}:{n}:{line}" for n, line in hits], "narrow the pattern")

        return [
            tool_from_function(read_file, internal=True),
            tool_from_function(grep, internal=True),
        ]

    def describe(self) -> str:
        return f"deepagents (evict over {self.evict_tokens:,} tokens to a file)"


class ClaudeCodePolicy(_SavedFilePolicy):
    """Claude Code: tool results over 50,000 characters saved to a file with a 2 KB preview."""

    name = "claude-code"
    folder = CLAUDE_CODE_FOLDER
    own_step_limit = (
        "Claude Code stops only at --max-turns, unlimited unless set (its CLI reference)"
    )
    read_tool = "Read"
    grep_tool = "Grep"

    @staticmethod
    def read_back(call_id: str, content: str) -> Seen | None:
        """Claude Code's ``<persisted-output>`` notice: the path and its 2 KB preview."""
        match = _CLAUDE_CODE_RE.match(content)
        if match is None:
            return None
        preview = content.split("Preview (first 2KB):\n", 1)[-1]
        preview = preview.rsplit("\n...\n</persisted-output>", 1)[0]
        return Seen(call_id, content, "saved", match[1], head=preview)

    def __init__(self, max_output_chars: int = CLAUDE_CODE_MAX_OUTPUT_CHARS):
        self.max_output_chars = max_output_chars

    def path_for(self, tool_call_id: str) -> str:
        return f"{self.folder}{tool_call_id}.txt"

    def is_long(self, output: str) -> bool:
        return len(output) > self.max_output_chars

    def notice(self, tool_call_id: str, output: str) -> str:
        data = output.encode("utf-8", "surrogatepass")
        preview = _cut_bytes(data, CLAUDE_CODE_PREVIEW_BYTES)
        return (
            f"<persisted-output>\nOutput too large ({_human_size(len(data))}). Full output saved "
            f"to: {self.path_for(tool_call_id)}\n\nPreview (first 2KB):\n{preview}\n...\n"
            "</persisted-output>"
        )

    def internal_tools(self) -> list[Tool]:
        policy = self

        def Read(  # Claude Code's tool name
            ctx: ToolContext,
            file_path: str,
            offset: int = 1,
            limit: int = CLAUDE_CODE_READ_LIMIT_LINES,
        ) -> str:
            """Reads a file. By default up to 2000 lines from the start; lines longer than 2000
            characters are truncated. Results use cat -n format, numbered from 1.

            Args:
                file_path: the absolute path of the file to read.
                offset: the line number to start reading from (1-based).
                limit: the number of lines to read.
            """
            if offset < 1 or limit < 1:
                raise ValueError("offset must be >= 1 and limit >= 1")
            lines = _saved_lines(ctx, policy, file_path)
            chosen = lines[offset - 1 : offset - 1 + limit]
            rows = [
                f"{n:6d}\t{line[:CLAUDE_CODE_READ_LINE_CHARS]}"
                for n, line in enumerate(chosen, offset)
            ]
            text = _bounded(rows, "read on from the next offset")
            tokens = count_tokens(text) if len(text) > CLAUDE_CODE_READ_MAX_TOKENS else 0
            if tokens > CLAUDE_CODE_READ_MAX_TOKENS:  # a token is at least one character
                raise ValueError(
                    f"File content ({tokens} tokens) exceeds maximum allowed tokens "
                    f"({CLAUDE_CODE_READ_MAX_TOKENS}). Please use offset and limit parameters to "
                    "read specific portions of the file, or use the GrepTool to search for "
                    "specific content."
                )
            return text

        def Grep(  # Claude Code's tool name
            ctx: ToolContext,
            pattern: str,
            path: str,
            output_mode: Literal["content", "files_with_matches", "count"] = "files_with_matches",
        ) -> str:
            """Search file contents with a regular expression.

            Args:
                pattern: the regular expression to search for.
                path: the file to search.
                output_mode: content (matching lines, numbered), files_with_matches, or count.
            """
            hits = _grep_lines(_saved_lines(ctx, policy, path), pattern)
            if output_mode == "count":
                return str(len(hits))
            if output_mode == "files_with_matches":
                return path if hits else "No files found"
            if not hits:
                return "No matches found"
            return _bounded([f"{n}:{line}" for n, line in hits], "narrow the pattern")

        return [tool_from_function(Read, internal=True), tool_from_function(Grep, internal=True)]

    def describe(self) -> str:
        return f"claude-code (save outputs over {self.max_output_chars:,} chars to a file)"


def _bounded(rows: list[str], how_on: str) -> str:
    out: list[str] = []
    size = 0
    for row in rows:
        if size + len(row) > MAX_FILE_READ_CHARS:
            out.append(f"[cut at {MAX_FILE_READ_CHARS:,} characters; {how_on}]")
            break
        out.append(row)
        size += len(row) + 1
    return "\n".join(out)


# -- the OpenAI Agents SDK ------------------------------------------------------------------------

#: ``ToolOutputTrimmer``'s defaults.
AGENTS_SDK_RECENT_TURNS = 2
AGENTS_SDK_MAX_OUTPUT_CHARS = 500
AGENTS_SDK_PREVIEW_CHARS = 200


@dataclass(frozen=True)
class AnchorParameter:
    """One published parameter an anchor runs with: ``value`` as the workbook uses it (from the
    constant above, never retyped) and ``source``, where the project states it."""

    anchor: str
    parameter: str
    value: str
    source: str


_CODEX = "openai/codex"
_DEEP = "langchain-ai/deepagents `libs/deepagents/deepagents/middleware/filesystem.py` at 23b83ad"
_CC = "anthropics/claude-code"
#: Every anchor's parameters, with their sources (the anchor table of docs/comparison.md is written from it).
ANCHOR_PARAMETERS: tuple[AnchorParameter, ...] = (
    AnchorParameter(
        "codex",
        f"tool-output budget for {CODEX_PRICED_MODEL}",
        f"bytes({CODEX_TOOL_OUTPUT_BUDGET:,})",
        f"{_CODEX} `codex-rs/core/src/models_manager/model_info.rs` at 0666e95; openai/codex#7906",
    ),
    AnchorParameter(
        "codex",
        "allowance on a function-call output",
        f"× {CODEX_SERIALIZATION_ALLOWANCE} ({CodexPolicy().budget.size:,} bytes)",
        f"{_CODEX} `codex-rs/core/src/context_manager/history.rs` at 023fad2",
    ),
    AnchorParameter(
        "codex",
        "what is kept",
        "head and tail, `…N chars truncated…` between; the `Warning: truncated output` header "
        "only on exec output",
        f"{_CODEX} `utils/string/src/truncate.rs` at b24d7f3, "
        "`utils/output-truncation/src/lib.rs` at 820f85c",
    ),
    AnchorParameter(
        "deepagents",
        "a result is saved to a file over",
        f"{DEEPAGENTS_EVICT_TOKENS:,} tokens × {DEEPAGENTS_CHARS_PER_TOKEN} chars",
        f"{_DEEP} (`tool_token_limit_before_evict`, `NUM_CHARS_PER_TOKEN`)",
    ),
    AnchorParameter(
        "deepagents",
        "`read_file` default page; its answer cut at",
        f"{DEEPAGENTS_READ_LIMIT_LINES} lines; {DEEPAGENTS_READ_MAX_CHARS:,} chars",
        f"{_DEEP} (`DEFAULT_READ_LIMIT`, `_truncate`)",
    ),
    AnchorParameter(
        "deepagents",
        "its own step limit",
        "9,999 (the workbook's cap on model calls comes first, and the report says so)",
        "langchain-ai/deepagents `libs/deepagents/deepagents/graph.py` at 23b83ad",
    ),
    AnchorParameter(
        "claude-code",
        "a non-Bash result is saved to a file over",
        f"{CLAUDE_CODE_MAX_OUTPUT_CHARS:,} chars, with a {CLAUDE_CODE_PREVIEW_BYTES:,}-byte preview",
        f"{_CC} `CHANGELOG.md` v2.1.51 at 5cfc0a1 (Bash keeps 30,000: anthropics/claude-code#19901)",
    ),
    AnchorParameter(
        "claude-code",
        "`Read` default page; longest line; refused over",
        f"{CLAUDE_CODE_READ_LIMIT_LINES:,} lines; {CLAUDE_CODE_READ_LINE_CHARS:,} chars; "
        f"{CLAUDE_CODE_READ_MAX_TOKENS:,} tokens",
        "its Read tool description; anthropics/claude-code#4002",
    ),
    AnchorParameter(
        "claude-code",
        "its own step limit",
        "none unless `--max-turns` is set (the workbook's cap comes first, and the report says so)",
        "its CLI reference",
    ),
    AnchorParameter(
        "agents-sdk",
        "`ToolOutputTrimmer`: recent turns kept; trimmed over; preview",
        f"{AGENTS_SDK_RECENT_TURNS}; {AGENTS_SDK_MAX_OUTPUT_CHARS} chars; "
        f"{AGENTS_SDK_PREVIEW_CHARS} chars",
        "openai/openai-agents-python `src/agents/extensions/tool_output_trimmer.py` (its defaults)",
    ),
)


class AgentsSdkTrimmerPolicy(ResultPolicy):
    """The OpenAI Agents SDK's ``ToolOutputTrimmer``: old long outputs trimmed before each call."""

    name = "agents-sdk"

    def __init__(
        self,
        recent_turns: int = AGENTS_SDK_RECENT_TURNS,
        max_output_chars: int = AGENTS_SDK_MAX_OUTPUT_CHARS,
        preview_chars: int = AGENTS_SDK_PREVIEW_CHARS,
    ):
        self.recent_turns = recent_turns
        self.max_output_chars = max_output_chars
        self.preview_chars = preview_chars

    def instructions(self, *, few_shot: bool = True) -> str:
        """Results in full (old ones trimmed before each call, unannounced)."""
        return INLINE_INSTRUCTIONS.text(few_shot=few_shot)

    def messages_for_call(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The messages to send: tool outputs before the last ``recent_turns`` user messages
        and longer than ``max_output_chars`` trimmed to a preview (the stored history keeps
        them whole)."""
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        if len(users) <= self.recent_turns:
            return messages
        boundary = users[-self.recent_turns]
        names = {
            call.get("id"): call.get("function", {}).get("name", "tool")
            for m in messages
            for call in m.get("tool_calls") or []
        }
        sent = []
        for i, message in enumerate(messages):
            content = message.get("content")
            if (
                i < boundary
                and message.get("role") == "tool"
                and isinstance(content, str)
                and len(content) > self.max_output_chars
            ):
                name = names.get(message.get("tool_call_id"), "tool")
                message = {
                    **message,
                    "content": f"[Trimmed: {name} output — {len(content)} chars → "
                    f"{self.preview_chars} char preview]\n{content[: self.preview_chars]}...",
                }
            sent.append(message)
        return sent

    def describe(self) -> str:
        return (
            f"agents-sdk (trim outputs over {self.max_output_chars} chars older than "
            f"{self.recent_turns} turns)"
        )


#: The anchors by their strategy name.
ANCHORS: dict[str, type[ResultPolicy]] = {
    "codex": CodexPolicy,
    "deepagents": DeepAgentsPolicy,
    "claude-code": ClaudeCodePolicy,
    "agents-sdk": AgentsSdkTrimmerPolicy,
}
