"""Generated inputs shared by the checkpoints: text that is not ASCII, long outputs, scratch
stores."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from hypothesis import strategies as st

from helpers.base import ids
from helpers.base.paths import var_dir
from helpers.store.database import sqlite_file
from helpers.store.schema import CHUNK_CHARS
from helpers.store.tool_outputs import ToolOutputStore

#: Characters that break code written for ASCII, one line or bytes: accents (2 UTF-8 bytes), an
#: emoji (4 bytes, 1 character), CJK, CRLF line ends, quotes, backticks, a NUL.
TRICKY_CHARS = "aZ9 é😀中\r\n\t\"'`{}[]\\:/\x00"

chars = st.one_of(st.sampled_from(TRICKY_CHARS), st.characters(exclude_categories=("Cs",)))


def texts(max_size: int = 40, min_size: int = 0) -> st.SearchStrategy[str]:
    """Short text of any characters (no lone surrogates), the tricky ones often."""
    return st.text(chars, min_size=min_size, max_size=max_size)


#: White space: code that strips an output, or takes a blank one for no output, changes it.
blanks = st.sampled_from(" \t\r\n\u00a0\u3000")


def padded(length: int, core: int = 4) -> st.SearchStrategy[str]:
    """Text of exactly ``length`` characters: white space only, or a text of at most ``core``
    characters with white space around it (its stripped length is not its length)."""
    return st.builds(
        lambda pad, text, left: (pad[:left] + text + pad)[:length],
        st.text(blanks, min_size=length, max_size=length),
        texts(core),
        st.integers(0, length),
    )


def lined_texts(length: int) -> st.SearchStrategy[str]:
    """Text of exactly ``length`` characters made of CRLF-ended lines ("ab\\r\\nab\\r\\n…"): code
    that normalises line ends, or splits and re-joins lines, changes it."""
    return st.builds(lambda line: ((line + "\r\n") * (length + 1))[:length], texts(6))


def long_texts() -> st.SearchStrategy[str]:
    """Text longer than the store's chunk (:data:`CHUNK_CHARS` characters): a head, then a
    repeated unit; such an output lives in chunks, not in ``ToolOutput.content``."""
    return st.builds(
        lambda head, unit, tail: head + unit * (CHUNK_CHARS // len(unit) + 1) + tail,
        texts(20),
        texts(8, min_size=1),
        texts(20),
    )


def outputs() -> st.SearchStrategy[str]:
    """A tool output: usually short, sometimes empty, sometimes over the chunk size."""
    return st.one_of(texts(60), long_texts())


def json_values(max_leaves: int = 6) -> st.SearchStrategy[object]:
    """Any JSON value (text keys, no NaN)."""
    leaves = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**6), 10**6),
        st.floats(allow_nan=False, allow_infinity=False, width=32),
        texts(12),
    )
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(texts(6), inner, max_size=3)
        ),
        max_leaves=max_leaves,
    )


def arguments() -> st.SearchStrategy[dict[str, object]]:
    """A tool call's arguments: a JSON object."""
    return st.dictionaries(texts(8), json_values(), max_size=3)


def nonce() -> str:
    """A fresh suffix: ids of one generated input never collide with another's."""
    return ids.token_urlsafe(6)


@contextlib.contextmanager
def scratch_store(label: str) -> Iterator[ToolOutputStore]:
    """A new, empty store in its own SQLite file under ``var/checkpoints/``, deleted afterwards."""
    folder = var_dir() / "checkpoints"
    folder.mkdir(exist_ok=True)
    url = f"sqlite:///{folder / f'{label}-{nonce()}.sqlite'}"
    store = ToolOutputStore(url)  # the tables are created (through Alembic)
    try:
        yield store
    finally:
        store.close()
        path = sqlite_file(url)
        if path is not None:
            for leftover in (
                path,
                path.with_name(path.name + "-wal"),
                path.with_name(path.name + "-shm"),
            ):
                leftover.unlink(missing_ok=True)
