"""Secrets out of every message: an API key a provider echoes back is never shown or stored.

Some providers repeat the key they were sent in an error ("Incorrect API key provided:
sk-…"), whole or in part. :func:`redact` replaces the key, and any run of key-like characters
that shares 12 or more consecutive characters with it, by ``[redacted]``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from urllib.parse import quote

REDACTED = "[redacted]"
#: The shortest piece of a secret that is still treated as the secret.
MIN_SECRET_FRAGMENT_CHARS = 12
#: Shorter "secrets" (a placeholder such as "k" or "none") are not API keys: left alone.
MIN_SECRET_CHARS = 8
_KEYLIKE_RE = re.compile(r"[A-Za-z0-9_\-.+/=:]{" + str(MIN_SECRET_FRAGMENT_CHARS) + ",}")


def _shares_fragment(word: str, secret: str) -> bool:
    n = MIN_SECRET_FRAGMENT_CHARS
    fragments = {secret[i : i + n] for i in range(len(secret) - n + 1)}
    return any(word[i : i + n] in fragments for i in range(len(word) - n + 1))


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every secret (also URL-encoded or JSON-escaped, and every key-like word
    holding 12+ characters of one) replaced by ``[redacted]``. Secrets shorter than 12 characters
    are replaced only whole; shorter than 8, not at all (placeholders, not keys)."""
    for secret in secrets:
        secret = (secret or "").strip()
        if len(secret) < MIN_SECRET_CHARS:
            continue
        for form in {secret, quote(secret, safe=""), json.dumps(secret)[1:-1]}:
            text = text.replace(form, REDACTED)
        if len(secret) >= MIN_SECRET_FRAGMENT_CHARS:
            text = _KEYLIKE_RE.sub(
                lambda m, s=secret: REDACTED if _shares_fragment(m[0], s) else m[0], text
            )
    return text
