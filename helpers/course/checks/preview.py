"""Notebook 03's checkpoints: the preview with its truncation marker, and ``fetch_tool_output``.

The references are :func:`helpers.context.preview.make_preview` and
:func:`helpers.context.resolve_tools.fetch_tool_output` (whose unknown-id refusal the notebook's
version answers as a JSON error result instead).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from helpers.context import preview as reference
from helpers.context.resolve_tools import fetch_tool_output as library_fetch
from helpers.course.checkpoint import Broken, Checkpoint, Property, attempt, expect, short
from helpers.course.checks.inputs import (
    arguments,
    blanks,
    lined_texts,
    nonce,
    padded,
    scratch_store,
    texts,
)
from helpers.course.checks.inputs import outputs as all_outputs  # `outputs` is a parameter here
from helpers.store.tool_outputs import ToolOutputStore
from helpers.tooling.registry import ToolContext

call_ids = st.from_regex(r"call_[A-Za-z0-9_-]{1,20}", fullmatch=True)


@dataclass(frozen=True)
class PreviewCase:
    """An output, the call's id and a limit in characters (``None``: the default)."""

    output: str
    tool_call_id: str
    limit: int | None

    def shown(self) -> str:
        limit = "" if self.limit is None else f", limit={self.limit}"
        return (
            f"make_preview({short(self.output, 70)} [{len(self.output):,} chars], "
            f"{self.tool_call_id!r}{limit})"
        )


def _around_the_limit(draw: Any) -> PreviewCase:
    limit = draw(st.integers(0, 40))
    length = draw(st.integers(max(0, limit - 2), limit + 3))
    output = draw(st.one_of(texts(length, min_size=length), lined_texts(length), padded(length)))
    return PreviewCase(output, draw(call_ids), limit)


def _default_limit(draw: Any) -> PreviewCase:
    length = draw(st.sampled_from([0, 599, 600, 601, 650, 2_000]))
    unit = draw(st.one_of(texts(4, min_size=1), st.text(blanks, min_size=1, max_size=2)))
    return PreviewCase((unit * length)[:length], draw(call_ids), None)


def check_make_preview(make_preview: Callable[..., str]) -> None:
    """Notebook 03, TODO 1: the attendee's ``make_preview(output, tool_call_id, limit=600)``
    against :func:`helpers.context.preview.make_preview`.

    Raises:
        helpers.course.checkpoint.CheckpointFailed: a property did not hold.
        helpers.course.checkpoint.TodoNotWritten: the TODO is still its stub.
    """

    def same(case: PreviewCase) -> None:
        limit = () if case.limit is None else (case.limit,)
        want = reference.make_preview(case.output, case.tool_call_id, *limit)
        got = attempt(make_preview, case.output, case.tool_call_id, *limit)
        if got == want:
            return
        at = next(
            (i for i, (a, b) in enumerate(zip(want, got, strict=False)) if a != b),
            min(len(want), len(got) if isinstance(got, str) else 0),
        )
        start = max(0, at - 30)
        cut = "…" if start else ""  # the window starts 30 characters before the first difference
        expect(
            False,
            f"{cut}{short(want[start : at + 50])} ({len(want)} chars)",
            f"{cut}{short(got[start : at + 50])} ({len(got)} chars)"
            if isinstance(got, str)
            else short(got),
        )

    short_case = st.composite(_around_the_limit)()
    return Checkpoint(
        "03",
        1,
        "make_preview",
        [
            Property(
                "an output of at most `limit` characters comes back unchanged",
                short_case.filter(lambda c: len(c.output) <= (c.limit or 0)),
                same,
                PreviewCase.shown,
                terms=("at most", "unchanged"),
            ),
            Property(
                "a longer output: its first `limit` characters, then the truncation marker "
                "' ...[+N chars. full output: fetch_tool_output(tool_call_id='…')]' "
                "with N the hidden characters",
                short_case,
                same,
                PreviewCase.shown,
                terms=("first `limit` characters", "leading space", "hidden"),
                examples=100,
                # thousands of characters hidden (N written as digits only), a limit of 0
                always=(PreviewCase("é" * 1_205, "call_1", 5), PreviewCase("ab", "call_1", 0)),
            ),
            Property(
                "the default limit is 600 characters",
                st.composite(_default_limit)(),
                same,
                PreviewCase.shown,
                terms=("600",),
                examples=20,
                always=(PreviewCase("a" * 2_000, "call_1", None), PreviewCase("", "call_1", None)),
            ),
        ],
    ).run()


# -- fetch_tool_output --------------------------------------------------------------------------


@dataclass(frozen=True)
class FetchCase:
    """A stored call and the id asked for; ``other_output`` is stored under the same id in
    another thread."""

    tool_call_id: str
    tool_name: str
    tool_args: dict[str, Any]
    output: str
    other_output: str
    asked: str

    def shown(self) -> str:
        return (
            f"this thread stored {self.tool_call_id!r} → {short(self.output, 50)} "
            f"[{len(self.output):,} chars], another stored {self.asked!r} → "
            f"{short(self.other_output, 30)}; "
            f"fetch_tool_output(store, thread_id, {self.asked!r})"
        )

    def shown_alone(self) -> str:
        """The input when no other thread logged the id."""
        return (
            f"this thread stored {self.tool_call_id!r} → {short(self.output, 50)} with "
            f"arguments {short(self.tool_args, 40)}; "
            f"fetch_tool_output(store, thread_id, {self.asked!r})"
        )


def fetch_cases(
    asked: st.SearchStrategy[str] | None = None, outputs: st.SearchStrategy[str] | None = None
) -> Any:
    """Stored calls and the id asked for (``None``: the stored call's own), with outputs of any
    size unless ``outputs`` says otherwise."""
    values = all_outputs() if outputs is None else outputs

    @st.composite
    def build(draw: Any) -> FetchCase:
        call_id = draw(call_ids)
        return FetchCase(
            call_id,
            draw(st.sampled_from(["yt_transcribe", "get_page", "run_sql"])),
            draw(arguments()),
            draw(values),
            draw(values),
            call_id if asked is None else draw(asked),
        )

    return build()


class _FetchChecks:
    """The properties of notebook 03's ``fetch_tool_output``, each run on one generated
    :class:`FetchCase` stored in a scratch store (its id logged by another thread too)."""

    def __init__(self, fetch_tool_output: Callable[..., str], store: ToolOutputStore):
        self.fetch_tool_output = fetch_tool_output
        self.store = store

    def fetched(self, case: FetchCase, decoy: bool = True) -> tuple[str, Any]:
        self.store.clear_outputs()  # the store holds this input's rows, no others
        thread, other = f"thread_{nonce()}", f"thread_{nonce()}"
        if decoy:  # another thread holds the asked id too: a lookup by id alone finds it first
            self.store.log_tool(other, case.asked, case.tool_name, {}, case.other_output)
        self.store.log_tool(thread, case.tool_call_id, case.tool_name, case.tool_args, case.output)
        text = attempt(self.fetch_tool_output, self.store, thread, case.asked)
        try:
            return thread, json.loads(text)
        except (TypeError, ValueError):
            raise Broken("JSON text (json.dumps of an object)", short(text)) from None

    def answer(self, case: FetchCase, decoy: bool = True) -> tuple[dict[str, Any], Any]:
        thread, got = self.fetched(case, decoy)
        context = ToolContext(store=self.store, thread_id=thread)
        want = json.loads(library_fetch(context, case.asked).text)
        expect(isinstance(got, dict), "a JSON object", short(got))
        return want, got

    def shape(self, case: FetchCase) -> None:
        want, got = self.answer(case, decoy=False)  # the thread's scope is the next rules'

        for key in ("tool_name", "tool_args"):
            expect(
                got.get(key) == want[key],
                f"{key!r}: {short(want[key], 60)}",
                f"{key!r}: {short(got.get(key), 60)}",
            )

    def whole_output(self, case: FetchCase) -> None:
        want, got = self.answer(case)
        expect(
            got.get("tool_output") == want["tool_output"],
            f'"tool_output": the stored output, {len(want["tool_output"]):,} chars, '
            f"{short(want['tool_output'], 40)}",
            _output_shown(got),
        )

    def unknown(self, case: FetchCase) -> None:
        _, got = self.fetched(case)
        error = got.get("error") if isinstance(got, dict) else None
        expect(
            isinstance(error, str) and "no tool call with id" in error,
            '{"error": "no tool call with id …"} for an id this thread never logged',
            short(got),
        )


def check_fetch_tool_output(fetch_tool_output: Callable[..., str]) -> None:
    """Notebook 03, TODO 2: the attendee's ``fetch_tool_output(store, thread_id, tool_call_id)
    -> str`` against the library's, on outputs of any size (over 16,384 characters an output
    lives in chunks).

    Raises:
        helpers.course.checkpoint.CheckpointFailed: a property did not hold.
        helpers.course.checkpoint.TodoNotWritten: the TODO is still its stub.
    """
    with scratch_store("fetch") as store:
        checks = _FetchChecks(fetch_tool_output, store)
        return Checkpoint(
            "03",
            2,
            "fetch_tool_output",
            [
                Property(
                    "the answer is JSON text of an object: the tool's name and its arguments "
                    "parsed back from JSON text (a dict, not the stored text)",
                    fetch_cases(outputs=texts(20)),
                    checks.shape,
                    FetchCase.shown_alone,
                    terms=("json.loads(row.tool_args)", "JSON text"),
                    examples=15,
                ),
                Property(
                    "this thread's full output comes back character for character, at any size "
                    "(over 16,384 characters it is stored in chunks), whatever another thread "
                    "logged under the same id",
                    fetch_cases(),
                    checks.whole_output,
                    FetchCase.shown,
                    terms=("16,384", "chunks", "with_content=True"),
                    examples=25,
                ),
                Property(
                    "an id this thread never logged is a JSON error result "
                    '{"error": "no tool call with id …"}, not an exception — even when another '
                    "thread logged it",
                    fetch_cases(call_ids).filter(lambda c: c.asked != c.tool_call_id),
                    checks.unknown,
                    FetchCase.shown,
                    terms=("no tool call with id", "another thread"),
                    examples=15,
                ),
            ],
        ).run()


def _output_shown(got: dict[str, Any]) -> str:
    """What an attendee's ``tool_output`` was: its length in characters when it is text, else
    what it is (missing, ``None``, another type)."""
    if "tool_output" not in got:
        return 'no "tool_output" key'
    value = got["tool_output"]
    if not isinstance(value, str):
        return f'"tool_output": {short(value, 40)} (a {type(value).__name__}, not the text)'
    return f'"tool_output": {len(value):,} chars, {short(value, 40)}'
