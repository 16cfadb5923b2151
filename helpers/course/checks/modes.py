"""Notebook 07's checkpoints: the schemas a mode offers, the guard at dispatch, and the dual
stream's summary for the model.

References: :data:`helpers.context.modes.MODES` and :func:`~helpers.context.modes.for_mode` (an
unknown mode is refused: a guard fails closed), and :func:`reference_summary`, the three rules of
the notebook's TODO 3 (a subset of :func:`helpers.context.dual_stream.summarize_for_model`).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from helpers.context.modes import MODES, for_mode
from helpers.course.checkpoint import (
    Checkpoint,
    Property,
    Raised,
    attempt,
    attempt_or,
    expect,
    short,
)
from helpers.course.checks.inputs import json_values, texts
from helpers.tooling.registry import ToolRegistry, tool_from_function

#: Tool names a generated registry draws from: the workbook's, two it does not know, and names
#: that are parts of whitelisted names ("check", "internal_resource") or differ only in case
#: ("Get_Page"): a whitelist matches whole names, exactly.
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
    "Get_Page",
)
KNOWN_MODES = tuple(MODES)
UNKNOWN_MODES = ("Explore", "EXPLORE", " explore", "explore ", "admin", "", "Operate")


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
    st.sampled_from(TOOL_NAMES), min_size=1, max_size=len(TOOL_NAMES), unique=True
)


@dataclass(frozen=True)
class ModeCase:
    names: list[str]
    mode: str

    def shown(self) -> str:
        return f"schemas_for_mode(registry of {self.names}, {self.mode!r})"


def check_schemas_for_mode(schemas_for_mode: Callable[[ToolRegistry, str], Any]) -> str:
    """Notebook 07, TODO 1: the attendee's ``schemas_for_mode(registry, mode)``.

    Raises:
        helpers.course.checkpoint.CheckpointFailed: a property did not hold.
    """

    def known(case: ModeCase) -> None:
        registry = SpyRegistry(case.names)
        want = for_mode(registry, case.mode).schemas()
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

    return Checkpoint(
        "07",
        1,
        "schemas_for_mode",
        [
            Property(
                "a known mode offers the schemas of exactly its whitelisted tools (every tool "
                "when the whitelist is None; names match exactly), in registry order",
                st.builds(ModeCase, registries, st.sampled_from(KNOWN_MODES)),
                known,
                ModeCase.shown,
                terms=("tool.schema()", "None", "registry order", "exactly", "another case"),
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


@st.composite
def guard_cases(draw: Any, modes: tuple[str, ...]) -> GuardCase:
    """A call naming a tool of the registry, or now and then that name in capitals (a forged
    name that a case-insensitive guard would let through to the real tool)."""
    names = draw(registries)
    name = draw(st.sampled_from(names))
    if draw(st.integers(0, 3)) == 3:
        name = name.upper()
    return GuardCase(names, draw(st.sampled_from(modes)), name, draw(texts(12)))


def _allowed(case: GuardCase) -> bool | None:
    if case.mode not in MODES:
        return None
    whitelist = MODES[case.mode]
    return whitelist is None or case.name in whitelist


def check_guarded_call(guarded_call: Callable[..., str]) -> str:
    """Notebook 07, TODO 2: the attendee's ``guarded_call(registry, mode, name, arguments)``:
    a tool outside the mode never runs.

    Raises:
        helpers.course.checkpoint.CheckpointFailed: a property did not hold.
    """

    def run(case: GuardCase) -> tuple[SpyRegistry, Any]:
        registry = SpyRegistry(case.names)
        arguments = {"text": case.text}
        return registry, attempt_or(
            Exception, guarded_call, registry, case.mode, case.name, arguments
        )

    def runs_allowed(case: GuardCase) -> None:
        registry, got = run(case)
        if isinstance(got, Exception):
            raise Raised(got)
        want = f"{case.name} ran with {case.text!r}"
        expect(got == want, f"the tool's result {want!r}", short(got))
        expect(registry.ran == [(case.name, case.text)], "the tool ran once", f"ran {registry.ran}")

    def refuses(case: GuardCase) -> None:
        registry, got = run(case)
        expect(
            not registry.ran,
            f"{case.name} never runs in mode {case.mode!r}",
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
            isinstance(error, str) and case.mode in error and case.name in error,
            f'a JSON error result {{"error": "…"}} naming the tool and the mode {case.mode!r}',
            short(got),
        )

    return Checkpoint(
        "07",
        2,
        "guarded_call",
        [
            Property(
                "a tool outside the mode (a name not on its whitelist exactly as written) is "
                "refused before it runs, with a JSON error result naming the tool and the mode",
                guard_cases(KNOWN_MODES).filter(lambda c: _allowed(c) is False),
                refuses,
                GuardCase.shown,
                terms=("before", "JSON error", "names the tool and the mode", "exactly as written"),
                examples=30,
            ),
            Property(
                "an unknown mode ('Explore', 'admin', '') runs nothing: a guard fails closed",
                guard_cases(UNKNOWN_MODES),
                refuses,
                GuardCase.shown,
                terms=("unknown mode", "fails closed"),
                examples=30,
            ),
            Property(
                "a tool the mode allows runs once, with the arguments as given, and its result "
                "comes back unchanged",
                guard_cases(KNOWN_MODES).filter(lambda c: _allowed(c) and c.name in c.names),
                runs_allowed,
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


@st.composite
def parts_results(draw: Any) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            parts.append({"type": "text", "text": draw(texts(120))})
        else:
            data = base64.b64encode(draw(st.binary(min_size=1, max_size=300))).decode()
            part = {"type": draw(st.sampled_from(["image", "audio", "resource"])), "data": data}
            if draw(st.booleans()):
                part["mimeType"] = draw(st.sampled_from(["image/png", "audio/wav"]))
            parts.append(part)
    return json.dumps({"content": parts}, ensure_ascii=draw(st.booleans()))


@st.composite
def object_results(draw: Any) -> str:
    """JSON objects that are not content parts; now and then one whose ``content`` field is a
    value other than a list (a plain field, summarised like any other)."""
    data = draw(
        st.dictionaries(texts(8), json_values(), max_size=7).filter(lambda d: "content" not in d)
    )
    if draw(st.booleans()):
        content = draw(json_values().filter(lambda v: not isinstance(v, list)))
        data = {"content": content, **data}
    return json.dumps(data)


objects = object_results()
others = st.one_of(
    texts(400), st.lists(st.integers(), max_size=60).map(json.dumps), st.just("{not json")
)


@dataclass(frozen=True)
class SummaryCase:
    result: str
    max_chars: int | None

    def shown(self) -> str:
        limit = "" if self.max_chars is None else f", max_chars={self.max_chars}"
        return f"summarize({short(self.result, 100)} [{len(self.result):,} chars]{limit})"


def summary_cases(results: Any) -> Any:
    return st.builds(SummaryCase, results, st.one_of(st.none(), st.integers(0, 120)))


def check_summarize(summarize: Callable[..., str]) -> str:
    """Notebook 07, TODO 3: the attendee's ``summarize(result, max_chars=300)`` against
    :func:`reference_summary`.

    Raises:
        helpers.course.checkpoint.CheckpointFailed: a property did not hold.
    """

    def same(case: SummaryCase) -> None:
        extra = () if case.max_chars is None else (case.max_chars,)
        want = reference_summary(case.result, *extra)
        got = attempt(summarize, case.result, *extra)
        limit = 300 if case.max_chars is None else case.max_chars
        expect(
            isinstance(got, str) and len(got) <= limit,
            f"at most {limit} characters",
            f"{len(got)} characters" if isinstance(got, str) else short(got),
        )
        expect(got == want, short(want), short(got))

    def prop(statement: str, results: Any, *terms: str) -> Property:
        return Property(statement, summary_cases(results), same, SummaryCase.shown, terms=terms)

    return Checkpoint(
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
            ),
            prop(
                "another JSON object: 'Result: ' and its first 4 fields as key=value, joined by "
                "', ', lists as '[N items]', other values cut to 40 characters",
                objects,
                "Result: ",
                "[N items]",
                "40 characters",
            ),
            prop(
                "anything else (text, a JSON list, invalid JSON): the text; every summary is cut "
                "to its first max_chars characters (300 by default)",
                others,
                "first max_chars characters",
                "300",
            ),
        ],
    ).run()
