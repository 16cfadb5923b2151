"""Notebook 07's checkpoints: the schemas a mode offers, the guard at dispatch, and the dual
stream's summary for the model.

References: :data:`helpers.context.modes.MODES` (:func:`reference_schemas`; an unknown mode is
refused: a guard fails closed), with :data:`CHECK_MODES` added while a check runs (a mode that
allows no tool among them), and :func:`reference_summary`, the three rules of the notebook's
TODO 3 (a subset of :func:`helpers.context.dual_stream.summarize_for_model`).
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from helpers.context.modes import MODES
from helpers.course.checkpoint import (
    Checkpoint,
    Property,
    Raised,
    attempt,
    attempt_or,
    expect,
    expect_same,
    short,
)
from helpers.course.checks.inputs import json_values, texts
from helpers.tooling.registry import ToolRegistry, tool_from_function

#: Tool names a generated registry draws from: the workbook's, two it does not know, and names
#: that are parts of whitelisted names ("check", "internal_resource"), hold one
#: ("run_sql_admin") or differ only in case ("Get_Page"): a whitelist matches whole names,
#: exactly.
TOOL_NAMES = (
    "yt_transcribe",
    "deep_check",
    "get_page",
    "run_sql",
    "google_drive_write_file",
    "fetch_tool_output",
    "internal_resource_grep",
    "plot_chart",
    "delete_everything",
    "check",
    "internal_resource",
    "run_sql_admin",
    "Get_Page",
)
#: Modes the checks add to :data:`MODES` while they run (then take away): a mode that allows no
#: tool at all (an empty whitelist is not ``None``: code that tests ``if not allowed`` opens it
#: to every tool), one tool, and two.
CHECK_MODES: dict[str, frozenset[str]] = {
    "quiet": frozenset(),
    "sql-only": frozenset({"run_sql"}),
    "publish": frozenset({"google_drive_write_file", "get_page"}),
    "review": frozenset({"deep_check", "internal_resource_grep"}),
}
#: Registries in which a name match by substring, either way, offers or runs a tool the mode
#: does not allow: checked before any generated one.
NEAR_NAMES = (
    (["run_sql_admin", "run_sql", "get_page"], "sql-only"),
    (["check", "deep_check", "internal_resource", "internal_resource_grep"], "review"),
)
KNOWN_MODES = (*MODES, *CHECK_MODES)
UNKNOWN_MODES = ("Explore", "EXPLORE", " explore", "explore ", "admin", "", "Operate", "Quiet")


@contextlib.contextmanager
def check_modes() -> Iterator[None]:
    """:data:`MODES` with :data:`CHECK_MODES` added while the block runs (the attendee's code
    reads the same dict), and as it was afterwards."""
    added = {name: tools for name, tools in CHECK_MODES.items() if name not in MODES}
    MODES.update(added)
    try:
        yield
    finally:
        for name in added:
            MODES.pop(name, None)


def reference_schemas(registry: ToolRegistry, mode: str) -> list[dict[str, Any]]:
    """The schemas a known mode offers, by the notebook's rule: every tool when the whitelist
    is ``None``, else the tools whose names are in it exactly, in registry order (for the
    workbook's modes the same as :func:`~helpers.context.modes.for_mode` on these tools, which
    are neither read-only nor model-only)."""
    allowed = MODES[mode]
    return [tool.schema() for tool in registry if allowed is None or tool.name in allowed]


class SpyRegistry(ToolRegistry):
    """A registry of tools that only record that they ran (``ran``: (name, text) pairs)."""

    def __init__(self, names: list[str]):
        self.ran: list[tuple[str, str]] = []
        super().__init__(self._tool(name) for name in names)

    def _tool(self, name: str) -> Any:
        def run(text: str = "") -> str:
            """A probe tool.

            Args:
                text: any text.
            """
            self.ran.append((name, text))
            return f"{name} ran with {text!r}"

        return tool_from_function(run, name=name)


registries = st.lists(
    st.sampled_from(TOOL_NAMES), min_size=0, max_size=len(TOOL_NAMES), unique=True
)


@dataclass(frozen=True)
class ModeCase:
    names: list[str]
    mode: str

    def shown(self) -> str:
        return f"schemas_for_mode(registry of {self.names}, {self.mode!r})"


def check_schemas_for_mode(schemas_for_mode: Callable[[ToolRegistry, str], Any]) -> None:
    """Notebook 07, TODO 1: the attendee's ``schemas_for_mode(registry, mode)``.

    Raises:
        helpers.course.checkpoint.CheckpointFailed: a property did not hold.
        helpers.course.checkpoint.TodoNotWritten: the TODO is still its stub.
    """

    def known(case: ModeCase) -> None:
        registry = SpyRegistry(case.names)
        want = reference_schemas(registry, case.mode)
        got = attempt(schemas_for_mode, registry, case.mode)
        names = [s.get("function", {}).get("name") if isinstance(s, dict) else s for s in got or []]
        expect(
            got == want,
            f"the schemas (tool.schema()) of {[s['function']['name'] for s in want]}",
            f"{short(names)}" if names != [s["function"]["name"] for s in want] else short(got),
        )

    def unknown(case: ModeCase) -> None:
        registry = SpyRegistry(case.names)
        got = attempt_or(Exception, schemas_for_mode, registry, case.mode)
        if isinstance(got, Exception):
            return  # refused: nothing offered
        names = [s.get("function", {}).get("name") if isinstance(s, dict) else s for s in got or []]
        expect(not got, "no tools (return [] or raise): an unknown mode fails closed", f"{names}")

    with check_modes():
        Checkpoint(
            "07",
            1,
            "schemas_for_mode",
            [
                Property(
                    "a known mode offers the schemas of exactly its whitelisted tools (every tool "
                    "when the whitelist is None, none when it is empty; names match exactly), in "
                    "registry order",
                    st.builds(ModeCase, registries, st.sampled_from(KNOWN_MODES)),
                    known,
                    ModeCase.shown,
                    terms=(
                        "tool.schema()",
                        "None",
                        "registry order",
                        "exactly",
                        "another case",
                        "empty whitelist",
                    ),
                    always=tuple(ModeCase(names, mode) for names, mode in NEAR_NAMES),
                ),
                Property(
                    "an unknown mode ('Explore', 'admin', '') offers nothing: a guard fails closed",
                    st.builds(ModeCase, registries, st.sampled_from(UNKNOWN_MODES)),
                    unknown,
                    ModeCase.shown,
                    terms=("unknown mode", "fails closed", "case"),
                    examples=30,
                ),
            ],
        ).run()


@dataclass(frozen=True)
class GuardCase:
    names: list[str]
    mode: str
    name: str
    text: str

    def shown(self) -> str:
        return (
            f"guarded_call(registry of {self.names}, {self.mode!r}, {self.name!r}, "
            f"{{'text': {short(self.text, 30)}}})"
        )


#: White space a forged name is padded with: a guard that strips the name lets it through.
PADDING = st.text(st.sampled_from(" \t\n\r"), min_size=1, max_size=2)


@st.composite
def guard_cases(draw: Any, modes: tuple[str, ...]) -> GuardCase:
    """A call naming a tool of the registry, or now and then that name in capitals or padded
    with white space (forged names that a guard comparing names loosely would let through to
    the real tool)."""
    names = draw(registries.filter(bool))
    name = draw(st.sampled_from(names))
    forged = draw(st.integers(0, 5))
    if forged == 4:
        name = name.upper()
    elif forged == 5:
        left = draw(st.one_of(st.just(""), PADDING))
        name = left + name + draw(st.one_of(st.just(""), PADDING) if left else PADDING)
    return GuardCase(names, draw(st.sampled_from(modes)), name, draw(texts(12)))


def _names(error: str, name: str) -> bool:
    """Whether ``error`` names the tool: as written, or as its repr writes it (a line break as
    backslash-n)."""
    return name in error or repr(name)[1:-1] in error


def _allowed(case: GuardCase) -> bool | None:
    if case.mode not in MODES:
        return None
    whitelist = MODES[case.mode]
    return whitelist is None or case.name in whitelist


class _GuardChecks:
    """The properties of notebook 07's ``guarded_call``, each run on one generated
    :class:`GuardCase` with a registry of probe tools that record whether they ran."""

    def __init__(self, guarded_call: Callable[..., str]):
        self.guarded_call = guarded_call

    def run(self, case: GuardCase) -> tuple[SpyRegistry, Any]:
        registry = SpyRegistry(case.names)
        arguments = {"text": case.text}
        return registry, attempt_or(
            Exception, self.guarded_call, registry, case.mode, case.name, arguments
        )

    def runs_allowed(self, case: GuardCase) -> None:
        registry, got = self.run(case)
        if isinstance(got, Exception):
            raise Raised(got)
        want = f"{case.name} ran with {case.text!r}"
        expect(got == want, f"the tool's result {want!r}", short(got))
        expect(registry.ran == [(case.name, case.text)], "the tool ran once", f"ran {registry.ran}")

    def refuses(self, case: GuardCase) -> None:
        registry, got = self.run(case)
        expect(
            not registry.ran,
            f"{case.name if case.name.isidentifier() else repr(case.name)} never runs in mode "
            f"{case.mode!r}",
            f"it ran: {registry.ran}",
        )
        if isinstance(got, Exception):
            if _allowed(case) is None:
                return  # an unknown mode may also be refused by an exception
            raise Raised(got)
        try:
            error = json.loads(got).get("error")
        except (TypeError, ValueError, AttributeError):
            error = None
        expect(
            isinstance(error, str) and case.mode in error and _names(error, case.name),
            f'a JSON error result {{"error": "…"}} naming the tool and the mode {case.mode!r}',
            short(got),
        )


def check_guarded_call(guarded_call: Callable[..., str]) -> None:
    """Notebook 07, TODO 2: the attendee's ``guarded_call(registry, mode, name, arguments)``:
    a tool outside the mode never runs.

    Raises:
        helpers.course.checkpoint.CheckpointFailed: a property did not hold.
        helpers.course.checkpoint.TodoNotWritten: the TODO is still its stub.
    """
    checks = _GuardChecks(guarded_call)
    with check_modes():
        Checkpoint(
            "07",
            2,
            "guarded_call",
            [
                Property(
                    "a tool outside the mode (a name not on its whitelist exactly as written, "
                    "or any name when the whitelist is empty) is refused before it runs, with a "
                    "JSON error result naming the tool and the mode",
                    guard_cases(KNOWN_MODES).filter(lambda c: _allowed(c) is False),
                    checks.refuses,
                    GuardCase.shown,
                    terms=(
                        "before",
                        "JSON error",
                        "names the tool and the mode",
                        "exactly as written",
                    ),
                    always=tuple(
                        GuardCase(names, mode, name, "x")
                        for names, mode in NEAR_NAMES
                        for name in names
                        if name not in CHECK_MODES[mode]
                    ),
                    examples=30,
                ),
                Property(
                    "an unknown mode ('Explore', 'admin', '') runs nothing: a guard fails "
                    "closed, with a JSON error result naming the tool and the mode, or an "
                    "exception",
                    guard_cases(UNKNOWN_MODES),
                    checks.refuses,
                    GuardCase.shown,
                    terms=("unknown mode", "fails closed", "names the tool and the mode"),
                    examples=30,
                ),
                Property(
                    "a tool the mode allows runs once, with the arguments as given, and its "
                    "result comes back unchanged",
                    guard_cases(KNOWN_MODES).filter(lambda c: _allowed(c) and c.name in c.names),
                    checks.runs_allowed,
                    GuardCase.shown,
                    terms=("registry.get(name).call(arguments)",),
                    examples=30,
                ),
            ],
        ).run()


# -- summarize ----------------------------------------------------------------------------------

MAX_FIELD_CHARS = 40
SUMMARY_FIELDS = 4


def reference_summary(result: str, max_chars: int = 300) -> str:
    """The three rules of notebook 07's TODO 3, in order:

    1. a JSON object whose ``content`` is a list of parts: each text part's ``text`` and, for
       any other part, ``[<mimeType, else type>, <N> bytes]`` with N the size of its base64
       ``data`` decoded; joined with newlines;
    2. any other JSON object: ``Result: `` then its first 4 fields as ``key=value`` joined by
       ``", "``, a list shown as ``[N items]``, any other value as ``str(value)`` cut to 40
       characters;
    3. anything else (plain text, a JSON list, a number): the text itself;

    each cut to its first ``max_chars`` characters.
    """
    try:
        data = json.loads(result)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("content"), list):
        lines = []
        for part in data["content"]:
            if part.get("type") == "text":
                lines.append(part["text"])
            else:
                size = len(base64.b64decode(part.get("data", "")))
                lines.append(f"[{part.get('mimeType', part.get('type'))}, {size} bytes]")
        return "\n".join(lines)[:max_chars]
    if isinstance(data, dict):

        def shown(value: Any) -> str:
            return (
                f"[{len(value)} items]" if isinstance(value, list) else str(value)[:MAX_FIELD_CHARS]
            )

        fields = list(data.items())[:SUMMARY_FIELDS]
        return ("Result: " + ", ".join(f"{k}={shown(v)}" for k, v in fields))[:max_chars]
    return result[:max_chars]


def parts_results(text_chars: int = 60) -> st.SearchStrategy[str]:
    """JSON objects whose ``content`` is a list of parts (none at all now and then): text parts
    of up to ``text_chars`` characters (the empty text too), and binary parts of 0 to 300 bytes,
    with or without a ``mimeType``, or without ``data`` at all."""

    @st.composite
    def build(draw: Any) -> str:
        parts: list[dict[str, Any]] = []
        for _ in range(draw(st.integers(0, 4))):
            if draw(st.booleans()):
                parts.append({"type": "text", "text": draw(texts(text_chars))})
                continue
            part: dict[str, Any] = {"type": draw(st.sampled_from(["image", "audio", "resource"]))}
            if draw(st.integers(0, 5)):  # now and then a part without data: 0 bytes
                part["data"] = base64.b64encode(draw(st.binary(max_size=300))).decode()
            if draw(st.booleans()):
                part["mimeType"] = draw(st.sampled_from(["image/png", "audio/wav"]))
            parts.append(part)
        return json.dumps({"content": parts}, ensure_ascii=draw(st.booleans()))

    return build()


@st.composite
def object_results(draw: Any) -> str:
    """JSON objects that are not content parts (the empty object too); now and then one whose
    ``content`` field is a value other than a list (a plain field, summarised like any other)."""
    data = draw(
        st.dictionaries(texts(8), json_values(), max_size=7).filter(lambda d: "content" not in d)
    )
    if draw(st.booleans()):
        content = draw(json_values().filter(lambda v: not isinstance(v, list)))
        data = {"content": content, **data}
    return json.dumps(data)


#: Results of each shape whose summary fits in 300 characters, so a missing cap never shows
#: under another rule's name (4 parts of 60 characters; 4 fields of 8 + 40; 250 characters).
objects = object_results()
#: JSON that is not an object: a list, a string (answered as the text itself, quotes and escapes
#: included, never decoded), a number, true, false, null.
json_others = st.one_of(
    st.lists(st.integers(-999, 999), max_size=30).map(json.dumps),
    texts(60).map(json.dumps),
    st.one_of(st.integers(), st.booleans(), st.none()).map(json.dumps),
)
others = st.one_of(texts(250), json_others, st.just("{not json"))
#: Results of every shape, long enough for any cap to cut.
SHAPES = {
    "content parts": parts_results(text_chars=400),
    "JSON object": objects,
    "plain text": texts(400, min_size=1),
    "other JSON": json_others,
}


#: A text part longer than a field's 40-character cut: a text part is given whole.
LONG_TEXT = "Chart generated: ISO 3166-2 subdivisions of Norway by type, 11 counties and 357 towns"


@st.composite
def capped_cases(draw: Any) -> SummaryCase:
    """A result of any shape (each as often as the others) and a cap that cuts its summary, so
    a path without the cap shows."""
    result = draw(st.sampled_from(sorted(SHAPES)).flatmap(SHAPES.__getitem__))
    full = len(reference_summary(result, 10**9))
    if full > 300 and draw(st.booleans()):
        return SummaryCase(result, None)  # the default cap, 300
    return SummaryCase(result, draw(st.integers(0, max(0, full - 1))))


@dataclass(frozen=True)
class SummaryCase:
    result: str
    max_chars: int | None

    def shown(self) -> str:
        limit = "" if self.max_chars is None else f", max_chars={self.max_chars}"
        return f"summarize({short(self.result, 100)} [{len(self.result):,} chars]{limit})"


def summary_cases(results: Any, caps: Any) -> Any:
    return st.builds(SummaryCase, results, caps)


#: Caps that never cut a result of the shapes above.
ROOMY = st.one_of(st.none(), st.integers(300, 2_000))


#: A text part longer than a field's cut, given whole (checked before any generated result).
LONG_TEXT_PART = SummaryCase(json.dumps({"content": [{"type": "text", "text": LONG_TEXT}]}), None)
#: Caps at the edges: one over the default, and caps smaller than every shape's summary.
CAP_EDGES = (
    SummaryCase("x" * 301, None),
    SummaryCase("plain text", 5),
    SummaryCase(json.dumps([1, 2, 3]), 2),
    SummaryCase(json.dumps({"a": 1}), 3),
    SummaryCase(json.dumps({"content": [{"type": "text", "text": "abc"}]}), 1),
)


def check_summarize(summarize: Callable[..., str]) -> None:
    """Notebook 07, TODO 3: the attendee's ``summarize(result, max_chars=300)`` against
    :func:`reference_summary`.

    Raises:
        helpers.course.checkpoint.CheckpointFailed: a property did not hold.
        helpers.course.checkpoint.TodoNotWritten: the TODO is still its stub.
    """

    def same(case: SummaryCase) -> None:
        extra = () if case.max_chars is None else (case.max_chars,)
        want = reference_summary(case.result, *extra)
        got = attempt(summarize, case.result, *extra)
        expect_same(want, got)

    def capped(case: SummaryCase) -> None:
        extra = () if case.max_chars is None else (case.max_chars,)
        got = attempt(summarize, case.result, *extra)
        limit = 300 if case.max_chars is None else case.max_chars
        expect(
            isinstance(got, str) and len(got) <= limit,
            f"at most {limit} characters",
            f"{len(got)} characters" if isinstance(got, str) else short(got),
        )
        same(case)

    def prop(statement: str, results: Any, *terms: str, always: tuple = ()) -> Property:
        cases = summary_cases(results, ROOMY)
        return Property(statement, cases, same, SummaryCase.shown, terms=terms, always=always)

    Checkpoint(
        "07",
        3,
        "summarize",
        [
            prop(
                "a result with content parts: the text parts, and '[<mimeType or type>, N bytes]' "
                "for each other part (N decoded), joined with newlines — never the data itself",
                parts_results(),
                "mimeType",
                "decoded",
                "newlines",
                always=(LONG_TEXT_PART,),
            ),
            prop(
                "another JSON object: 'Result: ' and its first 4 fields as key=value, joined by "
                "', ', lists as '[N items]', other values cut to 40 characters",
                objects,
                "Result: ",
                "[N items]",
                "40 characters",
            ),
            Property(
                "anything else (text, a JSON list, a JSON string, number or null, invalid "
                "JSON): the text itself, never decoded",
                summary_cases(others, ROOMY),
                same,
                SummaryCase.shown,
                terms=("anything else", "the text itself"),
                always=(SummaryCase(json.dumps("a\nb"), None), SummaryCase("null", None)),
            ),
            Property(
                "every summary, of every shape, is cut to its first max_chars characters (300 "
                "by default)",
                capped_cases(),
                capped,
                SummaryCase.shown,
                terms=("first max_chars characters", "300"),
                always=CAP_EDGES,
            ),
        ],
    ).run()
