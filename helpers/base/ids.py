"""Ids: unguessable by default, reproducible on request (for figures that must not drift).

Reference ids and tool-call ids travel in the messages, so their characters change token counts
by a few tokens from run to run. Everything the workbook measures for the README is run under
:func:`reproducible_ids`, which draws ids from a seeded generator so the same run gives the same
figures. Nothing else uses it: ids are ``secrets`` tokens, unguessable, everywhere else.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import random
import secrets
import threading
from collections import deque
from collections.abc import Iterator

_seeded: random.Random | None = None
#: Within :func:`reproducible_ids`: its seed, and how often each key of :func:`ids_for` was used.
_seed: int | None = None
_uses: dict[str, int] = {}


#: Texts of at least this many characters have their digests remembered for a while
#: (:func:`content_sha256_and_trimmed`); a shorter one is hashed for less than the lookup.
REMEMBER_DIGESTS_FROM_CHARS = 1 << 16
#: How many characters of long texts, at most, are held for their digests (the newest first;
#: an older text goes when a newer one would pass this; a longer text is never held).
REMEMBERED_DIGEST_CHARS = 1 << 24
_digests: deque[tuple[str, str, str]] = deque()  # (text, sha256, sha256 without final \n)
_digests_lock = threading.Lock()


def content_sha256(text: str) -> str:
    """SHA-256 (hex) of a string's UTF-8 bytes, lone surrogates kept (the one hash of a value's
    content: the store's ``sha256``, the agent's sink checks and ``deep_check`` all use it)."""
    if len(text) >= REMEMBER_DIGESTS_FROM_CHARS:
        return content_sha256_and_trimmed(text)[0]
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def content_sha256_and_trimmed(text: str) -> tuple[str, str]:
    """:func:`content_sha256` of ``text`` and of ``text`` without its final newlines (``"\\n"``),
    in one pass over the bytes: a sink check tells a copy that lost or gained only a final
    newline from one that differs in its content.

    A long text's digests are remembered with the text itself, held until newer long texts
    take its place (:data:`REMEMBERED_DIGEST_CHARS`): one output is hashed by the store, by the
    turn's sink checks and by the tool it is passed to, and a 10 MB output cost 15 ms of CPU
    each time. A text is found by identity (``is``): an equal text made anew is hashed again,
    and nothing another object says about itself is trusted."""
    if len(text) >= REMEMBER_DIGESTS_FROM_CHARS:
        with _digests_lock:
            for held, digest, trimmed in _digests:
                if held is text:
                    return digest, trimmed
    data = text.encode("utf-8", "surrogatepass")
    newlines = 0
    while newlines < len(data) and data[-1 - newlines] == 0x0A:
        newlines += 1
    hashing = hashlib.sha256(memoryview(data)[: len(data) - newlines])
    trimmed = hashing.hexdigest()
    hashing.update(b"\n" * newlines)
    digest = hashing.hexdigest()
    if REMEMBER_DIGESTS_FROM_CHARS <= len(text) <= REMEMBERED_DIGEST_CHARS:
        with _digests_lock:
            _digests.appendleft((text, digest, trimmed))
            held_chars = sum(len(held) for held, _, _ in _digests)
            while held_chars > REMEMBERED_DIGEST_CHARS:
                held_chars -= len(_digests.pop()[0])
    return digest, trimmed


def token_hex(nbytes: int) -> str:
    """``nbytes`` random bytes as hex (``secrets.token_hex`` unless ids are reproducible)."""
    if _seeded is None:
        return secrets.token_hex(nbytes)
    return _seeded.randbytes(nbytes).hex()


def token_urlsafe(nbytes: int) -> str:
    """``nbytes`` random bytes as URL-safe base64 without padding (like ``secrets.token_urlsafe``)."""
    if _seeded is None:
        return secrets.token_urlsafe(nbytes)
    return base64.urlsafe_b64encode(_seeded.randbytes(nbytes)).rstrip(b"=").decode("ascii")


def argument_safe_token(nbytes: int) -> str:
    """:func:`token_urlsafe`, drawn again while it starts with ``-``: an id a user types as a
    command-line argument (``workbook outputs show ID``) must not read as an option. The first
    character keeps 63 of its 64 values, so the id loses under 0.03 bits of its
    ``8 × nbytes``."""
    while True:
        token = token_urlsafe(nbytes)
        if not token.startswith("-"):
            return token


@contextlib.contextmanager
def reproducible_ids(seed: int) -> Iterator[None]:
    """Within the block, ids come from ``random.Random(seed)``: the same run, the same ids.

    For measurements only (use a fresh store: the same ids would collide with an earlier run's).
    """
    global _seeded, _seed, _uses
    previous = _seeded, _seed, _uses
    _seeded, _seed, _uses = random.Random(seed), seed, {}
    try:
        yield
    finally:
        _seeded, _seed, _uses = previous


@contextlib.contextmanager
def ids_for(key: str) -> Iterator[None]:
    """Within :func:`reproducible_ids`, the block's ids come from a generator of its own, seeded
    by the run's seed, ``key`` (e.g. ``"case3/box/offline-reference"``) and how often ``key``
    was used before: one run's ids, and so its token counts, do not depend on the runs before
    it (adding a strategy to a comparison moves no other row: issue 50). Elsewhere it does
    nothing: ids stay ``secrets`` tokens."""
    global _seeded
    if _seed is None:
        yield
        return
    uses = _uses[key] = _uses.get(key, 0) + 1
    previous, _seeded = _seeded, random.Random(f"{_seed}:{key}:{uses}")
    try:
        yield
    finally:
        _seeded = previous
