"""internal_resource_grep reads lines a block at a time: the block prefilter must never change
which lines match, whatever the text and the pattern."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.context import resolve_tools
from helpers.context.resolve_tools import grep_text

#: Line ends str.splitlines knows, and characters that sit next to them in real text.
LINE_ENDS = ["\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\u2028"]
TEXT = st.lists(
    st.one_of(
        st.sampled_from(["a", "b", "ab", " ", "x1", "_", "é", "-"]), st.sampled_from(LINE_ENDS)
    ),
    max_size=60,
).map("".join)
#: Pattern pieces that behave differently alone and inside a block: anchors, word boundaries,
#: whitespace (which matches a line end), flags, and the ones the prefilter must skip.
PIECES = [
    "a",
    "b",
    "ab",
    "^",
    "$",
    r"\b",
    r"\B",
    r"\s",
    ".",
    "a*",
    "b+",
    "(?i)A",
    "(?s).",
    r"\A",
    r"\z",
    "(?-m)^a",
    "[^a]",
    "(?:a|b)",
]
PATTERN = st.lists(st.sampled_from(PIECES), min_size=1, max_size=4).map("".join)


def _line_by_line(text: str, pattern: str, window: int, monkeypatch: pytest.MonkeyPatch) -> str:
    with monkeypatch.context() as patched:
        patched.setattr(resolve_tools, "_block_pattern", lambda pattern: None)
        return grep_text(text, pattern, window)


@settings(derandomize=True, max_examples=400, deadline=None)
@given(text=TEXT, pattern=PATTERN, window=st.integers(0, 2), block=st.integers(1, 4))
def test_blocks_find_the_lines_a_line_by_line_grep_finds(
    text: str, pattern: str, window: int, block: int
) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(resolve_tools, "GREP_BLOCK_LINES", block)
        expected = _line_by_line(text, pattern, window, monkeypatch)
        got = grep_text(text, pattern, window)
    assert got == expected, f"pattern {pattern!r} on {text!r}: expected {expected!r}, got {got!r}"


def test_a_block_without_a_match_costs_one_search_not_one_per_line(monkeypatch) -> None:
    """The point of blocks: 10,000 lines with one match are searched in about 40 calls."""
    calls = []

    class Counting:
        def __init__(self, regex):
            self.regex = regex

        def search(self, text):
            calls.append(text)
            return self.regex.search(text)

    real_compile = resolve_tools.compile_grep_pattern
    real_block = resolve_tools._block_pattern
    monkeypatch.setattr(resolve_tools, "compile_grep_pattern", lambda p: Counting(real_compile(p)))
    monkeypatch.setattr(resolve_tools, "_block_pattern", lambda p: Counting(real_block(p)))
    lines = [f"line {i}: nothing here" for i in range(10_000)]
    lines[7_777] = "line 7777: the needle"
    out = grep_text("\n".join(lines), "needle", 0)
    assert out == "Lines 7778-7778:\n7778: line 7777: the needle"
    blocks = -(-10_000 // resolve_tools.GREP_BLOCK_LINES)
    assert len(calls) == blocks + resolve_tools.GREP_BLOCK_LINES
