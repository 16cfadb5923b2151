"""Tool-history compaction in tiers ("RFC 013: Tool Call Truncation for OpenResponses").

A long session piles up old tool calls even when each result is boxed. When the context passes a
token threshold, the history is compacted:

1. the system prompt and the first user message are always kept;
2. older tool calls are replaced by one short summary, grouped by category (:func:`categorize`):
   *read* (note what was read), *write* (keep what changed), *execution* (errors verbatim,
   successes counted) and *query* (very aggressive);
3. the last ``keep_last`` tool calls keep their complete call → result pairs;
4. the current turn (from the last user message on) is untouched.

Everything between the first user message and that protected tail is history: earlier requests
are noted briefly, their answers dropped, their tool calls summarised. The unit of removal is a
whole *exchange*: an assistant message with ``tool_calls`` and every
``tool`` message answering it. Removing whole exchanges keeps every call paired with its result,
so the API never sees an orphan (:func:`pairing_safe_cut`). Compacting again merges the earlier
summary into the new one (:func:`merge_summaries`), so the summary stays bounded: counts add up,
and every file written and every error is kept. Compaction never touches the store,
so every reference stays resolvable; the summary lists the references of the calls it folds.

The summary is heuristic (no model call) by default; :func:`model_summarizer` lets a model write
it through the same client instead. :func:`to_text_form` renders tool calls as plain text
for gateways that reject structured tool-call items.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from helpers.base.limits import DEFAULT_KEEP_LAST_CALLS, DEFAULT_THRESHOLD_TOKENS
from helpers.context.boxing import make_reference, presented_reference_id
from helpers.context.resolve_tools import fetch_tools, resolve_tools
from helpers.text.escaping import for_markdown
from helpers.text.tokens import count_chat_tokens
from helpers.tooling import tools
from helpers.tooling.registry import ToolRegistry

SUMMARY_HEADER = "[Earlier in this session:]"
#: The role of the summary message. Never ``system``: the summary quotes what models and tools
#: wrote (arguments, errors, requests), and text a model chose must not gain the authority of
#: the system prompt (OWASP LLM01, prompt injection). It goes back as what the user side of the
#: conversation recorded, as Codex CLI does with its compacted history.
SUMMARY_ROLE = "user"
#: The most characters of one quoted item (an argument, an error, a result, a request) in a
#: summary; longer ones are cut with an ellipsis.
MAX_SUMMARY_ITEM_CHARS = 200
#: The most error lines and written-file lines a (merged) summary keeps: each section's newest
#: ones, no section crowded out by another (:func:`_bounded`); the counts still cover every call.
MAX_SUMMARY_DETAIL_LINES = 24
#: The longest summary, in characters, however many times it was merged: past it, detail lines
#: go first, the oldest of the fullest section each time (:func:`_bounded`), then the end of the
#: text.
MAX_SUMMARY_CHARS = 6_000
#: Tool names shown as they are; any other name (a model may invent any text) is quoted.
_PLAIN_NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}")

#: The compaction category of each of the workbook's tools and of the strategies' model-only
#: tools, from the tools' own property (:attr:`helpers.tooling.registry.Tool.category`); the
#: agent adds the categories of any other tool it was given (:func:`categorizer`).
CATEGORY_OF: dict[str, str] = ToolRegistry(
    [*tools.registry, *fetch_tools(), *resolve_tools("five"), *resolve_tools("one")]
).categories()
CATEGORY_ORDER = ("read", "write", "execution", "query")


#: What each category holds, for people (notebook 06's table).
CATEGORY_MEANING = {
    "read": "what the agent looked at",
    "write": "what changed",
    "execution": "everything else, and every name not in the table",
    "query": "small questions about data",
}


def tool_categories() -> dict[str, tuple[str, ...]]:
    """The tools of :data:`CATEGORY_OF` by category, in :data:`CATEGORY_ORDER`: the task tools'
    and the model-only tools' own ``category=``, as registered (a new tool joins by itself)."""
    return {
        category: tuple(name for name, c in CATEGORY_OF.items() if c == category)
        for category in CATEGORY_ORDER
    }


def categories_markdown(categories: dict[str, tuple[str, ...]]) -> str:
    """``categories`` (:func:`tool_categories`) as a Markdown table: category, meaning, tools,
    every text through :func:`helpers.text.escaping.for_markdown` (a tool's name is any text its
    registration gave)."""
    lines = ["| category | what it holds | tools |", "|---|---|---|"]
    for category, names in categories.items():
        listed = ", ".join(for_markdown(name) for name in names) or "–"
        meaning = for_markdown(CATEGORY_MEANING.get(category, ""))
        lines.append(f"| {for_markdown(category)} | {meaning} | {listed} |")
    return "\n".join(lines)


def categorize(tool_name: str) -> str:
    """``read``, ``write``, ``execution`` or ``query``; a tool we do not know is ``execution``
    (its errors are then kept verbatim, the cautious choice)."""
    return CATEGORY_OF.get(tool_name, "execution")


def categorizer(registry: ToolRegistry) -> Callable[[str], str]:
    """:func:`categorize` that also knows the categories of ``registry``'s tools (a tool you
    registered with ``category="write"`` is filed as a write)."""
    known = {**CATEGORY_OF, **registry.categories()}
    return lambda tool_name: known.get(tool_name, "execution")


@dataclass
class Exchange:
    """One tool call and its result, as found in the messages."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    result: str
    assistant_index: int

    @property
    def error(self) -> str | None:
        """The error message if the result is an error result (a JSON object whose ``error`` is
        text, the empty text too), else ``None``: test it with ``is not None``."""
        try:
            data = json.loads(self.result)
        except ValueError:
            return None
        if isinstance(data, dict) and isinstance(data.get("error"), str):
            return data["error"]
        return None


def find_exchanges(messages: list[dict[str, Any]]) -> list[Exchange]:
    """Every tool call in ``messages`` with its result, in order."""
    results = {
        m.get("tool_call_id"): str(m.get("content") or "")
        for m in messages
        if m.get("role") == "tool"
    }
    found = []
    for index, message in enumerate(messages):
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except ValueError:
                arguments = {"(malformed arguments)": function.get("arguments")}
            if not isinstance(arguments, dict):
                arguments = {"(arguments)": arguments}
            found.append(
                Exchange(
                    call["id"],
                    function.get("name", "?"),
                    arguments,
                    results.get(call["id"], ""),
                    index,
                )
            )
    return found


def _clip(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def quoted(text: Any, width: int = MAX_SUMMARY_ITEM_CHARS) -> str:
    """Model- or tool-derived ``text`` as quoted data for a summary: whitespace folded (no line
    breaks), cut to ``width`` characters (at most :data:`MAX_SUMMARY_ITEM_CHARS`, with an
    ellipsis), then written as a JSON string, so it can never end its quotes, start a line of its
    own or pass for the summary's structure (``- Wrote 0 files:``, ``SYSTEM: …``).

    Args:
        text: anything; ``str(text)`` is quoted.
        width: the most characters kept.

    Returns:
        The JSON string, e.g. ``"report.txt"``.
    """
    return json.dumps(_clip(text, min(width, MAX_SUMMARY_ITEM_CHARS)), ensure_ascii=False)


def _tool_name(name: str) -> str:
    """A tool name as the summary shows it: plain if it looks like one, else quoted data."""
    return name if _PLAIN_NAME_RE.fullmatch(name) else quoted(name, 64)


def _split_items(text: str) -> list[str]:
    """``text`` split on ``"; "`` outside JSON strings (a quoted item may hold ``; ``)."""
    items, start, in_string, escaped = [], 0, False, False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == ";" and text.startswith("; ", index):
            items.append(text[start:index])
            start = index + 2
    items.append(text[start:])
    return [item for item in items if item]


def _what(exchange: Exchange) -> str:
    """The main argument of a call, shortened: what was read or asked."""
    args = exchange.arguments
    for key in (
        "url",
        "video_id",
        "query",
        "file_name",
        "tool_call_id",
        "pattern",
        "opaque_reference",
    ):
        if key in args:
            return f"{key}={quoted(args[key], 60)}"
    return quoted(json.dumps(args, ensure_ascii=False), 60)


def _errors(failed: list[Exchange], width: int) -> str:
    """Every distinct error, lightly compressed, with a count when it repeats."""
    counts: dict[str, int] = {}
    for exchange in failed:
        text = quoted(exchange.error or "", width)
        counts[text] = counts.get(text, 0) + 1
    return "; ".join(f"{text} ×{n}" if n > 1 else text for text, n in counts.items())


def summarize_category(category: str, exchanges: list[Exchange]) -> str:
    """One line (or a few, for execution errors) summarising a category's calls."""
    n = len(exchanges)
    # an error result with an empty message ({"error": ""}) failed all the same
    failed = [e for e in exchanges if e.error is not None]
    if category == "read":  # the newest reads, as a merge of summaries keeps them
        shown = exchanges[-READS_QUOTED:]
        items = "; ".join(f"{_tool_name(e.name)}({_what(e)})" for e in shown)
        more = f"; … {n - len(shown)} earlier" if n > len(shown) else ""
        fails = f" ({len(failed)} failed: {_errors(failed, 80)})" if failed else ""
        return f"- Read {n} item{'s' * (n != 1)}: {items}{more}{fails}"
    if category == "write":
        lines = [f"- Wrote {n - len(failed)} file{'s' * (n - len(failed) != 1)}:"]
        for e in exchanges:
            name = quoted(e.arguments.get("file_name", "?"))
            if e.error is not None:
                lines.append(f"  - {name}: FAILED: {quoted(e.error)}")
            else:
                lines.append(f"  - {name}: {quoted(e.result)}")
        return "\n".join(lines)
    if category == "execution":
        ok = n - len(failed)
        names = sorted({_tool_name(e.name) for e in exchanges})
        lines = [
            f"- Ran {n} execution{'s' * (n != 1)} ({', '.join(names)}): {ok} succeeded, {len(failed)} failed"
        ]
        lines += [
            f"  - {_tool_name(e.name)}({_what(e)}) failed: {quoted(e.error, 200)}" for e in failed
        ]
        return "\n".join(lines)
    fails = f" ({len(failed)} failed: {_errors(failed, 60)})" if failed else ""
    return f"- Ran {n} quer{'ies' if n != 1 else 'y'}{fails}"


@dataclass(frozen=True)
class CompactionRules:
    """The three decisions compaction makes, each a plain function you can replace (notebook 06
    plugs in the learner's):

    - ``categorize(tool_name) -> category`` (:func:`categorize`);
    - ``summarize(category, exchanges) -> text`` (:func:`summarize_category`);
    - ``cut(messages, keep_last) -> indices to fold`` (:func:`pairing_safe_cut`).
    """

    categorize: Callable[[str], str] = field(default=lambda name: categorize(name))
    summarize: Callable[[str, list[Exchange]], str] = field(
        default=lambda category, exchanges: summarize_category(category, exchanges)
    )
    cut: Callable[[list[dict[str, Any]], int], set[int]] = field(
        default=lambda messages, keep_last: pairing_safe_cut(messages, keep_last)
    )


def summarize_history(
    exchanges: list[Exchange],
    requests: list[str] | None = None,
    *,
    rules: CompactionRules | None = None,
) -> str:
    """The summary message's text: a header, the earlier requests, one block per category, and
    the references."""
    rules = rules or CompactionRules()
    lines = [SUMMARY_HEADER]
    if requests:
        lines.append(_requests_line(len(requests), [quoted(r, 60) for r in requests]))
    for category in CATEGORY_ORDER:
        group = [e for e in exchanges if rules.categorize(e.name) == category]
        if group:
            lines.append(rules.summarize(category, group))
    refs = []
    for e in exchanges:
        ref = presented_reference_id(e.result)
        if ref:
            refs.append(f"{_tool_name(e.name)}({_what(e)}) -> {make_reference(ref)}")
    if refs:
        lines.append("- References from these calls are still valid: " + "; ".join(refs[:10]))
    return _bounded(lines)


#: How many of the earlier requests a summary quotes (the newest).
REQUESTS_QUOTED = 3
#: How many of the folded reads a summary names (the newest; the others are counted as
#: earlier, in one summary and in summaries merged).
READS_QUOTED = 6


def _requests_line(asked: int, quoted_requests: list[str]) -> str:
    """The summary's line of earlier requests: how many, the newest :data:`REQUESTS_QUOTED`
    of them quoted, and how many earlier ones are not (``Earlier requests (4): "a"; "b"; "c";
    … 1 earlier``), as the line of reads says it."""
    shown = quoted_requests[-REQUESTS_QUOTED:]
    more = f"; … {asked - len(shown)} earlier" if asked > len(shown) else ""
    return f"- Earlier requests ({asked}): {'; '.join(shown)}{more}"


def _bounded(lines: list[str]) -> str:
    """The summary text from its lines, bounded: detail lines (``  - …``) said twice kept once;
    then, past :data:`MAX_SUMMARY_DETAIL_LINES` lines or :data:`MAX_SUMMARY_CHARS` characters,
    first the older lines about a file written again later (the newest outcome for a file is
    what a user asks about), then, one at a time, the oldest detail line of the section
    (writes, execution errors) holding the most lines (or, past the characters, the most
    characters), so no section is crowded out by another; the end of the text goes last.

    "Files written and errors, always" (the categories' rule) is kept as far as a bounded
    summary can: each section keeps its newest lines, and the counts still cover every call.
    """
    details = [i for i, line in enumerate(lines) if line.startswith("  - ")]
    newest = {lines[i]: i for i in details}  # a line said again (the same error) is kept once
    dropped = {i for i in details if newest[lines[i]] != i}
    details = [i for i in details if i not in dropped]
    section = {i: max(h for h in range(i) if not lines[h].startswith("  - ")) for i in details}

    def size() -> int:
        return sum(len(line) + 1 for i, line in enumerate(lines) if i not in dropped)

    if len(details) > MAX_SUMMARY_DETAIL_LINES or size() > MAX_SUMMARY_CHARS:
        files = {i: m[0] for i in details if (m := _FILE_LINE_RE.match(lines[i]))}
        last = {name: i for i, name in files.items()}
        dropped |= {i for i, name in files.items() if last[name] != i}  # a file's older outcomes
        details = [i for i in details if i not in dropped]
    while details and (len(details) > MAX_SUMMARY_DETAIL_LINES or size() > MAX_SUMMARY_CHARS):
        weight: dict[int, int] = {}  # the oldest line of the fullest section goes
        by_chars = len(details) <= MAX_SUMMARY_DETAIL_LINES
        for i in details:
            weight[section[i]] = weight.get(section[i], 0) + (len(lines[i]) if by_chars else 1)
        fullest = max(weight, key=lambda h: (weight[h], h))
        oldest = next(i for i in details if section[i] == fullest)
        dropped.add(oldest)
        details.remove(oldest)
    kept = [line for i, line in enumerate(lines) if i not in dropped]
    return "\n".join(kept)[:MAX_SUMMARY_CHARS]


#: A written-file line of a summary: ``  - "name": …``, the quoted name as its first group.
_FILE_LINE_RE = re.compile(r'^  - ("(?:[^"\\]|\\.)*"):')
_READ_RE = re.compile(r"^- Read (\d+) items?: (.*)$")
_READ_FAILED_RE = re.compile(r" \((\d+) failed: (.*)\)")


def _read_parts(rest: str) -> tuple[str, int, str | None]:
    """A read line after ``- Read N items: ``: its items, and how many failed with their
    errors, from the first `` (N failed: …)`` outside the quoted items (a model's argument may
    hold that text: it is inside a JSON string, so it is data)."""
    in_string = escaped = False
    for index, char in enumerate(rest):
        if in_string:
            escaped, in_string = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            in_string = True
        elif char == " " and (m := _READ_FAILED_RE.fullmatch(rest, index)):
            return rest[:index], int(m[1]), m[2]
    return rest, 0, None


_QUOTED_RE = re.compile(r'"(?:[^"\\]|\\.)*"')
_QUERY_RE = re.compile(r"^- Ran (\d+) quer(?:y|ies)(?: \((\d+) failed: (.*)\))?$")
_EXEC_RE = re.compile(r"^- Ran (\d+) executions? \((.*?)\): (\d+) succeeded, (\d+) failed$")
_WRITE_RE = re.compile(r"^- Wrote (\d+) files?:$")
_REFS_PREFIX = "- References from these calls are still valid: "
_REQUESTS_RE = re.compile(r"^- Earlier requests \((\d+)\): (.*)$")


def _parse_summary(text: str) -> dict[str, Any]:
    parts: dict[str, Any] = {
        "read": [0, [], 0, []],
        "write": [0, []],
        "exec": [0, set(), 0, 0, []],
        "query": [0, 0, []],
        "refs": [],
        "requests": [0, []],
    }
    section = None
    for line in text.splitlines()[1:]:
        if m := _REQUESTS_RE.match(line):
            parts["requests"][0] += int(m[1])
            parts["requests"][1] += _QUOTED_RE.findall(m[2])
            section = None
        elif m := _READ_RE.match(line):
            items, failed, errors = _read_parts(m[2])
            parts["read"][0] += int(m[1])
            parts["read"][1] += [i for i in _split_items(items) if not i.startswith("… ")]
            parts["read"][2] += failed
            parts["read"][3] += [errors] if errors else []
            section = None
        elif m := _QUERY_RE.match(line):
            parts["query"][0] += int(m[1])
            parts["query"][1] += int(m[2] or 0)
            parts["query"][2] += [m[3]] if m[3] else []
            section = None
        elif m := _EXEC_RE.match(line):
            parts["exec"][0] += int(m[1])
            parts["exec"][1] |= set(m[2].split(", "))
            parts["exec"][2] += int(m[3])
            parts["exec"][3] += int(m[4])
            section = "exec"
        elif m := _WRITE_RE.match(line):
            parts["write"][0] += int(m[1])
            section = "write"
        elif line.startswith(_REFS_PREFIX):
            parts["refs"] += _split_items(line[len(_REFS_PREFIX) :])
            section = None
        elif line.startswith("  - ") and section == "write":
            parts["write"][1].append(line)
        elif line.startswith("  - ") and section == "exec":
            parts["exec"][4].append(line)
    return parts


_REPEATED_RE = re.compile(r'^("(?:[^"\\]|\\.)*")(?: ×(\d+))?$')


def _merged_errors(groups: list[str]) -> str:
    """The error lists of two summaries' lines (each as :func:`_errors` wrote it) as one: each
    distinct error once, its counts added (``"boom" ×3``), the newest
    :data:`READS_QUOTED` of them."""
    counts: dict[str, int] = {}
    for item in (item for group in groups for item in _split_items(group)):
        m = _REPEATED_RE.match(item)
        text, n = (m[1], int(m[2] or 1)) if m else (item, 1)
        counts[text] = counts.pop(text, 0) + n  # moved to the end: the newest last
    kept = list(counts.items())[-READS_QUOTED:]
    return "; ".join(f"{text} ×{n}" if n > 1 else text for text, n in kept)


def merge_summaries(older: str, newer: str) -> str:
    """One bounded summary from two: counts add up; the newest read items, references, written
    files and error lines are kept, within :data:`MAX_SUMMARY_DETAIL_LINES` lines and
    :data:`MAX_SUMMARY_CHARS` characters however often summaries are merged."""
    a, b = _parse_summary(older), _parse_summary(newer)
    lines = [SUMMARY_HEADER]
    asked = a["requests"][0] + b["requests"][0]
    if asked:
        lines.append(_requests_line(asked, a["requests"][1] + b["requests"][1]))
    reads = a["read"][0] + b["read"][0]
    if reads:
        items = (a["read"][1] + b["read"][1])[-READS_QUOTED:]
        fails = _merged_errors(a["read"][3] + b["read"][3])
        failed = a["read"][2] + b["read"][2]
        more = f"; … {reads - len(items)} earlier" if reads > len(items) else ""
        tail = f" ({failed} failed: {fails})" if failed else ""
        lines.append(f"- Read {reads} item{'s' * (reads != 1)}: {'; '.join(items)}{more}{tail}")
    writes = a["write"][0] + b["write"][0]
    if writes or a["write"][1] or b["write"][1]:
        lines.append(f"- Wrote {writes} file{'s' * (writes != 1)}:")
        lines += a["write"][1] + b["write"][1]
    runs = a["exec"][0] + b["exec"][0]
    if runs:
        names = ", ".join(sorted(a["exec"][1] | b["exec"][1]))
        ok, bad = a["exec"][2] + b["exec"][2], a["exec"][3] + b["exec"][3]
        lines.append(
            f"- Ran {runs} execution{'s' * (runs != 1)} ({names}): {ok} succeeded, {bad} failed"
        )
        lines += a["exec"][4] + b["exec"][4]
    queries = a["query"][0] + b["query"][0]
    if queries:
        failed = a["query"][1] + b["query"][1]
        fails = _merged_errors(a["query"][2] + b["query"][2])
        tail = f" ({failed} failed: {fails})" if failed else ""
        lines.append(f"- Ran {queries} quer{'ies' if queries != 1 else 'y'}{tail}")
    refs = (a["refs"] + b["refs"])[-10:]
    if refs:
        lines.append(_REFS_PREFIX + "; ".join(refs))
    return _bounded(lines)


def is_summary(message: dict[str, Any]) -> bool:
    """Whether ``message`` is a summary :func:`compact` wrote: a :data:`SUMMARY_ROLE` message
    starting with :data:`SUMMARY_HEADER`. An assistant or tool message that starts so is a
    model's or a tool's text: it is never taken for a summary, merged or dropped."""
    return message.get("role") == SUMMARY_ROLE and str(message.get("content") or "").startswith(
        SUMMARY_HEADER
    )


def pairing_safe_cut(messages: list[dict[str, Any]], keep_last: int) -> set[int]:
    """Indices of the messages to fold into the summary: one contiguous range.

    The range starts after the first user message (tier 1 stays) and ends where the protected
    tail begins: the earlier of the current turn (the last user message) and the exchange
    holding the ``keep_last``-th last tool call (every call is protected when there are fewer
    than ``keep_last``; none when it is 0). A ``tool`` message always directly follows its
    call's assistant message, so such a range holds whole exchanges only: no ``tool`` message is
    ever left without its call, or a call without its result.
    """
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if not users:
        return set()
    first_user, last_user = users[0], users[-1]
    owners = [i for i, m in enumerate(messages) for _ in m.get("tool_calls") or []]
    # the last keep_last calls, or every call when there are fewer (never a negative start)
    protected = owners[max(0, len(owners) - keep_last) :] if keep_last > 0 else []
    tail_start = min([last_user, *protected])
    return set(range(first_user + 1, tail_start))


@dataclass
class Compaction:
    """What :func:`compact` did: the new messages and the figures."""

    messages: list[dict[str, Any]]
    compacted: bool
    folded_calls: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    summary: str = ""
    folded: list[Exchange] = field(default_factory=list)


#: Writes the summary text from the folded exchanges and the heuristic summary.
Summarizer = Callable[[list[Exchange], str], str]

MODEL_SUMMARY_INSTRUCTIONS = (
    "You compress an agent's earlier tool calls for its own context. Write a short summary: what "
    "was read (briefly), every file written and what changed, every error verbatim, and every "
    "internal:// reference as it is. No preamble."
)


#: The completion limit of a summary request, in tokens: a summary is kept to ``max_chars``
#: (2,000 characters, about 500 o200k_base tokens), so twice that is room enough.
SUMMARY_COMPLETION_LIMIT_TOKENS = 1_024


def model_summarizer(
    client: Any,
    model: str,
    *,
    completion_limit: Mapping[str, int],
    max_chars: int = 2_000,
) -> Summarizer:
    """An optional :data:`Summarizer` that asks a model, through the same ``openai`` client, to
    write the summary (at most ``max_chars`` characters kept). ``completion_limit`` is the
    request's completion-limit field as the endpoint takes it, e.g. ``{"max_completion_tokens":
    1024}``: the loop, which knows the provider's rules, gives
    ``profile.with_completion_limit(SUMMARY_COMPLETION_LIMIT_TOKENS).completion_limit()``
    (:mod:`helpers.models.providers`). If the call fails, the heuristic summary is used instead."""
    limit = dict(completion_limit)

    def summarize(folded: list[Exchange], heuristic: str) -> str:
        calls = "\n".join(
            f"- {e.name}({_clip(json.dumps(e.arguments, ensure_ascii=False), 120)}) -> {_clip(e.result, 200)}"
            for e in folded
        )
        try:
            response = client.chat.completions.create(
                model=model,
                messages=[
                    {"role": "system", "content": MODEL_SUMMARY_INSTRUCTIONS},
                    {
                        "role": "user",
                        "content": f"Heuristic summary:\n{heuristic}\n\nThe calls:\n{calls}",
                    },
                ],
                **limit,
            )
            text = (response.choices[0].message.content or "").strip()
        except Exception:  # the model is optional here: never lose the turn over a summary
            return heuristic
        return f"{SUMMARY_HEADER}\n{text[:max_chars]}" if text else heuristic

    return summarize


def compact(
    messages: list[dict[str, Any]],
    *,
    tools: Iterable[dict[str, Any]] | None = None,
    keep_last: int = DEFAULT_KEEP_LAST_CALLS,
    threshold_tokens: int = DEFAULT_THRESHOLD_TOKENS,
    force: bool = False,
    summarizer: Summarizer | None = None,
    rules: CompactionRules | None = None,
) -> Compaction:
    """Compact ``messages`` if their prompt cost passes ``threshold_tokens`` (or ``force``).

    ``rules`` replaces how calls are categorised, summarised and cut (default: this module's).
    Returns a new list (the input is not changed): the folded exchanges are replaced, where the
    first of them stood, by one :data:`SUMMARY_ROLE` message (never a system message) starting
    with ``[Earlier in this session:]``, bounded by :data:`MAX_SUMMARY_CHARS`.
    """
    rules = rules or CompactionRules()
    tools = list(tools or [])
    before = count_chat_tokens(messages, tools)
    if before <= threshold_tokens and not force:
        return Compaction(list(messages), False, tokens_before=before, tokens_after=before)
    fold = rules.cut(messages, keep_last)
    if not fold:
        return Compaction(list(messages), False, tokens_before=before, tokens_after=before)
    folded_ids = {c["id"] for i in fold for c in messages[i].get("tool_calls") or []}
    folded = [e for e in find_exchanges(messages) if e.call_id in folded_ids]
    requests = [
        str(messages[i].get("content") or "")
        for i in sorted(fold)
        if messages[i].get("role") == "user" and not is_summary(messages[i])
    ]
    previous = [messages[i] for i in sorted(fold) if is_summary(messages[i])]
    summary = summarize_history(folded, requests, rules=rules)
    if previous:  # one summary, not a pile of them: merge the earlier one into the new
        summary = merge_summaries(str(previous[-1]["content"]), summary)
    if summarizer is not None:
        summary = summarizer(folded, summary)
    out: list[dict[str, Any]] = []
    inserted = False
    for index, message in enumerate(messages):
        if index in fold:  # the earlier summary is folded too: merged into the new one above
            if not inserted:
                out.append({"role": SUMMARY_ROLE, "content": summary})
                inserted = True
            continue
        out.append(message)
    if out == messages:  # only an earlier summary was folded, into itself: nothing changed
        return Compaction(list(messages), False, tokens_before=before, tokens_after=before)
    return Compaction(
        out,
        True,
        folded_calls=len(folded),
        tokens_before=before,
        tokens_after=count_chat_tokens(out, tools),
        summary=summary,
        folded=folded,
    )


def to_text_form(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same conversation with tool calls and results as plain text (RFC 013's workaround
    for gateways that reject structured tool-call items)::

        [Tool Call: get_weather({"city": "Paris"}) -> call_id: call_123]
        [Tool Result for call_123]: {"temp": 22}
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.get("role") == "tool":
            out.append(
                {
                    "role": "user",
                    "content": f"[Tool Result for {message.get('tool_call_id')}]: {message.get('content')}",
                }
            )
        elif message.get("tool_calls"):
            lines = [str(message["content"])] if message.get("content") else []
            for call in message["tool_calls"]:
                function = call["function"]
                lines.append(
                    f"[Tool Call: {function['name']}({function['arguments']}) -> call_id: {call['id']}]"
                )
            out.append({"role": "assistant", "content": "\n".join(lines)})
        else:
            out.append(dict(message))
    return out
