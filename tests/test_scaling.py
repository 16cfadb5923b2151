"""The scaling run's documents: real text, whole lines, no line made up where files meet."""

from __future__ import annotations

from functools import lru_cache

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from helpers.evaluation.scaling import MAX_DOCUMENT_BYTES, _corpus, document
from helpers.tooling.pages import DOCUMENTS, serve_document


@lru_cache(maxsize=1)
def _real_lines() -> frozenset[str]:
    """Every line of every large document, as served."""
    texts = {name: serve_document(url) or "" for url, (name, _) in DOCUMENTS.items()}
    return frozenset(line for text in texts.values() for line in text.splitlines())


CORPUS_BYTES = len(_corpus())
FIRST_LINE = _corpus()[: _corpus().index(b"\n") + 1].decode()


@settings(derandomize=True, max_examples=25, deadline=None)
@given(st.integers(1, MAX_DOCUMENT_BYTES))
@example(1)
@example(len(FIRST_LINE) - 1)
@example(len(FIRST_LINE))
@example(CORPUS_BYTES)
@example(CORPUS_BYTES + 1)
@example(CORPUS_BYTES + 200)
@example(MAX_DOCUMENT_BYTES)
def test_a_document_is_the_whole_real_lines_that_fit(size: int) -> None:
    """Whole lines, each a line of a real document (the corpus repeats past 8.2 MB: no line of
    one file runs into the next's); as many as fit in ``size`` bytes, or the first line when
    none does."""
    text = document(size)
    data = text.encode()
    assert text.endswith("\n")
    assert set(text.splitlines()) <= _real_lines()
    if size < len(FIRST_LINE):
        assert text == FIRST_LINE
        return
    assert len(data) <= size
    repeated = _corpus() * (size // CORPUS_BYTES + 2)
    assert repeated.startswith(data)
    next_line_end = repeated.index(b"\n", len(data)) + 1
    assert next_line_end > size  # the next line would not have fitted


@pytest.mark.parametrize("size", [2.5, "100", True, None])
def test_a_size_that_is_no_int_is_a_type_error_naming_it(size) -> None:
    with pytest.raises(TypeError, match="size_bytes must be an int"):
        document(size)  # type: ignore[arg-type]


@pytest.mark.parametrize("size", [0, -1, MAX_DOCUMENT_BYTES + 1])
def test_a_size_out_of_range_is_a_value_error(size) -> None:
    with pytest.raises(ValueError, match="between 1 and"):
        document(size)
