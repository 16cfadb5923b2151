"""What the offline reference model does: its plans, carried out the way an ideal model would.

For each known prompt the offline model (:mod:`helpers.models.offline`) follows a short plan written
at the level of intent ("transcribe video 123", "pass result 1 to deep_check", "answer the
number at the end of result 1") and carries out each intent using only what it sees in the
messages:

- an inline value is copied;
- a truncated preview is fetched with ``fetch_tool_output`` when the needed part is not in it;
- an opaque reference (or resource link) is passed through unchanged, and looked inside (with
  whichever resolve tools the request offers: the five ``internal_resource_*`` or the one
  ``internal_resource``) only when a detail is needed;
- a result saved to a file (deepagents, Claude Code) is read back page by page or grepped with
  the tools that agent offers.

So one plan runs under every strategy and the token costs compare honestly.

**Plans** (the language is checked by :mod:`helpers.plans`) come from the ``offline_plan`` key of
the prompt cases in ``data/cases/``. A plan is a list of steps:

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

:func:`interpret` is a generator: it yields each tool :class:`Call`, receives what the model saw
of its result (:func:`classify`), and returns the answer text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from typing import Any

from helpers.context.anchors import NUMBERED_ROW_RE
from helpers.context.boxing import SCHEME
from helpers.context.preview import parse_preview
from helpers.context.read_back import Seen
from helpers.context.resolve_tools import OP_TOOL_NAMES
from helpers.context.strategies import read_back
from helpers.personas import IDEAL, Persona
from helpers.plans import Plan, PlanError

# -- what the model sees ------------------------------------------------------------------------


def classify(call_id: str, content: str) -> Seen:
    """Read a ``tool`` message the way an ideal model would: through the strategies' own
    readers (:func:`helpers.context.strategies.read_back`)."""
    return read_back(call_id, content)


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


#: The five resolve tools as operations of the one ``internal_resource`` tool.
_OP_OF_TOOL = {tool: op for op, tool in OP_TOOL_NAMES.items()}
#: The arguments the one tool names differently.
_RENAMED_ARGUMENTS = {
    "start_index": "start",
    "length": "count",
    "start_line": "start",
    "line_count": "count",
}


def _as_offered(call: Call, mind: _Mind) -> Call:
    """``call`` in the form the request offers: a five-tool resolve call becomes
    ``internal_resource(op=...)`` when that is the resolve tool offered."""
    if call.name not in _OP_OF_TOOL or call.name in mind.tools:
        return call
    if "internal_resource" not in mind.tools:
        return call
    op, renames = _OP_OF_TOOL[call.name], _RENAMED_ARGUMENTS
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
        if fetched.kind != "truncated":
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
        match = NUMBERED_ROW_RE.match(row)
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
    from helpers.context.anchors import DEEPAGENTS_PREVIEW_LINE_CHARS

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
    if seen.kind == "boxed":
        if mind.persona.reads_everything:  # reads what it only had to route, then copies it
            return (yield from _read(seen, mind))
        return seen.uri
    if seen.kind == "truncated":
        return (yield from _fetch_full(seen, mind))
    if seen.kind == "saved":
        return (yield from _file_all(seen, mind))
    return seen.content


def _read(seen: Seen, mind: _Mind) -> Step:
    """The full value, for the model to read."""
    if seen.call_id in mind.memory:
        return mind.memory[seen.call_id]
    if seen.kind == "boxed":
        got = yield from _call(Call("internal_resource_read", {"opaque_reference": seen.uri}), mind)
        mind.memory[seen.call_id] = _check_error(got, "internal_resource_read").content
        return mind.memory[seen.call_id]
    if seen.kind == "truncated":
        return (yield from _fetch_full(seen, mind))
    if seen.kind == "saved":
        return (yield from _file_all(seen, mind))
    return seen.content


def _tail(seen: Seen, chars: int, mind: _Mind) -> Step:
    if seen.kind == "boxed" and mind.persona.reads_everything:
        yield from _read(seen, mind)
    if seen.call_id in mind.memory:
        return mind.memory[seen.call_id][-chars:]
    if seen.kind == "boxed":
        got = yield from _call(
            Call(
                "internal_resource_read_slice",
                {"opaque_reference": seen.uri, "start_index": -chars, "length": chars},
            ),
            mind,
        )
        return _check_error(got, "internal_resource_read_slice").content
    if seen.kind == "truncated":
        return (yield from _fetch_full(seen, mind))[-chars:]
    if seen.kind == "saved":
        return (yield from _file_tail(seen, chars, mind))
    return seen.content[-chars:]


_GREP_LINE_RE = re.compile(r"^\d+: (.*)$")


def _find(seen: Seen, pattern: str, window: int, mind: _Mind) -> Step:
    """Lines matching ``pattern`` (with context when window > 0)."""
    if seen.kind == "boxed" and mind.persona.reads_everything:
        yield from _read(seen, mind)
    if seen.kind == "boxed" and seen.call_id not in mind.memory:
        got = yield from _call(
            Call(
                "internal_resource_grep",
                {"opaque_reference": seen.uri, "pattern": pattern, "window": window},
            ),
            mind,
        )
        text = _check_error(got, "internal_resource_grep").content
        return [m[1] for line in text.splitlines() if (m := _GREP_LINE_RE.match(line))]
    if seen.kind == "saved" and seen.call_id not in mind.memory:
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
    elif seen.kind == "truncated":
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
    if seen.kind in ("boxed", "saved") and seen.head and seen.call_id not in memory:
        # the head shown with a reference or a saved file's notice: a hit there needs no look
        hit = next((ln for ln in _visible_lines(seen.head, True) if regex.search(ln)), None)
        if hit is not None:
            return hit
    if seen.call_id in memory or seen.kind in ("inline", "truncated"):
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
        if previews_as_seen and seen.kind == "truncated":
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
            and (results[number - 1].kind == "truncated")
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
