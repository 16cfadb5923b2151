"""Unicode text that can be encoded: unpaired surrogates found and replaced.

A model's reply, a tool's output or a prompt may hold half of a cut emoji (an unpaired surrogate,
U+D800 to U+DFFF): Python holds it, but it is not Unicode text and UTF-8 cannot encode it, so a
store, a terminal or a provider would fail on it (the Unicode Standard, section 3.9).
"""

from __future__ import annotations

import re

_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """``text`` with every unpaired surrogate (half of a cut emoji; not Unicode text, so it cannot
    be encoded as UTF-8) replaced by U+FFFD, the replacement character."""
    if not has_unpaired_surrogate(text):
        return text
    return _SURROGATE_RE.sub("\ufffd", text)


def has_unpaired_surrogate(text: str) -> bool:
    """Whether ``text`` holds a character that cannot be encoded as UTF-8."""
    if text.isascii():  # CPython keeps this flag: no scan
        return False
    try:
        text.encode("utf-8")  # at C speed, where the regex scans in Python's regex engine
    except UnicodeEncodeError:  # raised for surrogates only
        return True
    return False
