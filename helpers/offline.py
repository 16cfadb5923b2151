"""The offline reference model: a deterministic stand-in for an LLM that speaks the OpenAI wire
protocol, so the real ``openai`` client drives every notebook and test with no network and no key.

**What it is for.** It tests the client (the agent loop, previews, boxing, unboxing, the store),
not a model's judgement. For each known prompt it follows a short plan written at the level of
intent ("transcribe video 123", "pass result 1 to deep_check", "answer the number at the end of
result 1") and carries out each intent the way an ideal model would, using only what it sees in
the messages:

- an inline value is copied;
- a truncated preview is fetched with ``fetch_tool_output`` when the needed part is not in it;
- an opaque reference (or resource link) is passed through unchanged, and inspected with
  ``internal_resource_read_slice`` / ``_grep`` / ``_read`` only when a detail is needed.

So one plan runs under every strategy and the token costs compare honestly. An unknown prompt
gets a plain answer saying that no plan exists and how to configure a real model.

**How it answers.** It is stateless, like a real endpoint: for each request it replays its plan
from the last user message, feeding each earlier tool result back in, until it reaches the first
step not yet taken, and sends that step as the next assistant message. ``usage`` is counted with
o200k_base (:mod:`helpers.tokens`).

**Plans** come from the ``offline_plan`` key of the prompt cases in ``data/cases/*.md``. A plan
is a list of steps:

- ``{call: TOOL, args: {...}}``: a tool call; an argument ``{result: N}`` means "pass result N"
  (results are numbered by call step, from 1);
- ``{tail: N, chars: K, as: NAME}``: note the last K characters of result N;
- ``{find: N, pattern: REGEX, window: W, as: NAME}``: note the lines of result N that match;
- ``{first: N, pattern: REGEX, as: NAME}``: note the first matching line (a preview that
  shows it needs no fetch);
- ``{read: N, as: NAME}``: note all of result N;
- ``{answer: TEXT}``: the final answer; ``{resultN}`` and ``{NAME}`` insert a result (read in
  full if it is not inline) or a note; ``{NAME|last_number}``, ``{NAME|count}`` and
  ``{resultN|rows}`` (rows of a ``run_sql`` result) transform them.

**Plugging it in.** :func:`offline_client` gives an ``openai.OpenAI`` whose ``httpx2`` client
has a ``MockTransport`` calling :meth:`OfflineModel.handle`; :class:`OfflineServer` serves the
same model over loopback HTTP with the standard library, for the real network path.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import socket
import threading
import time
from collections import deque
from collections.abc import Generator, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2
import openai

from helpers.boxing import SCHEME, make_reference, presented_reference_id
from helpers.personas import (
    IDEAL,
    OFFLINE_MODEL_NAME,
    Persona,
    UnknownPersonaError,
    persona_for_model,
)
from helpers.plans import Plan, PlanError, check_plan
from helpers.preview import parse_preview
from helpers.tokens import count_chat_tokens, count_tokens

OFFLINE_BASE_URL = "http://offline.invalid/v1"

NO_PLAN_ANSWER = (
    "I am the offline reference model, and I have no plan for this prompt: I only know the "
    "prompts of the workbook's cases (data/cases/*.md). To ask anything else, configure a real "
    "model in .env (see .env.example: an OpenAI or OpenRouter key, or a local OpenAI-compatible "
    "server) and choose it with --profile or WORKBOOK_PROFILE."
)


def normalize_prompt(text: str) -> str:
    """Whitespace-insensitive key for matching a prompt to its plan."""
    return " ".join(text.split())


# -- what the model sees ------------------------------------------------------------------------


@dataclass(frozen=True)
class Seen:
    """One tool result as the model sees it.

    ``kind`` is ``inline``, ``preview`` (a truncated preview with its marker), ``reference``
    (``uri`` names it; ``head`` is the preview shown under it, if any), ``file`` (a result saved
    to the file ``uri``, as deepagents and Claude Code do; ``head`` and ``tail`` are the lines
    its notice shows, ``total_lines`` the file's length when the notice tells it) or ``error``.
    """

    call_id: str
    content: str
    kind: str
    uri: str | None = None
    head: str | None = None
    tail: str | None = None
    total_lines: int | None = None


_DEEPAGENTS_RE = re.compile(r"^Tool result too large, .*? at this path: (\S+)")
_CLAUDE_CODE_RE = re.compile(
    r"^<persisted-output>\nOutput too large \([^)]*\)\. Full output saved to: (\S+)"
)
_NUMBERED_ROW_RE = re.compile(r"^\s*(\d+)(?:\.(\d+))?\t(.*)$")


def _saved_file(call_id: str, content: str) -> Seen | None:
    """A deepagents or Claude Code notice of a result saved to a file, read as a model reads it."""
    match = _DEEPAGENTS_RE.match(content)
    if match:
        sample = content.split("head and tail of the result:\n\n", 1)[-1]
        before, _, after = sample.partition("\n... [")
        head = _unnumber(before.splitlines())
        tail_rows = after.split("] ...\n", 1)[1].splitlines() if after else []
        numbers = [
            int(m[1])
            for row in (before + "\n" + "\n".join(tail_rows)).splitlines()
            if (m := _NUMBERED_ROW_RE.match(row))
        ]
        return Seen(
            call_id,
            content,
            "file",
            match[1],
            head=head,
            tail=_unnumber(tail_rows) if tail_rows else head,
            total_lines=max(numbers) if numbers else None,
        )
    match = _CLAUDE_CODE_RE.match(content)
    if match:
        preview = content.split("Preview (first 2KB):\n", 1)[-1].rsplit(
            "\n...\n</persisted-output>", 1
        )[0]
        return Seen(call_id, content, "file", match[1], head=preview)
    return None


def _unnumber(rows: list[str]) -> str:
    """The text of ``cat -n`` rows (``{n:6d}\\t{line}``; deepagents' continuation rows
    ``n.1``, ``n.2`` join the line they continue)."""
    lines: list[str] = []
    for row in rows:
        match = _NUMBERED_ROW_RE.match(row)
        if match is None:
            continue
        if match[2] is not None and lines:
            lines[-1] += match[3]
        else:
            lines.append(match[3])
    return "\n".join(lines)


def classify(call_id: str, content: str) -> Seen:
    """Read a ``tool`` message the way an ideal model would."""
    stripped = content.strip()
    ref_id = presented_reference_id(content) if content.startswith(SCHEME) else None
    if ref_id is not None and "\n" in content:  # a reference with a note and a preview under it
        head = content.split("\n", 2)[2] if content.count("\n") >= 2 else ""
        return Seen(call_id, content, "reference", make_reference(ref_id), head=head)
    saved = _saved_file(call_id, content)
    if saved is not None:
        return saved
    if stripped.startswith(SCHEME) and len(stripped) < 100 and " " not in stripped:
        return Seen(call_id, content, "reference", stripped)
    if stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except ValueError:
            data = None
        if isinstance(data, dict):
            if data.get("type") == "resource_link" and str(data.get("uri", "")).startswith(SCHEME):
                return Seen(call_id, content, "reference", data["uri"])
            if set(data) == {"error"}:
                return Seen(call_id, content, "error")
    if parse_preview(content) is not None:
        return Seen(call_id, content, "preview")
    return Seen(call_id, content, "inline")


@dataclass(frozen=True)
class Call:
    """A tool call the plan wants to make next."""

    name: str
    arguments: dict[str, Any]


class _Stop(Exception):
    """The plan cannot go on (a tool failed); carries the answer to give instead."""

    def __init__(self, answer: str):
        super().__init__(answer)
        self.answer = answer


# -- the plan interpreter -----------------------------------------------------------------------

Step = Generator[Call, Seen, Any]

#: Full values the model already has in its context this turn (fetched or read), by call id:
#: an ideal model does not fetch the same output twice.
Memory = dict[str, str]

#: What the persona ``invents`` passes instead of a real reference or tool_call_id: the ids of
#: the few-shot examples in the system prompt (:mod:`helpers.instructions`).
INVENTED_REFERENCE = "internal://Zx81Qa0pLm3v"
INVENTED_TOOL_CALL_ID = "call_1"


@dataclass
class _Mind:
    """What the model keeps while it carries out a plan: results, notes, values it has read,
    and which one-time mistakes its persona has already made."""

    persona: Persona = IDEAL
    results: list[Seen] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)
    memory: Memory = field(default_factory=dict)
    made: set[str] = field(default_factory=set)
    tools: frozenset[str] = frozenset()  # the tool names offered in the request

    def once(self, mistake: str) -> bool:
        """True the first time ``mistake`` is asked about in this turn."""
        if mistake in self.made:
            return False
        self.made.add(mistake)
        return True


def _check_error(seen: Seen, name: str) -> Seen:
    if seen.kind == "error":
        message = json.loads(seen.content)["error"]
        raise _Stop(f"I could not finish: the call to {name} returned an error: {message}")
    return seen


def _map_references(value: Any, change: Any) -> Any:
    """``value`` with every bare reference string replaced by ``change(reference)``."""
    if isinstance(value, str) and value.startswith(SCHEME) and " " not in value:
        return change(value)
    if isinstance(value, dict):
        return {k: _map_references(v, change) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_references(v, change) for v in value]
    return value


def _mistaken(call: Call, mind: _Mind) -> Call | None:
    """The call as the persona gets it wrong, or ``None`` when it gets this one right."""
    persona = mind.persona
    internal = call.name.startswith("internal_resource_")
    has_ref = _map_references(call.arguments, lambda r: "\0") != call.arguments
    if persona.invents_ids:
        if call.name == "fetch_tool_output" and mind.once("invent"):
            return Call(call.name, {**call.arguments, "tool_call_id": INVENTED_TOOL_CALL_ID})
        if has_ref and mind.once("invent"):
            return Call(call.name, _map_references(call.arguments, lambda r: INVENTED_REFERENCE))
    if persona.embeds_references and has_ref and not internal and mind.once("embed"):
        return Call(call.name, _map_references(call.arguments, lambda r: f"Here is the text: {r}"))
    if persona.wraps_references and has_ref:
        quote = (lambda r: f'"{r}"') if internal else (lambda r: f"`{r}`")
        return Call(call.name, _map_references(call.arguments, quote))
    return None


#: The five resolve tools as operations of the one ``internal_resource`` tool, with the renamed
#: arguments.
_AS_ONE_TOOL: dict[str, tuple[str, dict[str, str]]] = {
    "internal_resource_length": ("length", {}),
    "internal_resource_read_slice": ("slice", {"start_index": "start", "length": "count"}),
    "internal_resource_read_lines": ("lines", {"start_line": "start", "line_count": "count"}),
    "internal_resource_grep": ("grep", {}),
    "internal_resource_read": ("read", {}),
}


def _as_offered(call: Call, mind: _Mind) -> Call:
    """``call`` in the form the request offers: a five-tool resolve call becomes
    ``internal_resource(op=...)`` when that is the resolve tool offered."""
    if call.name not in _AS_ONE_TOOL or call.name in mind.tools:
        return call
    if "internal_resource" not in mind.tools:
        return call
    op, renames = _AS_ONE_TOOL[call.name]
    args: dict[str, Any] = {"opaque_reference": call.arguments["opaque_reference"], "op": op}
    for key, value in call.arguments.items():
        if key != "opaque_reference":
            args[renames.get(key, key)] = value
    return Call("internal_resource", args)


def _call(call: Call, mind: _Mind) -> Step:
    """Make ``call``; a persona makes its mistake first, and corrects it if an error comes back
    (a mistake that goes through unrefused stands: the client's guard was missing)."""
    call = _as_offered(call, mind)
    wrong = _mistaken(call, mind)
    if wrong is not None:
        seen = yield wrong
        if seen.kind != "error" or mind.persona.wraps_references:
            return seen
    return (yield call)


def _fetch_full(seen: Seen, mind: _Mind) -> Step:
    if seen.call_id in mind.memory:
        return mind.memory[seen.call_id]
    preview = parse_preview(seen.content)
    assert preview is not None
    while True:
        fetched = yield from _call(
            Call("fetch_tool_output", {"tool_call_id": preview.tool_call_id}), mind
        )
        fetched = _check_error(fetched, "fetch_tool_output")
        if fetched.kind != "preview":
            break
        # the fetch itself came back cut: chase the new marker, as a model would
        preview = parse_preview(fetched.content)
        assert preview is not None
    data = json.loads(fetched.content)
    mind.memory[seen.call_id] = data["tool_output"]
    return data["tool_output"]


# -- results saved to a file (deepagents, Claude Code) ---------------------------------------

#: Lines an ideal model reads per call of a file-reading tool.
FILE_PAGE_LINES = 2_000
_GREP_ROW_RE = re.compile(r"^(?:.*?:)?(\d+):(.*)$")


def _file_tools(mind: _Mind) -> tuple[str, str, bool]:
    """The read and grep tools offered, and whether read offsets count from 1 (Claude Code)."""
    if "Read" in mind.tools:
        return "Read", "Grep", True
    return "read_file", "grep", False


def _numbered_rows(content: str) -> list[tuple[int, str]]:
    """``(line number, text)`` of ``cat -n`` rows, continuation rows joined to their line."""
    rows: list[tuple[int, str]] = []
    for row in content.splitlines():
        match = _NUMBERED_ROW_RE.match(row)
        if match is None:
            continue
        if match[2] is not None and rows:
            rows[-1] = (rows[-1][0], rows[-1][1] + match[3])
        else:
            rows.append((int(match[1]), match[3]))
    return rows


def _file_page(seen: Seen, first_line: int, count: int, mind: _Mind) -> Step:
    """Lines ``first_line`` (from 1) onwards, at most ``count``: ``(rows, more_may_follow)``."""
    read, _, one_based = _file_tools(mind)
    offset = first_line if one_based else first_line - 1
    got = yield from _call(
        Call(read, {"file_path": seen.uri, "offset": offset, "limit": count}), mind
    )
    if got.kind == "error" and "exceeds file length" in got.content:
        return [], False
    content = _check_error(got, read).content
    rows = _numbered_rows(content)
    return rows, len(rows) >= count or "[cut at" in content


def _file_all(seen: Seen, mind: _Mind) -> Step:
    """The whole saved file, read page by page (what a model must do to copy it)."""
    if seen.call_id in mind.memory:
        return mind.memory[seen.call_id]
    lines: list[str] = []
    next_line = 1
    while True:
        rows, more = yield from _file_page(seen, next_line, FILE_PAGE_LINES, mind)
        lines += [text for _, text in rows]
        if not rows or not more:
            break
        next_line = rows[-1][0] + 1
        if seen.total_lines is not None and next_line > seen.total_lines:
            break
    mind.memory[seen.call_id] = "\n".join(lines)
    return mind.memory[seen.call_id]


def _file_grep(seen: Seen, pattern: str, mind: _Mind) -> Step:
    """``(line number, text)`` of the lines of the saved file that match ``pattern``."""
    _, grep, one_based = _file_tools(mind)
    args: dict[str, Any] = {"pattern": pattern, "path": seen.uri}
    if one_based:
        args["output_mode"] = "content"
    got = yield from _call(Call(grep, args), mind)
    content = _check_error(got, grep).content
    return [(int(m[1]), m[2]) for row in content.splitlines() if (m := _GREP_ROW_RE.match(row))]


def _file_length(seen: Seen, mind: _Mind) -> Step:
    """The number of lines of the saved file: from the notice, or a grep that counts them."""
    if seen.total_lines is not None:
        return seen.total_lines
    _, grep, one_based = _file_tools(mind)
    args: dict[str, Any] = {"pattern": "^", "path": seen.uri}
    if one_based:
        args["output_mode"] = "count"
    got = yield from _call(Call(grep, args), mind)
    content = _check_error(got, grep).content.strip()
    return int(content) if content.isdigit() else len(content.splitlines())


def _file_tail(seen: Seen, chars: int, mind: _Mind) -> Step:
    """The last ``chars`` characters of the saved file, from the notice's tail if it shows
    them whole, else from the last lines read."""
    from helpers.anchors import DEEPAGENTS_PREVIEW_LINE_CHARS

    tail = seen.tail
    whole = tail is not None and all(
        len(line) < DEEPAGENTS_PREVIEW_LINE_CHARS for line in tail.splitlines()
    )
    if tail is not None and whole and len(tail) >= chars:
        return tail[-chars:]
    total = yield from _file_length(seen, mind)
    count = 50
    while True:
        first = max(total - count + 1, 1)
        rows, _ = yield from _file_page(seen, first, count, mind)
        text = "\n".join(t for _, t in rows)
        if len(text) >= chars or first == 1:
            return text[-chars:]
        count *= 4


def _visible_lines(text: str, cut: bool) -> list[str]:
    """The whole lines of a preview (its last line is partial when the preview was cut)."""
    lines = text.splitlines()
    return lines[:-1] if cut and lines and not text.endswith("\n") else lines


def _pass_on(seen: Seen, mind: _Mind) -> Step:
    """The value to put in another tool's argument: copy, fetch, or pass the reference."""
    if seen.kind == "reference":
        if mind.persona.reads_everything:  # reads what it only had to route, then copies it
            return (yield from _read(seen, mind))
        return seen.uri
    if seen.kind == "preview":
        return (yield from _fetch_full(seen, mind))
    if seen.kind == "file":
        return (yield from _file_all(seen, mind))
    return seen.content


def _read(seen: Seen, mind: _Mind) -> Step:
    """The full value, for the model to read."""
    if seen.call_id in mind.memory:
        return mind.memory[seen.call_id]
    if seen.kind == "reference":
        got = yield from _call(Call("internal_resource_read", {"opaque_reference": seen.uri}), mind)
        mind.memory[seen.call_id] = _check_error(got, "internal_resource_read").content
        return mind.memory[seen.call_id]
    if seen.kind == "preview":
        return (yield from _fetch_full(seen, mind))
    if seen.kind == "file":
        return (yield from _file_all(seen, mind))
    return seen.content


def _tail(seen: Seen, chars: int, mind: _Mind) -> Step:
    if seen.kind == "reference" and mind.persona.reads_everything:
        yield from _read(seen, mind)
    if seen.call_id in mind.memory:
        return mind.memory[seen.call_id][-chars:]
    if seen.kind == "reference":
        got = yield from _call(
            Call(
                "internal_resource_read_slice",
                {"opaque_reference": seen.uri, "start_index": -chars, "length": chars},
            ),
            mind,
        )
        return _check_error(got, "internal_resource_read_slice").content
    if seen.kind == "preview":
        return (yield from _fetch_full(seen, mind))[-chars:]
    if seen.kind == "file":
        return (yield from _file_tail(seen, chars, mind))
    return seen.content[-chars:]


_GREP_LINE_RE = re.compile(r"^\d+: (.*)$")


def _find(seen: Seen, pattern: str, window: int, mind: _Mind) -> Step:
    """Lines matching ``pattern`` (with context when window > 0)."""
    if seen.kind == "reference" and mind.persona.reads_everything:
        yield from _read(seen, mind)
    if seen.kind == "reference" and seen.call_id not in mind.memory:
        got = yield from _call(
            Call(
                "internal_resource_grep",
                {"opaque_reference": seen.uri, "pattern": pattern, "window": window},
            ),
            mind,
        )
        text = _check_error(got, "internal_resource_grep").content
        return [m[1] for line in text.splitlines() if (m := _GREP_LINE_RE.match(line))]
    if seen.kind == "file" and seen.call_id not in mind.memory:
        hits = yield from _file_grep(seen, pattern, mind)
        if window == 0:
            return [text for _, text in hits]
        wanted: set[int] = set()
        for n, _ in hits:
            wanted.update(range(max(1, n - window), n + window + 1))
        found: dict[int, str] = {}
        for n in sorted(wanted):
            if n not in found:
                rows, _ = yield from _file_page(seen, n, 2 * window + 1, mind)
                found.update(rows)
        return [found[n] for n in sorted(wanted) if n in found]
    # a preview may hide further matches: finding *all* of them needs the full value
    if seen.call_id in mind.memory:
        value = mind.memory[seen.call_id]
    elif seen.kind == "preview":
        value = yield from _fetch_full(seen, mind)
    else:
        value = seen.content
    lines = value.splitlines()
    regex = re.compile(pattern)
    keep: set[int] = set()
    for i, line in enumerate(lines):
        if regex.search(line):
            keep.update(range(max(0, i - window), min(len(lines), i + window + 1)))
    return [lines[i] for i in sorted(keep)]


def _first(seen: Seen, pattern: str, mind: _Mind) -> Step:
    """The first line matching ``pattern``: a preview that shows one needs no fetch."""
    regex = re.compile(pattern)
    memory = mind.memory
    if seen.kind in ("reference", "file") and seen.head and seen.call_id not in memory:
        # the head shown with a reference or a saved file's notice: a hit there needs no look
        hit = next((ln for ln in _visible_lines(seen.head, True) if regex.search(ln)), None)
        if hit is not None:
            return hit
    if seen.call_id in memory or seen.kind in ("inline", "preview"):
        preview = parse_preview(seen.content) if seen.call_id not in memory else None
        visible = memory.get(seen.call_id) or (preview.text if preview else seen.content)
        lines = _visible_lines(visible, preview is not None)
        hit = next((line for line in lines if regex.search(line)), None)
        if hit is not None or seen.kind == "inline" or seen.call_id in memory:
            return hit or "(no match)"
        full = yield from _fetch_full(seen, mind)
        return next((line for line in full.splitlines() if regex.search(line)), "(no match)")
    lines = yield from _find(seen, pattern, 0, mind)
    return lines[0] if lines else "(no match)"


def _rows(value: str) -> str:
    try:
        data = json.loads(value)
    except ValueError:
        return f"(the result is not complete JSON, so I cannot list its rows; I saw:)\n{value}"
    if "error" in data:
        return f"(the query failed: {data['error']})"
    lines = [" | ".join(data["columns"])]
    lines += [" | ".join("" if v is None else str(v) for v in row) for row in data["rows"]]
    return "\n".join(lines)


def _last_number(value: Any) -> str:
    text = "\n".join(value) if isinstance(value, list) else str(value)
    numbers = re.findall(r"-?\d+(?:\.\d+)?", text)
    return numbers[-1] if numbers else "(no number found)"


_PLACEHOLDER_RE = re.compile(r"\{(\w+)(?:\|(\w+))?\}")


def _render_answer(template: str, mind: _Mind) -> Step:
    parts: list[str] = []
    pos = 0
    for match in _PLACEHOLDER_RE.finditer(template):
        parts.append(template[pos : match.start()])
        pos = match.end()
        name, transform = match[1], match[2]
        if name.startswith("result") and name[6:].isdigit():
            value: Any = yield from _read(_result(mind.results, int(name[6:])), mind)
        elif name in mind.notes:
            value = mind.notes[name]
        else:
            raise PlanError(f"answer refers to {{{name}}}, which no step produced")
        if transform == "last_number":
            value = _last_number(value)
        elif transform == "count":
            value = str(len(value) if isinstance(value, list) else len(str(value).splitlines()))
        elif transform == "rows":
            value = _rows(value)
        elif transform is not None:
            raise PlanError(f"unknown transform |{transform} in answer")
        parts.append("\n".join(value) if isinstance(value, list) else str(value))
    parts.append(template[pos:])
    return "".join(parts)


def _result(results: list[Seen], number: Any) -> Seen:
    if not isinstance(number, int) or not 1 <= number <= len(results):
        raise PlanError(f"result {number!r} does not exist yet (results so far: {len(results)})")
    return results[number - 1]


def _resolve_args(args: Any, mind: _Mind, *, previews_as_seen: bool = False) -> Step:
    """The plan's arguments with ``{result: N}`` filled in. With ``previews_as_seen``, a preview
    is passed on as it was seen, marker and all (the mistake of ``passes-preview``)."""
    if isinstance(args, dict) and set(args) == {"result"}:
        seen = _result(mind.results, args["result"])
        if previews_as_seen and seen.kind == "preview":
            return seen.content
        return (yield from _pass_on(seen, mind))
    if isinstance(args, dict):
        out = {}
        for key, value in args.items():
            out[key] = yield from _resolve_args(value, mind, previews_as_seen=previews_as_seen)
        return out
    if isinstance(args, list):
        items = []
        for value in args:
            items.append((yield from _resolve_args(value, mind, previews_as_seen=previews_as_seen)))
        return items
    return args


def _uses_preview(args: Any, results: list[Seen]) -> bool:
    if isinstance(args, dict) and set(args) == {"result"}:
        number = args["result"]
        return (
            isinstance(number, int)
            and 1 <= number <= len(results)
            and (results[number - 1].kind == "preview")
        )
    if isinstance(args, dict):
        return any(_uses_preview(v, results) for v in args.values())
    if isinstance(args, list):
        return any(_uses_preview(v, results) for v in args)
    return False


def interpret(plan: Plan, persona: Persona = IDEAL, tools: Iterable[str] = ()) -> Step:
    """Carry out ``plan`` as ``persona``: yields each tool :class:`Call`, receives what the model
    saw of its result, and returns the final answer text."""
    mind = _Mind(persona, tools=frozenset(tools))
    try:
        for step in plan:
            if "call" in step:
                plan_args = step.get("args", {})
                if (
                    persona.passes_previews
                    and _uses_preview(plan_args, mind.results)
                    and mind.once("preview")
                ):
                    wrong = yield from _resolve_args(plan_args, mind, previews_as_seen=True)
                    seen = yield Call(step["call"], wrong)
                    if seen.kind != "error":  # nothing refused it: the tool ran on a preview
                        mind.results.append(seen)
                        continue
                args = yield from _resolve_args(plan_args, mind)
                seen = yield from _call(Call(step["call"], args), mind)
                mind.results.append(_check_error(seen, step["call"]))
            elif "tail" in step:
                seen = _result(mind.results, step["tail"])
                mind.notes[step["as"]] = yield from _tail(seen, int(step.get("chars", 200)), mind)
            elif "find" in step:
                seen = _result(mind.results, step["find"])
                mind.notes[step["as"]] = yield from _find(
                    seen, step["pattern"], int(step.get("window", 0)), mind
                )
            elif "first" in step:
                seen = _result(mind.results, step["first"])
                mind.notes[step["as"]] = yield from _first(seen, step["pattern"], mind)
            elif "read" in step:
                seen = _result(mind.results, step["read"])
                mind.notes[step["as"]] = yield from _read(seen, mind)
            elif "answer" in step:
                return (yield from _render_answer(step["answer"], mind))
            else:
                raise PlanError(f"unknown plan step {step!r}")
    except _Stop as stop:
        return stop.answer
    raise PlanError("the plan ends without an answer step")


# -- the model ----------------------------------------------------------------------------------


class WireError(ValueError):
    """A request the API would reject (HTTP 400), with an OpenAI-style message."""

    code: str | None = None
    param: str | None = None


class ContextLengthExceeded(WireError):
    """The request is longer than the model's context window (OpenAI's 400
    ``context_length_exceeded``)."""

    code = "context_length_exceeded"
    param = "messages"


#: The context window of the offline model, in tokens, unless configured otherwise (the window of
#: OpenAI's gpt-4o and gpt-4o-mini).
DEFAULT_CONTEXT_WINDOW_TOKENS = 128_000


def _check_pairing(messages: list[Mapping[str, Any]]) -> None:
    """Reject what the API rejects: a tool message that answers no pending tool call, or a
    tool call left without its tool message."""
    pending: set[str] = set()
    for i, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                raise WireError(
                    f"Invalid parameter: messages[{i}] with role 'tool' must be a response to a "
                    f"preceding message with 'tool_calls' (tool_call_id {call_id!r})."
                )
            pending.discard(call_id)
            continue
        if pending:
            raise WireError(
                "An assistant message with 'tool_calls' must be followed by tool messages "
                f"responding to each 'tool_call_id'. Missing: {', '.join(sorted(pending))}."
            )
        if role == "assistant":
            pending = {c.get("id") for c in message.get("tool_calls") or []}


class OfflineModel:
    """The offline reference model: plans by prompt, answering chat-completions requests.

    Args:
        plans: ``{prompt: plan}``; default: every ``offline_plan`` in ``data/cases/*.md``.
        name: the model name it reports when a request names none.
        context_window_tokens: the longest request it takes (messages plus tool schemas, in
            o200k_base tokens); a longer one is refused as OpenAI refuses it: HTTP 400,
            ``context_length_exceeded``.
    """

    def __init__(
        self,
        plans: Mapping[str, Plan] | None = None,
        *,
        name: str = OFFLINE_MODEL_NAME,
        context_window_tokens: int = DEFAULT_CONTEXT_WINDOW_TOKENS,
    ):
        if plans is None:
            from helpers.cases import load_plan_book

            plans = load_plan_book()
        self.plans = {normalize_prompt(p): check_plan(plan) for p, plan in plans.items()}
        self.name = name
        self.context_window_tokens = context_window_tokens

    def add_plan(self, prompt: str, plan: Plan) -> None:
        """Teach the model one more prompt."""
        self.plans[normalize_prompt(prompt)] = check_plan(plan)

    def next_message(
        self,
        messages: list[Mapping[str, Any]],
        persona: Persona = IDEAL,
        tools: Iterable[str] = (),
    ) -> dict[str, Any]:
        """The assistant message the plan calls for next, given the conversation so far and the
        names of the ``tools`` the request offers."""
        last_user = max(
            (i for i, m in enumerate(messages) if m.get("role") == "user"), default=None
        )
        if last_user is None:
            return _thinking(persona, {"role": "assistant", "content": "Please ask me something."})
        prompt = messages[last_user].get("content")
        if isinstance(prompt, list):
            prompt = " ".join(str(p.get("text", "")) for p in prompt if isinstance(p, dict))
        plan = self.plans.get(normalize_prompt(str(prompt or "")))
        if plan is None:
            return _thinking(persona, {"role": "assistant", "content": NO_PLAN_ANSWER})
        tool_results = {
            m.get("tool_call_id"): str(m.get("content") or "")
            for m in messages[last_user:]
            if m.get("role") == "tool"
        }
        steps = interpret(plan, persona, tools)
        try:
            wanted = next(steps)
            for message in messages[last_user + 1 :]:
                for call in message.get("tool_calls") or []:
                    name = call["function"]["name"]
                    if name != wanted.name:
                        return {
                            "role": "assistant",
                            "content": f"The offline reference model lost its place: its plan "
                            f"called {wanted.name} but the conversation shows {name}.",
                        }
                    call_id = call["id"]
                    wanted = steps.send(classify(call_id, tool_results.get(call_id, "")))
        except StopIteration as done:
            return _thinking(persona, {"role": "assistant", "content": str(done.value)})
        arguments = json.dumps(wanted.arguments, ensure_ascii=False)
        call_id = "0" if persona.numbers_ids_zero else "call_" + secrets.token_hex(12)
        return _thinking(
            persona,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": wanted.name, "arguments": arguments},
                    }
                ],
            },
        )

    def complete(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Answer a ``/chat/completions`` request body with a ``chat.completion`` object.

        The requested model name chooses the persona (:mod:`helpers.personas`):
        ``offline-reference:<persona>``; any other name is the ideal model.

        Raises:
            WireError: the request is malformed, breaks tool-call pairing, names an unknown
                persona, or (persona ``deepseek-thinking``) sends back an assistant message with
                tool calls but without its ``reasoning_content`` (HTTP 400, as DeepSeek does).
        """
        messages = request.get("messages")
        if not isinstance(messages, list) or not messages:
            raise WireError("'messages' must be a non-empty array")
        if request.get("stream"):
            raise WireError("the offline reference model does not stream; send stream=false")
        try:
            persona = persona_for_model(request.get("model"))
        except UnknownPersonaError as exc:
            raise WireError(str(exc)) from None
        _check_pairing(messages)
        if persona.thinks:
            _check_reasoning_sent_back(messages)
        tools = request.get("tools") or []
        prompt_tokens = count_chat_tokens(messages, tools)
        if prompt_tokens > self.context_window_tokens:
            raise ContextLengthExceeded(
                f"This model's maximum context length is {self.context_window_tokens} tokens. "
                f"However, your messages resulted in {prompt_tokens} tokens. Please reduce the "
                "length of the messages."
            )
        names = [t.get("function", {}).get("name", "") for t in tools if isinstance(t, dict)]
        message = self.next_message(messages, persona, names)
        completion_tokens = (
            count_tokens(message.get("content") or "")
            + count_tokens(message.get("reasoning_content") or "")
            + sum(
                count_tokens(c["function"]["name"]) + count_tokens(c["function"]["arguments"])
                for c in message.get("tool_calls") or []
            )
        )
        _log_usage(prompt_tokens, completion_tokens)
        return {
            "id": "chatcmpl-" + secrets.token_hex(12),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model") or self.name,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def respond(self, method: str, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
        """One HTTP exchange: ``(status, JSON body)`` for ``method path`` with ``body``."""
        path = path.split("?", 1)[0].rstrip("/")
        if method == "GET" and path.endswith("/models"):
            return 200, {"object": "list", "data": [{"id": self.name, "object": "model"}]}
        if method != "POST" or not path.endswith("/chat/completions"):
            return 404, _api_error(f"no route for {method} {path}", "not_found_error")
        try:
            request = json.loads(body or b"{}")
            if not isinstance(request, dict):
                raise WireError("the request body must be a JSON object")
            return 200, self.complete(request)
        except WireError as exc:
            return 400, _api_error(str(exc), "invalid_request_error", exc.code, exc.param)
        except ValueError as exc:  # PlanError and bad JSON alike
            return 400, _api_error(str(exc), "invalid_request_error")


#: Set to a file path, every answer's usage is appended there as one JSON line (the instructor
#: guide measures what each notebook costs this way).
USAGE_LOG_ENV = "WORKBOOK_USAGE_LOG"


def _log_usage(prompt_tokens: int, completion_tokens: int) -> None:
    path = os.environ.get(USAGE_LOG_ENV)
    if not path:
        return
    line = json.dumps({"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens})
    with open(path, "a", encoding="utf-8") as log:
        log.write(line + "\n")


def _thinking(persona: Persona, message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with a ``reasoning_content`` first, when the persona thinks aloud."""
    if not persona.thinks:
        return message
    calls = message.get("tool_calls") or []
    thought = (
        f"The plan's next step is a call to {calls[0]['function']['name']}."
        if calls
        else "I have what I need; time to answer."
    )
    return {"role": "assistant", "reasoning_content": thought, **message}


#: DeepSeek's answer when a thinking-mode tool call comes back without its reasoning.
REASONING_MISSING = (
    "Missing `reasoning_content` field in the assistant message at message index {index}. For "
    "more information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"
)


def _check_reasoning_sent_back(messages: list[Mapping[str, Any]]) -> None:
    """Reject, as DeepSeek's thinking mode does, an assistant message with tool calls that comes
    back without the ``reasoning_content`` it was sent with."""
    for index, message in enumerate(messages):
        if (
            message.get("role") == "assistant"
            and message.get("tool_calls")
            and message.get("reasoning_content") is None
        ):
            raise WireError(REASONING_MISSING.format(index=index))


def _api_error(
    message: str, kind: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


# -- plugging it into the openai client ---------------------------------------------------------


def offline_transport(model: OfflineModel | None = None) -> httpx2.MockTransport:
    """An ``httpx2`` transport that answers every request from ``model`` in-process."""
    model = model or OfflineModel()

    def handler(request: httpx2.Request) -> httpx2.Response:
        status, payload = model.respond(request.method, request.url.path, request.read())
        return httpx2.Response(status, json=payload)

    return httpx2.MockTransport(handler)


def offline_client(model: OfflineModel | None = None, *, max_retries: int = 0) -> openai.OpenAI:
    """A real ``openai.OpenAI`` client whose requests go to the offline model, in-process."""
    return openai.OpenAI(
        base_url=OFFLINE_BASE_URL,
        api_key="offline-no-key-needed",
        max_retries=max_retries,
        http_client=httpx2.Client(transport=offline_transport(model)),
    )


@dataclass(frozen=True)
class Fault:
    """One injected fault for the next ``/chat/completions`` request.

    ``kind``: ``status`` (answer ``status`` with an OpenAI-style error body, and a
    ``Retry-After`` header of ``retry_after_s`` seconds if given), ``delay`` (wait ``delay_s``
    seconds, then answer normally: a client with a shorter timeout gives up), ``drop`` (close
    the connection without an answer) or ``malformed`` (200 with a body that is not JSON).
    """

    kind: str
    status: int = 500
    retry_after_s: float | None = None
    delay_s: float = 0.0


class OfflineServer:
    """The offline model over real loopback HTTP (standard-library server, own thread).

    Use as a context manager; ``base_url`` is ``http://127.0.0.1:<port>/v1``. Only loopback
    addresses are accepted for ``host``. ``faults`` are served first, one per chat request, in
    order (see :class:`Fault`); ``chat_requests`` counts the chat requests received.
    """

    def __init__(
        self,
        model: OfflineModel | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        faults: list[Fault] | None = None,
    ):
        if not (host.startswith("127.") or host in ("localhost", "::1")):
            raise ValueError(f"the offline server only listens on loopback, not {host!r}")
        self.model = model or OfflineModel()
        self.faults: deque[Fault] = deque(faults or ())
        self.chat_requests = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _send(
                self, status: int, data: bytes, headers: dict[str, str] | None = None
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                fault = None
                if self.path.rstrip("/").endswith("/chat/completions"):
                    with outer._lock:
                        outer.chat_requests += 1
                        fault = outer.faults.popleft() if outer.faults else None
                if fault is not None and fault.kind == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if fault is not None and fault.kind == "malformed":
                    self._send(200, b'{"id": "chatcmpl-broken", "choices": [')
                    return
                if fault is not None and fault.kind == "status":
                    headers = {}
                    if fault.retry_after_s is not None:
                        headers["Retry-After"] = f"{fault.retry_after_s:g}"
                    error = _api_error(f"injected fault: HTTP {fault.status}", "server_error")
                    self._send(fault.status, json.dumps(error).encode(), headers)
                    return
                if fault is not None and fault.kind == "delay":
                    time.sleep(fault.delay_s)
                status, payload = outer.model.respond(self.command, self.path, body)
                # a client that gave up (its timeout) is gone; there is nobody to answer
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._send(status, json.dumps(payload).encode())

            do_GET = do_POST = _serve

            def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
                pass

        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> OfflineServer:
        self._thread.start()
        return self

    def serve_until_interrupted(self) -> None:
        """Block until Ctrl-C (the server keeps answering on its own thread meanwhile)."""
        with contextlib.suppress(KeyboardInterrupt):
            self._thread.join()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> OfflineServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
