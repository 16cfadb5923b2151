"""Notebook 08's checkpoints: the bridge from a program to the tools, and a program that
returns only what the answer needs.

References: :func:`reference_bridge` (the rules of the notebook's TODO 1; the library's bridge is
:class:`helpers.loop.dispatch.ProgramCalls`, which adds the store, unboxing and the turn's caps)
and :func:`reference_report` (what the program of TODO 2 must return). TODO 2's answer is a
JavaScript program: each check runs it in the sandbox the library uses
(:func:`helpers.tooling.program_sandbox.run_program`), one fresh V8 isolate per input.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from helpers.course.checkpoint import (
    SHOWN_CHARS,
    Broken,
    Checkpoint,
    Property,
    around,
    attempt,
    attempt_or,
    differing,
    expect,
    first_difference,
    short,
)
from helpers.course.checks.inputs import nonce, texts
from helpers.tooling.program_sandbox import ProgramLimits, ProgramResult, run_program
from helpers.tooling.registry import ToolRegistry, tool_from_function

# -- TODO 1: the bridge -------------------------------------------------------------------------

#: Names a program may send that are not tools in reach: near names, JavaScript's own property
#: names (a bridge that looks names up on an object finds these), the empty name.
OUT_OF_REACH = ("Echo", "echo ", "run_sql", "", "constructor", "toString", "__proto__", "fail2")


def reference_bridge(
    tools: ToolRegistry, name: str, arguments_json: str, max_output_chars: int
) -> tuple[bool, str]:
    """What a program's call ``tools.<name>(args)`` gets back, by the rules of notebook 08's
    TODO 1: ``(True, output)``, or ``(False, message)`` for a name out of reach, arguments that
    are not a JSON object, a tool that raises, or an output over ``max_output_chars``
    characters (the tool ran; its output does not go in)."""
    if name not in tools:
        return False, f"no tool {name!r} is in this program's reach"
    try:
        arguments = json.loads(arguments_json)
    except ValueError as exc:
        return False, f"{name}: the arguments are not JSON ({exc})"
    if not isinstance(arguments, dict):
        return False, f"{name} takes a JSON object of arguments"
    try:
        output = tools.get(name).call(arguments)
    except Exception as exc:
        said = " ".join(str(exc).split())  # one line, however many the tool's message has
        return False, f"{name} failed: {said}"
    if len(output) > max_output_chars:
        return False, (
            f"{name} returned {len(output)} characters, over the limit of {max_output_chars}"
        )
    return True, output


class PageNotFound(Exception):
    """What a tool of one's own may raise: not a ``ValueError``, not even a ``RuntimeError``."""


#: What the spy's ``fail`` raises, by name: the kinds a real tool raises (``get_page``'s own
#: ``PageNotFound`` is none of the built-in ones).
FAILURES: dict[str, type[Exception]] = {
    "ValueError": ValueError,
    "RuntimeError": RuntimeError,
    "OSError": OSError,
    "KeyError": KeyError,
    "TimeoutError": TimeoutError,
    "PageNotFound": PageNotFound,
}


@dataclass
class SpyTools:
    """A registry of five tools that count their runs: ``echo(text)`` returns its text,
    ``shout(text)`` the same in capitals, ``count(text)`` an object (``call`` turns it into JSON
    text), ``ping()`` (no parameters) returns ``"pong"``, ``fail(text)`` raises ``fails_with``
    with a message of its own, followed by ``said`` (more lines, or nothing)."""

    fails_with: str = "ValueError"
    said: str = ""
    runs: list[str] = field(default_factory=list)
    marker: str = field(default_factory=nonce)

    def registry(self) -> ToolRegistry:
        runs, marker, error = self.runs, self.marker, FAILURES[self.fails_with]
        said = self.said

        def echo(text: str) -> str:
            """Return the text."""
            runs.append("echo")
            return text

        def shout(text: str) -> str:
            """Return the text in capitals."""
            runs.append("shout")
            return text.upper()

        def count(text: str) -> dict[str, int]:
            """Count the text's characters."""
            runs.append("count")
            return {"chars": len(text)}

        def ping() -> str:
            """Answer pong; takes no arguments."""
            runs.append("ping")
            return "pong"

        def fail(text: str) -> str:
            """Always fail."""
            runs.append("fail")
            raise error(f"the tool broke ({marker}){said}")

        return ToolRegistry(tool_from_function(fn) for fn in (echo, shout, count, ping, fail))


@dataclass(frozen=True)
class BridgeCase:
    name: str
    arguments_json: str
    max_output_chars: int
    fails_with: str = "ValueError"
    said: str = ""  # what fail's message has after its first line

    def shown(self) -> str:
        lines = self.said.count("\n") + 1
        raised = (
            f" (fail raises {self.fails_with}, its message {lines} line{'s' * (lines > 1)})"
            if self.name == "fail"
            else ""
        )
        return (
            f"bridge(tools, {self.name!r}, {short(self.arguments_json, 70)}, "
            f"max_output_chars={self.max_output_chars}){raised}"
        )

    def expected(self) -> tuple[bool, str]:
        """The reference's answer."""
        tools = SpyTools(self.fails_with, self.said).registry()
        return reference_bridge(tools, self.name, self.arguments_json, self.max_output_chars)


def _text_arguments(draw: Any) -> str:
    return json.dumps({"text": draw(texts(60))}, ensure_ascii=draw(st.booleans()))


@st.composite
def fitting_calls(draw: Any) -> BridgeCase:
    """A call of echo, shout, count or ping (no parameters: ``{}``) whose output fits the limit
    (now and then exactly)."""
    name = draw(st.sampled_from(["echo", "shout", "count", "ping"]))
    arguments = "{}" if name == "ping" else _text_arguments(draw)
    case = BridgeCase(name, arguments, 10**6)
    length = len(case.expected()[1])
    slack = draw(st.sampled_from([0, 0, 1, 50]))
    return BridgeCase(name, arguments, length + slack)


@st.composite
def overlong_calls(draw: Any) -> BridgeCase:
    """A call of echo whose output (a marker, then text) is longer than the limit, now and then
    by one character."""
    text = nonce() + draw(texts(60))
    cut = draw(st.sampled_from([1, 1, len(text)]))
    return BridgeCase("echo", json.dumps({"text": text}), len(text) - cut)


@st.composite
def unreachable_calls(draw: Any) -> BridgeCase:
    return BridgeCase(draw(st.sampled_from(OUT_OF_REACH)), _text_arguments(draw), 1_000)


#: Arguments that are not one JSON object: broken JSON, a list, a string, a number.
NOT_OBJECTS = ("{text: 1}", "", '["text"]', '"text"', "42", '{"text": "a"')
#: JSON values that are empty, zero or null, not objects either: code that reads them as no
#: arguments (``json.loads(arguments_json) or {}``) runs a tool without parameters.
EMPTY_NOT_OBJECTS = ("[]", "null", "0", '""', "false", "0.0")


@st.composite
def bad_argument_calls(draw: Any) -> BridgeCase:
    """Arguments that are not one JSON object (the empty, zero and null ones drawn apart), for a
    tool with a parameter or ``ping``, which has none."""
    arguments = st.one_of(st.sampled_from(EMPTY_NOT_OBJECTS), st.sampled_from(NOT_OBJECTS))
    return BridgeCase(draw(st.sampled_from(["echo", "shout", "ping"])), draw(arguments), 1_000)


#: One line of a tool's message: any characters but those that end a line.
_message_lines = st.text(
    st.characters(exclude_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=20
)


@st.composite
def failing_calls(draw: Any) -> BridgeCase:
    """A tool that raises (any kind of exception), or echo with arguments ``call`` refuses: one
    it does not take, or a text that is not a string."""
    kind = draw(st.sampled_from(["fail", "fail", "unknown argument", "wrong type"]))
    if kind == "fail":
        raised = draw(st.sampled_from(sorted(FAILURES)))
        # a message of one line, or (drawn apart) of several, as tools write them
        more = st.lists(_message_lines, min_size=1, max_size=3).map(
            lambda lines: "".join("\n" + line for line in lines)
        )
        said = draw(st.one_of(st.just(""), more))
        return BridgeCase("fail", _text_arguments(draw), 1_000, raised, said)
    if kind == "unknown argument":
        return BridgeCase("echo", json.dumps({"words": draw(texts(20))}), 1_000)
    return BridgeCase("echo", json.dumps({"text": draw(st.integers())}), 1_000)


def _digits(text: str) -> str:
    return re.sub(r"(?<=\d)[,_ ](?=\d{3})", "", text)


@dataclass
class _BridgeChecks:
    """TODO 1's checks of one attendee's ``bridge``."""

    bridge: Callable[[ToolRegistry, str, str, int], Any]

    def call(self, case: BridgeCase) -> tuple[Any, SpyTools]:
        spy = SpyTools(case.fails_with, case.said)
        got = attempt(
            self.bridge, spy.registry(), case.name, case.arguments_json, case.max_output_chars
        )
        return got, spy

    def same(self, case: BridgeCase) -> None:
        got, spy = self.call(case)
        want = case.expected()
        expect(
            got == want and len(spy.runs) == 1,
            f"{short(want)}; the tool run once",
            f"{short(got)}; the tool run {len(spy.runs)} time(s)",
        )

    def refused(
        self,
        case: BridgeCase,
        runs: int,
        *must_name: str,
        secret: str = "",
        one_line: bool = False,
    ) -> None:
        got, spy = self.call(case)
        pair = isinstance(got, tuple) and len(got) == 2 and isinstance(got[1], str)
        message = got[1] if pair else ""
        named = pair and all(_digits(n) in _digits(message) for n in must_name)
        clean = "Traceback" not in message and not (secret and secret in message)
        lines = len(message.splitlines())
        expect(
            pair
            and got[0] is False
            and named
            and clean
            and len(spy.runs) == runs
            and (lines <= 1 or not one_line),
            f"(False, a short message naming {', '.join(repr(n) for n in must_name)}"
            f"{', on one line' if one_line else ''}, none of the output); the tool run {runs} "
            "time(s)",
            f"{short(got)}{f' ({lines} lines)' if one_line and lines > 1 else ''}; the tool run "
            f"{len(spy.runs)} time(s)",
        )

    def too_long(self, case: BridgeCase) -> None:
        output = json.loads(case.arguments_json)["text"]
        marker = output[: len(nonce())]
        limits = (case.name, str(len(output)), str(case.max_output_chars))
        self.refused(case, 1, *limits, secret=marker)

    def unreachable(self, case: BridgeCase) -> None:
        self.refused(case, 0, case.name)

    def failing(self, case: BridgeCase) -> None:
        self.refused(case, 1 if case.name == "fail" else 0, case.name, one_line=True)


def check_bridge(bridge: Callable[[ToolRegistry, str, str, int], Any]) -> None:
    """Notebook 08, TODO 1: the attendee's ``bridge(tools, name, arguments_json,
    max_output_chars)`` against :func:`reference_bridge`.

    Raises:
        helpers.course.checkpoint.CheckpointFailed: a property did not hold.
        helpers.course.checkpoint.TodoNotWritten: the TODO is still its stub.
    """
    checks = _BridgeChecks(bridge)
    show = BridgeCase.shown
    Checkpoint(
        "08",
        1,
        "bridge",
        [
            Property(
                "a tool in reach, called with a JSON object of arguments, runs once and gives "
                "(True, its output), unchanged (the text call returns), when the output is at "
                "most max_output_chars characters",
                fitting_calls(),
                checks.same,
                show,
                terms=("(True, ", "unchanged", "at most max_output_chars", "once"),
                always=(
                    BridgeCase("echo", '{"text": ""}', 0),
                    BridgeCase("count", '{"text": "a"}', 12),
                ),
            ),
            Property(
                "a longer output does not go into the program: (False, a message naming the "
                "tool, the output's length and the limit, in characters, and holding none of "
                "the output)",
                overlong_calls(),
                checks.too_long,
                show,
                terms=("(False, ", "length", "limit", "none of the output"),
                always=(
                    BridgeCase("echo", '{"text": "zq"}', 1),
                    BridgeCase("echo", '{"text": "é"}', 0),
                ),
            ),
            Property(
                "a name that is not a tool in reach runs nothing: (False, a message naming it)",
                unreachable_calls(),
                checks.unreachable,
                show,
                terms=("runs nothing",),
                always=(BridgeCase("constructor", "{}", 10), BridgeCase("", "{}", 10)),
            ),
            Property(
                "arguments that are not one JSON object run nothing: (False, a message naming "
                "the tool)",
                bad_argument_calls(),
                checks.unreachable,
                show,
                terms=("JSON object",),
                always=(BridgeCase("echo", "[]", 10), BridgeCase("echo", "{text: 1}", 10)),
            ),
            Property(
                "a tool that raises, whatever it raises (or whose arguments call refuses), "
                "gives (False, a short message naming it, on one line however many lines the "
                "tool's message has, never a traceback), never an exception",
                failing_calls(),
                checks.failing,
                show,
                terms=("whatever it raises", "one line", "traceback", "never an exception"),
                always=(BridgeCase("fail", '{"text": ""}', 10, "PageNotFound"),),
            ),
        ],
    ).run()


# -- TODO 2: a program that returns only what the answer needs ---------------------------------

#: Lines a generated page is made of: with ERROR (once, twice, at either end), with the word in
#: other cases (not a match), and others.
PAGE_LINES = (
    "ERROR disk full",
    "2026-11-26 ERROR timeout ERROR retry",
    "error: lower case is not ERROR-free? ERROR",
    "an error in lower case",
    "Error: capitalised",
    "ERRORS plural",
    "ok",
    "",
    "warning: slow",
    'a "quoted" line with \\ backslashes',
    "ünïcödé 😀 ERROR",
    "  ERROR  indented, with  double spaces  ",
    "ERROR with a carriage return\r",
    "ERROR\u2028still the same line for split on \\n",
    "ERROR\vvertical tab\fform feed",
    "ERROR " + "long " * 60,
)
#: Pages whose first ERROR line a program that trims, cuts, re-splits or dedupes gets wrong.
EDGE_PAGES = (
    "ok\nan error\nError",
    "ERROR ERROR\nok\nERROR",
    "",
    "ERROR again\nok\nERROR again",
    "  ERROR  indented, with  double spaces  \nERROR",
    "ERROR with a carriage return\r\nERROR\u2028one line\nERROR\vtab",
    "ok\nERROR " + "long " * 60,
)
#: The longest return a page's report may be: the count, the first line, the JSON around them.
REPORT_SLACK_CHARS = 40


def reference_report(page: str) -> dict[str, Any]:
    """What the program of notebook 08's TODO 2 returns for ``page``: ``count``, the number of
    its lines (the text between two ``\\n``) that contain ``ERROR``, and ``first``, the first
    of them (``None``: there is none)."""
    matches = [line for line in page.split("\n") if "ERROR" in line]
    return {"count": len(matches), "first": matches[0] if matches else None}


@st.composite
def pages(draw: Any, max_lines: int = 60) -> str:
    lines = draw(st.lists(st.sampled_from(PAGE_LINES) | texts(40), max_size=max_lines))
    return "\n".join(lines) + draw(st.sampled_from(["", "\n"]))


#: URLs as a model or a page may give them: quotes, backslashes, a newline, a template's ${...}.
TRICKY_URLS = (
    " https://example.com/spaces around.log ",
    "https://example.com/cafe\u0301.log",
    "https://example.com/it's.log",
    'https://example.com/a"b.log',
    "https://example.com/back\\slash.log",
    "https://example.com/${tools}`.log",
    "https://example.com/line\nbreak.log",
    "https://example.com/</script>.log",
)
urls = st.sampled_from(TRICKY_URLS) | texts(30).map(lambda s: "https://example.com/" + s)


def _json(value: Any) -> str:
    """``value`` as the program sees it: JSON (accents as they are; the escaping is the view's)."""
    return json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True)
class ReportCase:
    url: str
    page: str

    def shown(self) -> str:
        lines = self.page.count("\n") + 1
        return (
            f"url {_json(self.url)}, a page of {lines} line{'s' * (lines > 1)}: "
            f"{around(_json(self.page), 0, 80)}"
        )


class PageHost:
    """The checks' host: one tool, ``get_page(url)``, serving ``case.page`` at ``case.url`` (an
    error for any other), recording each URL it was asked for."""

    def __init__(self, case: ReportCase) -> None:
        self.case, self.urls = case, []

    def tool_names(self) -> list[str]:
        return ["get_page"]

    def __call__(self, name: str, arguments_json: str) -> tuple[bool, str]:
        arguments = json.loads(arguments_json)
        url = arguments.get("url") if isinstance(arguments, dict) else None
        self.urls.append(url)
        if url != self.case.url:
            return False, f"get_page: no page at {_json(url)}"
        return True, self.case.page


#: The checks' programs get a short CPU-time limit (a page of this size takes milliseconds of
#: CPU): it counts the program's own work, so a correct program passes however busy the machine
#: is (issue 47: a room's load made a wall-clock limit refuse correct programs).
CHECK_LIMITS = ProgramLimits(cpu_time_limit_s=5.0)
#: A URL beside the case's, to find where a program writes its URL (where the two differ): its
#: first character is none a checked URL starts with.
OTHER_URL = "~other.log"
#: How much of a program, and of its error, a failure shows (one line holds both).
SHOWN_PROGRAM_CHARS, SHOWN_ERROR_CHARS = 60, 60


@dataclass
class _ReportChecks:
    """TODO 2's checks: the attendee's program, run in the sandbox on one generated page."""

    error_report_program: Callable[[str], str]

    def execute(self, case: ReportCase) -> tuple[str, ProgramResult, PageHost]:
        """The attendee's program for ``case.url``, run on ``case.page``, failed or not."""
        code = attempt(self.error_report_program, case.url)
        expect(isinstance(code, str), "the program's text (a str)", short(code))
        host = PageHost(case)
        return code, run_program(code, host, CHECK_LIMITS), host

    def failed(self, code: str, result: ProgramResult) -> str:
        """How the program failed, and the part of it to look at: the line its error names, or
        else where it writes its URL (where its text for another URL differs), or its start. A
        line break in the program shows as ``\\x0a`` (its ``\\n`` are two characters)."""
        error = (result.error or "").removeprefix("the program failed: ")
        line = re.search(r" \(program line (\d+)\)$", error)
        lines = code.split("\n")
        if line and 1 <= int(line.group(1)) <= len(lines):
            error, where = error[: line.start()], f"its line {line.group(1)}"
            part = around(lines[int(line.group(1)) - 1].strip(), 0, SHOWN_PROGRAM_CHARS)
        else:
            other = attempt_or(Exception, self.error_report_program, OTHER_URL)
            at = first_difference(code, other) if isinstance(other, str) else 0
            where = "its URL" if at else "its start"
            part = around(code, at, SHOWN_PROGRAM_CHARS, newline="\\x0a")
        return f"failed: {around(error, 0, SHOWN_ERROR_CHARS)}, at {where}: {part}"

    def run(self, case: ReportCase) -> tuple[ProgramResult, PageHost, Any]:
        code, result, host = self.execute(case)
        expect(
            result.ok,
            "the program runs to its end and returns {count, first}",
            f"it {self.failed(code, result)}",
        )
        try:
            value = json.loads(result.text)
        except ValueError:
            value = result.text
        return result, host, value

    def report(self, case: ReportCase) -> None:
        _, _, value = self.run(case)
        want = reference_report(case.page)
        if value != want:
            raise Broken(*differing(_json(want), _json(value), SHOWN_CHARS - 10))

    def only_the_report(self, case: ReportCase) -> None:
        result, host, _ = self.run(case)
        limit = len(json.dumps(reference_report(case.page))) + REPORT_SLACK_CHARS
        expect(
            len(result.text) <= limit and len(host.urls) == 1,
            f"one get_page call, and a return of at most {limit} characters",
            f"{len(host.urls)} call(s), a return of {len(result.text):,} characters",
        )

    def url_as_given(self, case: ReportCase) -> None:
        code, result, host = self.execute(case)
        if host.urls != [case.url]:
            want, got = differing(_json([case.url]), _json(host.urls), 60)
            raise Broken(
                f"one get_page call, with the url as given: {want}",
                f"get_page called with {got}"
                if host.urls
                else f"no get_page call: the program {self.failed(code, result)}",
            )
        self.run(case)  # and the program runs to its end


def check_error_report_program(error_report_program: Callable[[str], str]) -> None:
    """Notebook 08, TODO 2: the program ``error_report_program(url)`` writes, run in the
    sandbox on generated pages, against :func:`reference_report`.

    Raises:
        helpers.course.checkpoint.CheckpointFailed: a property did not hold.
        helpers.course.checkpoint.TodoNotWritten: the TODO is still its stub.
    """
    checks = _ReportChecks(error_report_program)
    long_page = "\n".join(["ok"] * 3_000 + ["ERROR at the end"])
    show = ReportCase.shown
    plain = "https://example.com/app.log"
    Checkpoint(
        "08",
        2,
        "error_report_program",
        [
            Property(
                "the program returns {count, first}: how many lines of the page contain "
                "ERROR (case matters; a line is the text between two \\n, each counted, "
                "repeated or not), and the first such line exactly as it is, or null when "
                "there is none",
                st.builds(ReportCase, st.just(plain), pages()),
                checks.report,
                show,
                terms=("count", "first", "null", "case matters", "exactly as it is"),
                examples=10,
                always=tuple(ReportCase(plain, page) for page in EDGE_PAGES),
            ),
            Property(
                "only that enters the context: one get_page call, and a return no longer than "
                "the report itself, however long the page",
                st.builds(ReportCase, st.just(plain), pages(max_lines=400)),
                checks.only_the_report,
                show,
                terms=("one get_page call", "however long the page"),
                examples=5,
                always=(ReportCase(plain, long_page),),
            ),
            Property(
                "the URL reaches get_page exactly as given, whatever it holds (quotes, "
                "backslashes, a line break, spaces, accents): written into the program as a "
                "JSON string",
                st.builds(ReportCase, urls, st.just("ERROR once")),
                checks.url_as_given,
                show,
                terms=("exactly as given", "JSON string"),
                examples=8,
                always=tuple(ReportCase(u, "ERROR once") for u in TRICKY_URLS),
            ),
        ],
    ).run()
