"""Secrets out of every message: an API key is never shown, stored or sent to a model.

Some providers repeat the key they were sent in an error ("Incorrect API key provided:
sk-…"), whole or in part; a model may repeat one it read; a page may show the environment.
:func:`redact` replaces a secret, and any run of key-like characters that shares 12 or more
consecutive characters with it, by ``[redacted]``. :func:`configured_secrets` lists the secrets
configured on this machine (the environment and ``.env``), so tool results, stored outputs,
messages and error texts can all be cleaned of them. :func:`mask_url_password` hides the password
of a database URL (``postgresql://user:***@host/db``) in any text shown to a person, and
:func:`warn_if_env_file_shared` warns, once per file and process, when ``.env`` can be read by
other users.
"""

from __future__ import annotations

import json
import os
import re
import stat
import warnings
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from dotenv import dotenv_values

from helpers.base.paths import workspace_dir

REDACTED = "[redacted]"
#: The shortest piece of a secret that is still treated as the secret.
MIN_SECRET_FRAGMENT_CHARS = 12
#: Shorter "secrets" (a placeholder such as "k" or "none") are not API keys: left alone.
MIN_SECRET_CHARS = 8
_KEYLIKE_RE = re.compile(r"[A-Za-z0-9_\-.+/=:]{" + str(MIN_SECRET_FRAGMENT_CHARS) + ",}")


@lru_cache(maxsize=64)
def _fragments(secret: str) -> tuple[tuple[str, ...], re.Pattern[str]]:
    """The runs of :data:`MIN_SECRET_FRAGMENT_CHARS` consecutive characters of ``secret``, and a
    pattern matching any of them. Looking for each run with ``in`` (a fast substring search)
    reads a megabyte about three times faster than the alternation does."""
    n = MIN_SECRET_FRAGMENT_CHARS
    fragments = tuple(sorted({secret[i : i + n] for i in range(len(secret) - n + 1)}))
    return fragments, re.compile("|".join(re.escape(f) for f in fragments))


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every secret (also URL-encoded or JSON-escaped, and every key-like word
    holding 12+ characters of one) replaced by ``[redacted]``. Secrets shorter than 12 characters
    are replaced only whole; shorter than 8, not at all (placeholders, not keys).

    Time is linear in the text: a text holding no 12-character piece of a secret (nearly all
    text) is read once by one compiled pattern; only one that does is split into key-like
    words."""
    for secret in secrets:
        secret = (secret or "").strip()
        if len(secret) < MIN_SECRET_CHARS:
            continue
        for form in {secret, quote(secret, safe=""), json.dumps(secret)[1:-1]}:
            text = text.replace(form, REDACTED)
        if len(secret) >= MIN_SECRET_FRAGMENT_CHARS:
            fragments, fragment = _fragments(secret)
            if any(piece in text for piece in fragments):
                text = _KEYLIKE_RE.sub(
                    lambda m, f=fragment: REDACTED if f.search(m[0]) else m[0], text
                )
    return text


#: Setting names whose values are secrets (``OPENAI_API_KEY``, ``HF_TOKEN``, ``DB_PASSWORD``,
#: ``GH_PAT``…): one of the words of the name (split at ``_``) says so, or the name holds
#: ``PASSWORD``/``PASSWD`` anywhere (libpq's ``PGPASSWORD``). A word that only contains one does
#: not (``TIKTOKEN_CACHE_DIR`` is a folder, ``TOKENIZERS_PARALLELISM`` a switch, ``PATH`` a path).
SECRET_NAME_RE = re.compile(
    r"(?:^|_)(?:API_?KEY|APIKEY|KEY|TOKEN|SECRET|PASS|PAT|CREDENTIALS?)(?:_|$)|PASSWORD|PASSWD",
    re.I,
)


#: ``MCP_<NAME>_ENV``: the environment an MCP server is started with (:mod:`helpers.mcp.settings`).
_MCP_ENV_RE = re.compile(r"MCP_[A-Z][A-Z0-9_]*_ENV")


def secrets_of(variables: Mapping[str, str | None]) -> set[str]:
    """The secret values among ``variables`` (names → values, as an environment): each value
    whose name looks secret (:data:`SECRET_NAME_RE`), and the password of each URL
    (``postgresql://user:password@host/db``, a ``DATABASE_URL``). Nothing else: an ordinary
    value redacted would change every output that holds it (``production``, ``definition``)."""
    found: set[str] = set()
    for name, value in variables.items():
        value = str(value or "").strip()
        if SECRET_NAME_RE.search(str(name)):
            found.add(value)
        elif "://" in value and "@" in value:
            try:
                found.add(urlsplit(value).password or "")
            except ValueError:
                continue
    return found


def configured_secrets(env: Mapping[str, str | None] | None = None) -> tuple[str, ...]:
    """The secret values configured here: those of the environment and of ``.env``
    (:func:`secrets_of`: settings whose names look secret, URL passwords), every value of a
    ``<NAME>_EXTRA_HEADERS`` setting (headers), and the secrets of each ``MCP_<NAME>_ENV`` one
    (an MCP server's environment, :func:`secrets_of` again). Values shorter than
    :data:`MIN_SECRET_CHARS` characters are left out (placeholders such as ``none``): they are
    never redacted. Reading ``.env`` warns if other users can read it
    (:func:`warn_if_env_file_shared`)."""
    if env is None:
        env_file = workspace_dir() / ".env"
        file_values: Mapping[str, str | None] = {}
        if env_file.is_file():
            warn_if_env_file_shared(env_file)
            file_values = dotenv_values(env_file)
        env = {**file_values, **os.environ}
    found = secrets_of(env)
    for name, value in env.items():
        name = name.upper()
        if not (name.endswith("_EXTRA_HEADERS") or _MCP_ENV_RE.fullmatch(name)):
            continue
        try:
            parsed = json.loads((value or "").strip())
        except ValueError:
            continue
        if not isinstance(parsed, dict):
            continue
        if name.endswith("_EXTRA_HEADERS"):  # a project id or a gateway's token
            found.update(str(v).strip() for v in parsed.values())
        else:  # an MCP server's keys, by their names
            found.update(secrets_of(parsed))
    return tuple(sorted(v for v in found if len(v) >= MIN_SECRET_CHARS))


#: What stands for a hidden URL password (SQLAlchemy's own ``hide_password`` marker).
MASKED_PASSWORD = "***"
#: ``scheme://user:password@`` anywhere in a text: the password runs to the last ``@`` before a
#: space, a quote or a ``/`` (so an unencoded ``@`` inside it is hidden too).
_URL_PASSWORD_RE = re.compile(
    r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@'\"]*:)(?P<password>[^\s'\"/]*)@"
)
#: ``password=…`` or ``passfile=…`` as a URL's query parameter (``?password=…&``) or a libpq
#: conninfo keyword (``password = 'it''s'``), the two other places libpq reads a password from
#: (PostgreSQL's docs, "Connection Strings": keyword/value and URI forms; a value may be quoted
#: with ``'``, holding ``\'`` and ``\\``).
_KEYWORD_SECRET_RE = re.compile(
    r"(?P<head>(?:^|(?<=[?&;\s(,]))(?:password|passfile)\s*=\s*)"
    r"(?P<value>'(?:[^'\\]|\\.)*'?|[^&\s'\")]+)",
    re.I,
)


def _unquoted_value(value: str) -> str:
    if value.startswith("'"):
        return re.sub(r"\\(.)", r"\1", value[1:].removesuffix("'"))
    return unquote(value)


def url_passwords(url: str) -> list[str]:
    """Every password ``url`` gives libpq or SQLAlchemy, in each form it may take: the URL's
    user information (``postgresql://u:secret@h/db``, also when unencoded characters make the
    URL unparseable), a ``password=`` query parameter, or a conninfo keyword (``host=h
    password=secret``); a ``passfile=`` path too. Never raises; ``[]`` for none."""
    from sqlalchemy.engine import make_url  # here: importing SQLAlchemy costs 0.2 s of CPU
    from sqlalchemy.exc import ArgumentError

    found: list[str] = []
    try:
        password = make_url(url).password
        if password:
            found.append(str(password))
    except (ArgumentError, ValueError):
        pass
    scheme, sep, rest = url.partition("://")
    if sep and re.fullmatch(r"[A-Za-z][A-Za-z0-9+.\-]*", scheme):
        userinfo = rest.rpartition("@")[0]
        if ":" in userinfo:  # as written, and as decoded
            written = userinfo.partition(":")[2]
            found += [written, unquote(written)]
    for part in url.partition("?")[2].partition("#")[0].split("&"):  # a query, spaces and all
        key, _, value = part.partition("=")
        if key.strip().lower() in {"password", "passfile"}:
            found += [value, unquote(value)]
    for match in _KEYWORD_SECRET_RE.finditer(url):
        found += [match["value"], _unquoted_value(match["value"])]
    return [p for p in dict.fromkeys(found) if p]


def mask_url_password(text: str, url: str | None = None) -> str:
    """``text`` with every password of a database URL or connection string in it hidden: the
    one function every message showing a store's or a room's URL goes through.

    Args:
        text: a URL (``postgresql://u:secret@host/db``), a libpq conninfo string or any message
            holding them (a driver's error repeats the URL it could not parse). A whole
            SQLAlchemy URL is rendered by SQLAlchemy with ``hide_password=True``; in any text,
            ``scheme://user:password@`` becomes ``scheme://user:***@`` and ``password=…`` or
            ``passfile=…`` (a query parameter or a conninfo keyword) becomes ``password=***``.
        url: the URL the message is about, if known: each of its passwords (:func:`url_passwords`)
            is also hidden where the text repeats it anywhere (plain, URL-encoded or
            JSON-escaped; passwords of 8 characters or more, see :func:`redact`). A one-line
            ``text`` that starts with a URL is taken as that URL.

    Returns:
        The masked text (unchanged if it holds no password). Never raises.
    """
    if url is None and "\n" not in text and re.match(r"[A-Za-z][A-Za-z0-9+.\-]*://", text):
        url = text  # a URL alone, perhaps with a space an error would quote
    if url:
        text = redact(text, url_passwords(url))
    if text and not any(c.isspace() for c in text):
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        try:
            parsed = make_url(text)
            if parsed.password is not None:
                text = parsed.render_as_string(hide_password=True)
        except (ArgumentError, ValueError):
            pass
    text = _URL_PASSWORD_RE.sub(lambda m: f"{m['head']}{MASKED_PASSWORD}@", text)
    return _KEYWORD_SECRET_RE.sub(lambda m: f"{m['head']}{MASKED_PASSWORD}", text)


#: Permission bits that let users other than the owner read (or write) a file.
ENV_FILE_SHARED_BITS = 0o077
#: The ``.env`` files warned about in this process (each is warned about once).
_warned_env_files: set[Path] = set()


class EnvFileWarning(UserWarning):
    """``.env`` (which holds API keys) can be read by other users of this machine."""


def warn_if_env_file_shared(path: Path) -> bool:
    """Warn (:class:`EnvFileWarning`, one line) when ``path`` grants any permission to its group
    or to others, once per file and process; a missing file, or a system without POSIX modes, is
    no warning.

    Args:
        path: the ``.env`` file.

    Returns:
        Whether a warning was issued by this call.
    """
    if os.name != "posix":
        return False
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return False
    key = path.absolute()
    if not mode & ENV_FILE_SHARED_BITS or key in _warned_env_files:
        return False
    _warned_env_files.add(key)
    warnings.warn(
        f"{path} holds secrets and is open to other users (mode {mode:04o}); "
        f"run `chmod 600 {path}`",
        EnvFileWarning,
        stacklevel=3,
    )
    return True


#: A path segment that is a key pasted into a URL: OpenAI's ``sk-…`` (OpenRouter's
#: ``sk-or-…``), or 32 or more hexadecimal digits (an Azure OpenAI resource key).
_KEY_SEGMENT_RE = re.compile(r"sk-[^/]*|[0-9A-Fa-f]{32,}")


def endpoint_shown(url: str | None) -> str:
    """Where a profile's requests go, safe to print: scheme, host, port and path only (a user
    name, a password or a query string, where a key may sit, never shown; a path segment that
    looks like a key, :data:`_KEY_SEGMENT_RE`, shown as ``…``); ``api.openai.com`` for the
    SDK's default. What is not an http(s) URL with a host is not shown at all (``user:pw@host``
    reads as the scheme ``user`` and a path holding the password)."""
    if not url:
        return "api.openai.com"
    try:
        parts = urlsplit(url)
        host_and_port = parts.netloc.rpartition("@")[2]  # as written, even a port out of range
    except ValueError:
        return "(not a URL)"
    if parts.scheme.lower() not in ("http", "https") or not host_and_port:
        return "(not an http(s) URL)"
    path = "/".join(
        "…" if _KEY_SEGMENT_RE.fullmatch(segment) else segment for segment in parts.path.split("/")
    )
    return f"{parts.scheme}://{host_and_port}{path}"
