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

**Plans** (the language is checked by :mod:`helpers.cases.plans`) come from the ``offline_plan`` key of
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

from helpers.cases.plans import Plan, PlanError
from helpers.context.anchors import NUMBERED_ROW_RE
from helpers.context.code_mode import RUN_PROGRAM
from helpers.context.read_back import ResultKind, Seen
from helpers.context.resolve_tools import OP_TOOL_NAMES
from helpers.context.strategies import read_back
from helpers.models.offline_program import program_for
from helpers.models.personas import IDEAL, Persona

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


def _failed(seen: Seen) -> bool:
    return seen.kind == "error"


def _check_error(seen: Seen, name: str) -> Seen:
    if _failed(seen):
        message = json.loads(seen.content)["error"]
        raise _Stop(f"I could not finish: the call to {name} returned an error: {message}")
    return seen


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
    """Make ``call``; a persona makes its mistake first (:meth:`Persona.wrong_arguments`), and
    corrects it if an error comes back (a mistake that goes through unrefused stands: the
    client's guard was missing)."""
    call = _as_offered(call, mind)
    persona = mind.persona
    wrong = persona.wrong_arguments(call.name, call.arguments, mind.once)
    if wrong is not None:
        seen = yield Call(call.name, wrong)
        if not _failed(seen) or not persona.corrects_after_error:
            return seen
    return (yield call)


# -- what a model does with each kind of result it sees -----------------------------------------

#: Lines an ideal model reads per call of a file-reading tool.
FILE_PAGE_LINES = 2_000
#: Claude Code's refusal of a read over its token limit: the read's tokens, and the limit.
_TOO_MANY_TOKENS_RE = re.compile(
    r"File content \((\d+) tokens\) exceeds maximum allowed tokens \((\d+)\)"
)
_GREP_ROW_RE = re.compile(r"^(?:.*?:)?(\d+):(.*)$")
_GREP_LINE_RE = re.compile(r"^\d+: (.*)$")
_NO_MATCH = "(no match)"


def _visible_lines(text: str, cut: bool) -> list[str]:
    """The whole lines of a preview (its last line is partial when the preview was cut)."""
    lines = text.splitlines()
    return lines[:-1] if cut and lines and not text.endswith("\n") else lines


def _matching_lines(value: str, pattern: str, window: int) -> list[str]:
    """The lines of ``value`` that match ``pattern``, each with ``window`` lines around it."""
    lines = value.splitlines()
    regex = re.compile(pattern)
    keep: set[int] = set()
    for i, line in enumerate(lines):
        if regex.search(line):
            keep.update(range(max(0, i - window), min(len(lines), i + window + 1)))
    return [lines[i] for i in sorted(keep)]


def _first_match(lines: Iterable[str], pattern: str) -> str | None:
    regex = re.compile(pattern)
    return next((line for line in lines if regex.search(line)), None)


class _View:
    """A result whose whole value is in the message (``inline``, ``middle``): copied and
    searched where it stands. Each subclass is what a model does with a result it sees only
    part of; :data:`_VIEWS` picks one by :attr:`Seen.kind`.

    Each intent is a step (:data:`Step`): a generator that yields the tool calls it needs and
    returns the value.
    """

    #: Whether the message shows a truncated preview (what ``passes-preview`` passes on).
    shows_preview = False

    def __init__(self, seen: Seen, mind: _Mind):
        self.seen, self.mind = seen, mind

    def known(self) -> str | None:
        """The full value, if the model has already fetched or read it this turn."""
        return self.mind.memory.get(self.seen.call_id)

    def remember(self, value: str) -> str:
        self.mind.memory[self.seen.call_id] = value
        return value

    def pass_on(self) -> Step:
        """The value to put in another tool's argument: the value, or what stands for it."""
        return (yield from self.read())

    def read(self) -> Step:
        """The full value, for the model to read."""
        return self.seen.content
        yield

    def tail(self, chars: int) -> Step:
        """The last ``chars`` characters of the value."""
        known = self.known()
        value = known if known is not None else (yield from self.read())
        return value[-chars:]

    def find(self, pattern: str, window: int) -> Step:
        """The lines that match ``pattern``, with ``window`` lines of context: all of them, so
        from the full value (a preview may hide further matches)."""
        known = self.known()
        value = known if known is not None else (yield from self.read())
        return _matching_lines(value, pattern, window)

    def first(self, pattern: str) -> Step:
        """The first line that matches ``pattern``: what the message shows is looked at first,
        and a hit there needs no tool call."""
        known = self.known()
        if known is not None:
            return _first_match(known.splitlines(), pattern) or _NO_MATCH
        hit = _first_match(self.in_sight(), pattern)
        if hit is not None:
            return hit
        return (yield from self.first_beyond_sight(pattern))

    def in_sight(self) -> list[str]:
        """The whole lines the message shows of the value."""
        return _visible_lines(self.seen.content, False)

    def first_beyond_sight(self, pattern: str) -> Step:
        """The first match in what the message does not show (here: nothing)."""
        return _NO_MATCH
        yield


class _PreviewView(_View):
    """A truncated preview and its marker: the rest is fetched with ``fetch_tool_output``."""

    shows_preview = True

    def read(self) -> Step:
        known = self.known()
        if known is not None:
            return known
        seen = self.seen
        while True:  # the strategy's reader says which id to fetch (Seen.uri)
            if seen.uri is None:
                raise ValueError(
                    f"a truncated result without the id to fetch: {seen.content!r:.80}"
                )
            fetched = yield from _call(
                Call("fetch_tool_output", {"tool_call_id": seen.uri}), self.mind
            )
            fetched = _check_error(fetched, "fetch_tool_output")
            if not _VIEWS[fetched.kind].shows_preview:
                break
            seen = fetched  # the fetch itself came back cut: chase the new marker, as a model would
        return self.remember(json.loads(fetched.content)["tool_output"])

    def in_sight(self) -> list[str]:
        shown = [self.seen.head, self.seen.tail]
        if not any(shown):
            return self.seen.content.splitlines()
        return [line for part in shown if part for line in _visible_lines(part, True)]

    def first_beyond_sight(self, pattern: str) -> Step:
        full = yield from self.read()
        return _first_match(full.splitlines(), pattern) or _NO_MATCH


class _LookInsideView(_View):
    """A result kept out of the context (a reference, a saved file): passed on as it is seen,
    looked inside with tools only for what the plan needs; the preview under it (``head``)
    is looked at first."""

    def in_sight(self) -> list[str]:
        return _visible_lines(self.seen.head, True) if self.seen.head else []

    def first_beyond_sight(self, pattern: str) -> Step:
        lines = yield from self.find(pattern, 0)
        return lines[0] if lines else _NO_MATCH


class _ReferenceView(_LookInsideView):
    """An opaque reference or a resource link: passed on unread, looked inside with the
    resolve tools the request offers."""

    def pass_on(self) -> Step:
        if self.mind.persona.reads_before_use():  # reads what it only had to route, then copies
            return (yield from self.read())
        return self.seen.uri

    def read(self) -> Step:
        known = self.known()
        if known is not None:
            return known
        got = yield from _call(
            Call("internal_resource_read", {"opaque_reference": self.seen.uri}), self.mind
        )
        return self.remember(_check_error(got, "internal_resource_read").content)

    def _read_first(self) -> Step:
        if self.mind.persona.reads_before_use():
            yield from self.read()

    def tail(self, chars: int) -> Step:
        yield from self._read_first()
        if self.known() is not None:
            return (yield from super().tail(chars))
        got = yield from _call(
            Call(
                "internal_resource_read_slice",
                {"opaque_reference": self.seen.uri, "start_index": -chars, "length": chars},
            ),
            self.mind,
        )
        return _check_error(got, "internal_resource_read_slice").content

    def find(self, pattern: str, window: int) -> Step:
        yield from self._read_first()
        if self.known() is not None:
            return (yield from super().find(pattern, window))
        got = yield from _call(
            Call(
                "internal_resource_grep",
                {"opaque_reference": self.seen.uri, "pattern": pattern, "window": window},
            ),
            self.mind,
        )
        text = _check_error(got, "internal_resource_grep").content
        return [m[1] for line in text.splitlines() if (m := _GREP_LINE_RE.match(line))]


class _SavedFileView(_LookInsideView):
    """A notice of a result saved to a file (deepagents, Claude Code): read back page by page
    or grepped with the tools that agent offers."""

    def _tools(self) -> tuple[str, str, bool]:
        """The read and grep tools offered, and whether read offsets count from 1 (Claude
        Code)."""
        if "Read" in self.mind.tools:
            return "Read", "Grep", True
        return "read_file", "grep", False

    page_lines = FILE_PAGE_LINES

    def _page(self, first_line: int, count: int | None = None) -> Step:
        """Lines ``first_line`` (from 1) onwards, at most ``count`` (default :attr:`page_lines`):
        ``(rows, more_may_follow)``. As a model reads the tool's answer: a read refused as too
        many tokens (Claude Code) is asked again for as many lines as its counts say fit (with a
        tenth to spare), and the smaller page kept;
        a read cut in the middle (deepagents' 80,000 characters) loses its last, partial line,
        which the next page starts with."""
        read, _, one_based = self._tools()
        offset = first_line if one_based else first_line - 1
        count = count or self.page_lines
        while True:
            got = yield from _call(
                Call(read, {"file_path": self.seen.uri, "offset": offset, "limit": count}),
                self.mind,
            )
            if _failed(got) and "exceeds file length" in got.content:
                return [], False
            refused = _TOO_MANY_TOKENS_RE.search(got.content) if _failed(got) else None
            if refused and count > 1:  # as many lines as fit, from the counts it names
                count = max(
                    1, min(count - 1, count * int(refused[2]) * 9 // (int(refused[1]) * 10))
                )
                self.page_lines = min(self.page_lines, count)
                continue
            break
        content = _check_error(got, read).content
        rows = _numbered_rows(content)
        if "[Output was truncated due to size limits." in content:
            return rows[:-1], True
        return rows, len(rows) >= count or "[cut at" in content

    def _grep(self, pattern: str, mode: str) -> Step:
        _, grep, one_based = self._tools()
        args: dict[str, Any] = {"pattern": pattern, "path": self.seen.uri}
        if one_based:
            args["output_mode"] = mode
        got = yield from _call(Call(grep, args), self.mind)
        return _check_error(got, grep).content

    def read(self) -> Step:
        """The whole saved file, read page by page (what a model must do to copy it)."""
        known = self.known()
        if known is not None:
            return known
        lines: list[str] = []
        next_line = 1
        while True:
            rows, more = yield from self._page(next_line)
            lines += [text for _, text in rows]
            if not rows or not more:
                break
            next_line = rows[-1][0] + 1
            if self.seen.total_lines is not None and next_line > self.seen.total_lines:
                break
        return self.remember("\n".join(lines))

    def _length(self) -> Step:
        """The number of lines of the saved file: from the notice, or a grep that counts them."""
        if self.seen.total_lines is not None:
            return self.seen.total_lines
        content = (yield from self._grep("^", "count")).strip()
        return int(content) if content.isdigit() else len(content.splitlines())

    def tail(self, chars: int) -> Step:
        """From the notice's tail if it shows the last ``chars`` whole, else from the last lines
        read."""
        from helpers.context.anchors import DEEPAGENTS_PREVIEW_LINE_CHARS

        if self.known() is not None:
            return (yield from super().tail(chars))
        tail = self.seen.tail
        whole = tail is not None and all(
            len(line) < DEEPAGENTS_PREVIEW_LINE_CHARS for line in tail.splitlines()
        )
        if tail is not None and whole and len(tail) >= chars:
            return tail[-chars:]
        total = yield from self._length()
        count = 50
        while True:
            first = max(total - count + 1, 1)
            rows, _ = yield from self._page(first, count)
            text = "\n".join(t for _, t in rows)
            if len(text) >= chars or first == 1:
                return text[-chars:]
            count *= 4

    def find(self, pattern: str, window: int) -> Step:
        if self.known() is not None:
            return (yield from super().find(pattern, window))
        content = yield from self._grep(pattern, "content")
        hits = [(int(m[1]), m[2]) for row in content.splitlines() if (m := _GREP_ROW_RE.match(row))]
        if window == 0:
            return [text for _, text in hits]
        wanted: set[int] = set()
        for n, _ in hits:
            wanted.update(range(max(1, n - window), n + window + 1))
        found: dict[int, str] = {}
        for n in sorted(wanted):
            if n not in found:
                rows, _ = yield from self._page(n, 2 * window + 1)
                found.update(rows)
        return [found[n] for n in sorted(wanted) if n in found]


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


#: What the model does with each kind of result (:data:`helpers.context.read_back.ResultKind`):
#: an error result is never looked at (the plan stops at it), so it reads as what it says.
_VIEWS: dict[ResultKind, type[_View]] = {
    "inline": _View,
    "middle": _View,
    "error": _View,
    "truncated": _PreviewView,
    "boxed": _ReferenceView,
    "saved": _SavedFileView,
}


def _view(seen: Seen, mind: _Mind) -> _View:
    return _VIEWS[seen.kind](seen, mind)


# -- answers ------------------------------------------------------------------------------------


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
        if name in mind.notes:  # a note, or (code mode) a result the program returned
            value: Any = mind.notes[name]
        elif name.startswith("result") and name[6:].isdigit():
            value = yield from _view(_result(mind.results, int(name[6:])), mind).read()
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


# -- the plan's steps ---------------------------------------------------------------------------


def _resolve_args(args: Any, mind: _Mind, *, previews_as_seen: bool = False) -> Step:
    """The plan's arguments with ``{result: N}`` filled in. With ``previews_as_seen``, a preview
    is passed on as it was seen, marker and all (the mistake of ``passes-preview``)."""
    if isinstance(args, dict) and set(args) == {"result"}:
        view = _view(_result(mind.results, args["result"]), mind)
        if previews_as_seen and view.shows_preview:
            return view.seen.content
        return (yield from view.pass_on())
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


def _uses_preview(args: Any, mind: _Mind) -> bool:
    """Whether the plan's arguments pass on a result the model sees as a truncated preview."""
    if isinstance(args, dict) and set(args) == {"result"}:
        number = args["result"]
        results = mind.results
        return (
            isinstance(number, int)
            and 1 <= number <= len(results)
            and _view(results[number - 1], mind).shows_preview
        )
    if isinstance(args, dict):
        return any(_uses_preview(v, mind) for v in args.values())
    if isinstance(args, list):
        return any(_uses_preview(v, mind) for v in args)
    return False


def _call_step(step: dict[str, Any], mind: _Mind) -> Step:
    """A ``call`` step: its arguments filled in, the call made, its result kept (a persona
    that passes previews may pass one on, once; a tool that ran on it keeps that result)."""
    plan_args = step.get("args", {})
    if _uses_preview(plan_args, mind) and mind.persona.passes_preview(mind.once):
        wrong = yield from _resolve_args(plan_args, mind, previews_as_seen=True)
        seen = yield Call(step["call"], wrong)
        if not _failed(seen):  # nothing refused it: the tool ran on a preview
            mind.results.append(seen)
            return
    args = yield from _resolve_args(plan_args, mind)
    seen = yield from _call(Call(step["call"], args), mind)
    mind.results.append(_check_error(seen, step["call"]))


def _note_step(step: dict[str, Any], mind: _Mind) -> Step:
    """A ``tail``, ``find``, ``first`` or ``read`` step: a note of part of a result."""
    if "tail" in step:
        view = _view(_result(mind.results, step["tail"]), mind)
        return (yield from view.tail(int(step.get("chars", 200))))
    if "find" in step:
        view = _view(_result(mind.results, step["find"]), mind)
        return (yield from view.find(step["pattern"], int(step.get("window", 0))))
    if "first" in step:
        return (yield from _view(_result(mind.results, step["first"]), mind).first(step["pattern"]))
    return (yield from _view(_result(mind.results, step["read"]), mind).read())


_NOTE_STEPS = ("tail", "find", "first", "read")


def _as_program(plan: Plan, mind: _Mind) -> Step:
    """Code mode: the whole plan as one program (:func:`helpers.models.offline_program.program_for`),
    run with ``run_program``; what it returns (read in full, through a reference if it was
    boxed) gives the answer its values."""
    seen = yield from _call(Call(RUN_PROGRAM, {"code": program_for(plan)}), mind)
    returned = yield from _view(_check_error(seen, RUN_PROGRAM), mind).read()
    try:
        values = json.loads(returned)
    except ValueError:
        raise _Stop(f"I could not read what my program returned: {returned[:200]}") from None
    mind.notes.update(values if isinstance(values, dict) else {})
    return (yield from _render_answer(plan[-1]["answer"], mind))


def _writes_programs(plan: Plan, mind: _Mind) -> bool:
    """Whether the model calls the plan's tools from a program: ``run_program`` is offered and
    none of the tools the plan calls is."""
    called = {step["call"] for step in plan if "call" in step}
    return RUN_PROGRAM in mind.tools and not called & mind.tools


def interpret(plan: Plan, persona: Persona = IDEAL, tools: Iterable[str] = ()) -> Step:
    """Carry out ``plan`` as ``persona``: yields each tool :class:`Call`, receives what the model
    saw of its result, and returns the final answer text. In code mode (``run_program`` offered
    in place of the plan's tools) the plan is one program."""
    mind = _Mind(persona, tools=frozenset(tools))
    try:
        if _writes_programs(plan, mind):
            return (yield from _as_program(plan, mind))
        for step in plan:
            if "call" in step:
                yield from _call_step(step, mind)
            elif any(key in step for key in _NOTE_STEPS):
                mind.notes[step["as"]] = yield from _note_step(step, mind)
            elif "answer" in step:
                return (yield from _render_answer(step["answer"], mind))
            else:
                raise PlanError(f"unknown plan step {step!r}")
    except _Stop as stop:
        return stop.answer
    raise PlanError("the plan ends without an answer step")
