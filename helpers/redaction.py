"""Secrets out of every message: an API key is never shown, stored or sent to a model.

Some providers repeat the key they were sent in an error ("Incorrect API key provided:
sk-…"), whole or in part; a model may repeat one it read; a page may show the environment.
:func:`redact` replaces a secret, and any run of key-like characters that shares 12 or more
consecutive characters with it, by ``[redacted]``. :func:`configured_secrets` lists the secrets
configured on this machine (the environment and ``.env``), so tool results, stored outputs,
messages and error texts can all be cleaned of them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from urllib.parse import quote, urlsplit

from dotenv import dotenv_values

from helpers.paths import PROJECT_ROOT

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


#: Setting names whose values are secrets (``OPENAI_API_KEY``, ``HF_TOKEN``, ``DB_PASSWORD``…).
SECRET_NAME_RE = re.compile(r"(API_?KEY|_KEY$|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.I)


def configured_secrets(env: Mapping[str, str | None] | None = None) -> tuple[str, ...]:
    """The secret values configured here: every setting of the environment and of ``.env`` whose
    name looks secret (:data:`SECRET_NAME_RE`), and the password of any URL setting (a
    ``postgresql://user:password@host/db`` store URL). Values shorter than 8 characters are left
    out (placeholders such as ``none``)."""
    if env is None:
        file_values = (
            dotenv_values(PROJECT_ROOT / ".env") if (PROJECT_ROOT / ".env").is_file() else {}
        )
        env = {**file_values, **os.environ}
    found: set[str] = set()
    for name, value in env.items():
        value = (value or "").strip()
        if SECRET_NAME_RE.search(name):
            found.add(value)
        elif "://" in value and "@" in value:
            try:
                found.add(urlsplit(value).password or "")
            except ValueError:
                continue
    return tuple(sorted(v for v in found if len(v) >= MIN_SECRET_CHARS))
