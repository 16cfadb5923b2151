"""Token counts: a remembered count is the count tiktoken gives, for any text."""

from __future__ import annotations

import json
import os

from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.text.tokens import (
    REMEMBER_FROM_CHARS,
    REMEMBERED_SHORT_COUNTS,
    _count_short,
    _Counts,
    count_tokens,
    encoding,
)


def _fresh(text: str) -> int:
    return len(encoding().encode(text, disallowed_special=()))


@settings(max_examples=60, derandomize=True, deadline=None)
@given(
    st.text(st.characters(exclude_categories=()), min_size=1, max_size=40).map(
        lambda t: t * (REMEMBER_FROM_CHARS // len(t) + 1)
    ),
    st.integers(0, 3),
)
def test_a_remembered_count_is_the_fresh_count(text: str, trim: int) -> None:
    """Long texts (lone surrogates, special-token text included), asked twice, and a text that
    differs from a counted one by its last characters: never another text's count."""
    assert count_tokens(text) == count_tokens(text) == _fresh(text)
    shorter = text[: len(text) - trim] + "<|endoftext|>"
    assert count_tokens(shorter) == _fresh(shorter)


#: Texts of any length from empty to past :data:`REMEMBER_FROM_CHARS` (a short piece repeated
#: and cut), so both sides of the boundary between the two memories are drawn.
_ANY_LENGTH = st.text(st.characters(exclude_categories=()), max_size=40).flatmap(
    lambda piece: st.integers(0, REMEMBER_FROM_CHARS + 20).map(
        lambda n: (piece * (n // len(piece) + 1))[:n] if piece else ""
    )
)


@settings(max_examples=100, derandomize=True, deadline=None)
@given(_ANY_LENGTH)
def test_a_remembered_count_of_any_length_is_its_fresh_count(text: str) -> None:
    """Texts short and long (empty, lone surrogates, special-token text included), asked twice,
    and the same text with more after it: each its own count, whichever memory holds it."""
    assert count_tokens(text) == count_tokens(text) == _fresh(text)
    longer = text + "<|endoftext|>"
    assert count_tokens(longer) == _fresh(longer)
    assert count_tokens(text) == _fresh(text)


#: Texts to count part by part: lines, each a word between what may end a line and what may
#: begin the next, around every kind of line break. Every break is a place :func:`parts_for_counting`
#: may cut, and what is on either side is what o200k_base's expression treats apart there
#: (``/``, which a run of punctuation takes past a break; whitespace of every kind, Python's
#: and Unicode's; letters, contractions, digits, marks, astral and special-token text).
_LINE_ENDS = st.sampled_from(
    ["", ".", ";", "...", ")", "'s", "a", "Z", "7", " ", "\t", "😀", "\\", "/", "\ud800"]
)
_BREAKS = st.sampled_from(["\n", "\n\n", "\r\n", " \n", "\n\r", "\r"])
_LINE_STARTS = st.sampled_from(
    [
        "",
        "/",
        "//",
        "/usr",
        " ",
        "  ",
        "\t",
        "\x0b",
        "\x0c",
        "\x1c",
        "\x85",
        "\u2028",
        "\u3000",
        "\xa0",
        "a",
        "Word",
        "WORD",
        "'s",
        "'",
        "1",
        "1234",
        "é",
        "\u0301",
        "日本",
        ".",
        "(",
        "-",
        "<|endoftext|>",
        "0020;SPACE;Zs;0;WS;;;;;N;;;;;",
        # whitespace of other kinds, then another break: one match from break to break
        "\u2028\n",
        "\x85\n",
        "\u3000 \n",
        "\xa0\r\n",
        "\x0b\n",
        "\x1c\n",
    ]
)
_LINES = st.lists(
    st.tuples(
        _LINE_ENDS,
        _BREAKS,
        _LINE_STARTS,
        # words and spaces: a space is a place to cut too (JSON text has no line breaks)
        st.sampled_from(["", "x", "abc def", " x", "  x", "a  b", "\t x", ". x", "'s s", "1 2"]),
    ),
    max_size=12,
).map(lambda lines: "".join("".join(line) for line in lines))


@settings(max_examples=300, derandomize=True, deadline=None)
@given(_LINES)
def test_counted_part_by_part_a_text_has_the_count_of_the_whole(text: str) -> None:
    """:func:`parts_for_counting` cutting at every place it may (after a line break, before a
    space): the parts are the text, and their tokens, one part after the other, are tiktoken's
    of the whole (so their counts add up)."""
    import helpers.text.tokens as tokens

    whole = _fresh(text)
    saved = tokens.PART_CHARS, tokens.CUT_EVERY
    tokens.PART_CHARS, tokens.CUT_EVERY = 1, 1  # a cut at every place the rule allows
    try:
        parts = tokens.parts_for_counting(text)
    finally:
        tokens.PART_CHARS, tokens.CUT_EVERY = saved
    assert "".join(parts) == text
    # the parts' tokens, one after the other, are the whole's: not only as many
    tokens_of = [encoding().encode(part, disallowed_special=()) for part in parts]
    joined = [token for part in tokens_of for token in part]
    assert joined == encoding().encode(text, disallowed_special=()), (
        f"parts {parts!r} give {joined}, the whole {whole} tokens"
    )


def test_a_long_document_counted_in_parts_has_its_whole_count_and_its_prefixes_reuse_them() -> None:
    """The scaling run's largest document (10 MB): its count is tiktoken's of the whole, and a
    shorter document, its beginning, is counted from the parts the longer one remembered."""
    from helpers.evaluation.scaling import document
    from helpers.text.tokens import PART_CHARS, parts_for_counting

    long, short = document(3_000_000), document(1_000_000)
    assert long.startswith(short) and len(parts_for_counting(long)) > 10
    counts = _Counts(size=1_000)
    assert counts.count(long) == _fresh(long)
    held = len(counts.counts)
    assert counts.count(short) == _fresh(short)
    assert len(counts.counts) == held + 1  # only its last part was new
    assert all(len(p) >= PART_CHARS for p in parts_for_counting(long)[:-1])
    # the document inside a tool's JSON result: another beginning, then the same parts
    wrapped = [json.dumps({"size": n, "tool_output": short}) for n in (1, 10_000)]
    counts.count(wrapped[0])
    held = len(counts.counts)
    assert counts.count(wrapped[1]) == _fresh(wrapped[1])
    assert len(counts.counts) - held <= 2  # its first part, and at most the one after


def test_the_short_memory_is_bounded() -> None:
    for i in range(REMEMBERED_SHORT_COUNTS + 10):
        count_tokens(f"short text number {i}")
    assert _count_short.cache_info().currsize == REMEMBERED_SHORT_COUNTS
    assert count_tokens("short text number 0") == _fresh("short text number 0")


def test_the_memory_is_bounded_and_least_recently_used_goes_first() -> None:
    counts = _Counts(size=2)
    a, b, c = ("a " * 600, "b " * 600, "c " * 600)
    counts.count(a)
    counts.count(b)
    counts.count(a)  # a is now the most recent
    counts.count(c)  # b goes
    assert len(counts.counts) == 2
    assert counts.count(b) == _fresh(b) and len(counts.counts) == 2


def test_a_runs_ids_do_not_depend_on_the_runs_before_it(tmp_path) -> None:
    """Under reproducible ids, a case run under a strategy gets the same ids, and so the same
    token counts, whatever ran before it: adding a strategy to a comparison moves no other row
    (issue 50). The same run twice in one block gets ids of its own (no collision)."""
    from helpers import ToolOutputStore, load_cases, offline_client, run_case
    from helpers.base.ids import reproducible_ids

    (case,) = [c for c in load_cases() if c.id == "case1"]
    client = offline_client()

    def box_run(before: list[str], db: str) -> tuple[str, int]:
        store = ToolOutputStore(f"sqlite:///{tmp_path / db}")
        with reproducible_ids(7):
            for strategy in before:
                run_case(case, strategy, client=client, model="offline-reference", store=store)
            run = run_case(case, "box", client=client, model="offline-reference", store=store)
            again = run_case(case, "box", client=client, model="offline-reference", store=store)
        assert again.record.thread_id != run.record.thread_id
        return run.record.thread_id, run.record.usage()["prompt_tokens"]

    assert box_run([], "a.sqlite") == box_run(["inline", "truncate"], "b.sqlite")


# -- the parsed table kept on disk ---------------------------------------------------------------


def test_the_parsed_table_is_read_back_only_when_intact(tmp_path) -> None:
    """What :func:`_write_parsed` wrote is read back as it was; a file cut short, a changed
    byte, another header or another shape (with a digest that matches it) reads as nothing, so
    the table is parsed again; a folder that cannot be written keeps nothing and raises
    nothing, and no temporary file is left behind."""
    import hashlib
    import marshal

    from helpers.text.tokens import (
        PARSED_DIGEST_BYTES,
        PARSED_MAGIC,
        _read_parsed,
        _write_parsed,
        encoding_arguments,
    )

    arguments = encoding_arguments()
    path = tmp_path / "table.marshal"
    _write_parsed(path, arguments)
    assert _read_parsed(path) == arguments and path.stat().st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["table.marshal"]
    blob = path.read_bytes()

    def reads_as_nothing(data: bytes) -> bool:
        path.write_bytes(data)
        return _read_parsed(path) is None

    assert reads_as_nothing(blob[: len(blob) // 2])
    assert reads_as_nothing(blob[:-1] + bytes([blob[-1] ^ 1]))
    assert reads_as_nothing(b"x" + blob[1:])
    assert reads_as_nothing(b"")
    path.write_bytes(blob)
    path.chmod(0o664)  # a table its group may write: its ranks could be anyone's
    assert _read_parsed(path) is None
    path.chmod(0o644)
    assert _read_parsed(path) == arguments
    for shape in ([1, 2], {**arguments, "name": "cl100k_base"}, {"name": "o200k_base"}):
        payload = marshal.dumps(shape)
        digest = hashlib.blake2b(payload, digest_size=PARSED_DIGEST_BYTES).digest()
        assert reads_as_nothing(PARSED_MAGIC + digest + payload)
    assert _read_parsed(tmp_path / "missing.marshal") is None
    _write_parsed(tmp_path / "no-such-folder" / "table.marshal", arguments)  # nothing raised
    (tmp_path / "a-folder.marshal").mkdir()
    _write_parsed(tmp_path / "a-folder.marshal", arguments)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-folder.marshal", "table.marshal"]


def test_a_damaged_parsed_table_is_parsed_again_and_counts_stay_exact(tmp_path) -> None:
    """In fresh processes: the first load parses tiktoken's file and keeps the table; the next
    reads it back; a damaged table is parsed again and replaced; the counts never change."""
    import shutil
    import subprocess
    import sys

    from helpers.text.tokens import O200K_CACHE_KEY, ensure_encoding_cache, parsed_encoding_path

    cache = tmp_path / "tiktoken"
    cache.mkdir()
    shutil.copy(ensure_encoding_cache() / O200K_CACHE_KEY, cache / O200K_CACHE_KEY)
    code = (
        "from helpers.text import tokens\n"
        "text = 'Hello, world! naive cafe ' * 3 + 'naïve café 🧪'\n"
        "counts = tokens.count_tokens(text), tokens.count_tokens('Hello, world!')\n"
        "table = tokens.parsed_encoding_path(tokens.ensure_encoding_cache())\n"
        "print(tokens._read_parsed(table) is not None, *counts)\n"
    )
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(cache), "WORKBOOK_VAR_DIR": str(tmp_path)}

    def run() -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        )
        return done.stdout.split()

    text = "Hello, world! naive cafe " * 3 + "naïve café 🧪"
    counts = [str(count_tokens(text)), str(count_tokens("Hello, world!"))]
    table = parsed_encoding_path(cache)
    assert not table.exists()
    assert run() == ["True", *counts] and table.exists()  # kept by the first load
    assert run() == ["True", *counts]
    table.write_bytes(table.read_bytes()[:1000])
    assert run() == ["True", *counts]  # parsed again, and replaced
    assert len(table.read_bytes()) > 1_000_000
