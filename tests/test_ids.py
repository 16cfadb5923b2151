"""Content digests: a remembered digest is the digest of the text, whatever was hashed before."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.base import ids


def _fresh(text: str) -> tuple[str, str]:
    data = text.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest(), hashlib.sha256(data.rstrip(b"\n")).hexdigest()


@settings(max_examples=40, derandomize=True, deadline=None)
@given(
    st.text(st.characters(exclude_categories=()), min_size=1, max_size=30),
    st.integers(0, 3),
    st.booleans(),
)
def test_a_digest_is_the_texts_own_whether_remembered_or_not(piece, newlines, long) -> None:
    """Short and long texts (lone surrogates, final newlines), asked twice, then a text equal
    to it but made anew, then one that differs only in its last character: each its own
    digests, never a remembered one of another text."""
    size = ids.REMEMBER_DIGESTS_FROM_CHARS if long else 50
    text = (piece * (size // len(piece) + 1)) + "\n" * newlines
    assert ids.content_sha256_and_trimmed(text) == _fresh(text)
    assert ids.content_sha256_and_trimmed(text) == _fresh(text)  # remembered, when long
    assert ids.content_sha256(text) == _fresh(text)[0]
    anew = "".join(list(text))
    assert anew is not text and ids.content_sha256_and_trimmed(anew) == _fresh(text)
    other = text[:-1] + ("x" if text[-1] != "x" else "y")
    assert ids.content_sha256_and_trimmed(other) == _fresh(other)


def test_the_remembered_texts_are_bounded_in_characters_newest_kept() -> None:
    size = ids.REMEMBER_DIGESTS_FROM_CHARS
    texts = [str(i) * size for i in range(10)]
    for _ in range(ids.REMEMBERED_DIGEST_CHARS // size + 5):
        for text in texts:
            ids.content_sha256(text)
        texts = [t + "." for t in texts]  # new objects, new contents
    held = sum(len(text) for text, _, _ in ids._digests)
    assert held <= ids.REMEMBERED_DIGEST_CHARS
    newest = texts[-1][:-1]
    assert ids._digests[0][0] == newest
    huge = "z" * (ids.REMEMBERED_DIGEST_CHARS + 1)  # over the bound alone: never held
    assert ids.content_sha256(huge) == ids.content_sha256(huge) == _fresh(huge)[0]
    assert all(text is not huge for text, _, _ in ids._digests)
    assert ids._digests[0][0] == newest
