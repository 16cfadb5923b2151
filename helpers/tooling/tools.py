"""The real tools the agent calls. They take and return real values and know nothing of
previews or references: that is the client's job (see :mod:`helpers.context.policies`).

The tools of *tool-context-relay* by grzegorz-aniol: ``yt_transcribe``, ``deep_check``,
``google_drive_write_file``, ``get_page``. Real data nobody here wrote: ``run_sql`` over ISO
tables from ``pycountry`` (:mod:`helpers.tooling.dataset`), and ``get_page`` over HTML that exists
offline (pydoc's rendering of a fixed list of standard-library modules, :mod:`helpers.tooling.pages`,
and the IDLE manual that CPython ships). Nothing here touches the network.

Every argument comes from the model, and the model may have read an injected instruction, so
each tool is bounded: in what it can reach (the outbox, the read-only reference database, the
listed pages), in time and in the size of what it returns or writes (the ``MAX_*`` constants).
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import json
import math
import os
import re
import sqlite3
import stat
import sysconfig
import tempfile
import time
from pathlib import Path

from helpers import ids
from helpers.paths import outbox_dir
from helpers.tooling.dataset import ensure_reference_db
from helpers.tooling.pages import PageNotFound, serve_document, serve_page
from helpers.tooling.registry import ToolRegistry

#: ``yt_transcribe`` returns a short transcript (under any sensible threshold) for this id.
SHORT_VIDEO_ID = "999"
#: Characters a long transcript has at least.
LONG_TRANSCRIPT_MIN_CHARS = 8_000
MAX_SQL_ROWS = 10_000

registry = ToolRegistry()


# -- yt_transcribe ------------------------------------------------------------------------------


def _video_number(video_id: str) -> int:
    """The number a long transcript ends with: stable per video id, 1000-9999."""
    return 1000 + int(hashlib.sha256(video_id.encode()).hexdigest()[:8], 16) % 9000


def _lecture_topics(video_id: str) -> list[str]:
    """Sections of the Python language reference (``pydoc_data.topics``) for this video."""
    from pydoc_data.topics import topics

    names = sorted(topics)
    start = int(hashlib.sha256(video_id.encode()).hexdigest()[8:16], 16) % len(names)
    chosen, total = [], 0
    for name in names[start:] + names[:start]:
        text = topics[name].strip()
        if not 800 <= len(text) <= 6_000:
            continue
        chosen.append(text)
        total += len(text)
        if total >= LONG_TRANSCRIPT_MIN_CHARS:
            break
    return chosen


@registry.register
def yt_transcribe(video_id: str) -> str:
    """Generate the transcript of a YouTube video.

    Args:
        video_id: the YouTube video id, e.g. '123'.

    Returns:
        The transcript as plain text, one timestamped line per spoken sentence.
    """
    if not video_id.strip():
        raise ValueError("video_id must not be empty")
    if video_id == SHORT_VIDEO_ID:
        return (
            "[00:00:00] Hi, and welcome to this short clip.\n"
            "[00:00:04] Today's tip: keep long tool results out of your model's context.\n"
            "[00:00:09] Thanks for watching."
        )
    lines, seconds = [], 0
    for section in _lecture_topics(video_id):
        for paragraph in re.split(r"\n\s*\n", section):
            sentence = " ".join(re.sub(r"[*=-]{3,}", " ", paragraph).split())
            if not sentence:
                continue
            lines.append(
                f"[{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}] {sentence}"
            )
            seconds += 4 + len(sentence) // 15
    stamp = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    lines.append(
        f"[{stamp}] That is all for today. The number to remember is {_video_number(video_id)}"
    )
    return "\n".join(lines)


# -- deep_check ---------------------------------------------------------------------------------


@registry.register
def deep_check(text: str) -> str:
    """Run a deep analysis of a text and report what was received.

    Args:
        text: the full text to analyse (a transcript, a page, a document).

    Returns:
        A short analysis: length in characters and UTF-8 bytes, a SHA-256 prefix of the UTF-8
        bytes, line and word counts, and the most frequent words.
    """
    words = re.findall(r"[A-Za-z][A-Za-z'-]{3,}", text.lower())
    counts: dict[str, int] = {}
    for word in words:
        counts[word] = counts.get(word, 0) + 1
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    digest = ids.content_sha256(text)
    lines = text.count("\n") + 1 if text else 0
    return (
        f"Deep Check: received {len(text)} chars ({len(text.encode('utf-8', 'surrogatepass'))} "
        f"bytes UTF-8), sha256 {digest[:16]}, {lines} lines, {len(words)} words; "
        f"top words: {', '.join(f'{w} ({n})' for w, n in top) or 'none'}."
    )


# -- google_drive_write_file --------------------------------------------------------------------

_SAFE_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._-]{0,127}")


#: The largest file google_drive_write_file writes, in bytes (UTF-8).
MAX_OUTBOX_FILE_BYTES = 20_000_000
#: The most the outbox may hold in all, in bytes: a write that would pass it is refused.
MAX_OUTBOX_TOTAL_BYTES = 200_000_000


@registry.register
def google_drive_write_file(file_name: str, file_content: str) -> str:
    """Write a file to Google Drive (here: the workbook's outbox folder, var/outbox).

    Args:
        file_name: a plain file name such as 'transcript.txt' (no folders).
        file_content: the full content to write.

    Returns:
        A confirmation with the drive path and the size in characters and bytes, saying whether
        an existing file was replaced.
    """
    if not _SAFE_NAME_RE.fullmatch(file_name) or ".." in file_name:
        raise ValueError(
            f"file_name {_clip(file_name)!r} is not a plain file name (letters, digits, space, "
            ". _ -; no folders, at most 128 characters)"
        )
    data = file_content.encode("utf-8")  # lone surrogates never get this far (the agent refuses)
    if len(data) > MAX_OUTBOX_FILE_BYTES:
        raise ValueError(
            f"{len(data):,} bytes is over the limit of {MAX_OUTBOX_FILE_BYTES:,} bytes per file"
        )
    folder = outbox_dir()
    target = folder / file_name
    replaced = _regular_file_size(target)
    in_use = sum(size for p in folder.iterdir() if p != target and (size := _regular_file_size(p)))
    if in_use + len(data) > MAX_OUTBOX_TOTAL_BYTES:
        raise ValueError(
            f"the outbox holds {in_use:,} bytes; {len(data):,} more would pass its limit of "
            f"{MAX_OUTBOX_TOTAL_BYTES:,} bytes"
        )
    # a fresh, unique temporary file (O_CREAT | O_EXCL: never an existing file or a symlink),
    # then an atomic rename, which replaces the directory entry and never follows a symlink
    fd, tmp_name = tempfile.mkstemp(prefix=".write-", suffix=".partial", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    note = f" (replaced an existing file of {replaced:,} bytes)" if replaced is not None else ""
    return f"Wrote drive://{file_name}: {len(file_content)} chars, {len(data)} bytes{note}."


def _regular_file_size(path: Path) -> int | None:
    """The size of a regular file (not following symlinks), or ``None``."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def _clip(text: str, width: int = 80) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def read_outbox(file_name: str) -> str:
    """The content of a file in the outbox, as written (for checks and notebooks)."""
    return (outbox_dir() / file_name).read_bytes().decode("utf-8", "surrogatepass")


# -- get_page -----------------------------------------------------------------------------------

SMALL_PAGE_URL = "https://example.com/"
IDLE_MANUAL_URL = "https://docs.python.org/3/library/idle.html"
_PYDOC_URL_RE = re.compile(r"https://docs\.python\.org/3/library/([^/?#]{1,100})\.html")
_SMALL_PAGE = (
    "<!doctype html><html><head><title>Example Domain</title></head><body><h1>Example Domain"
    "</h1><p>This domain is for use in documentation examples.</p></body></html>"
)


def _idle_manual() -> str:
    path = Path(sysconfig.get_paths()["stdlib"]) / "idlelib" / "help.html"
    if not path.is_file():
        raise FileNotFoundError(
            f"this Python has no IDLE manual at {path} (some distributions package idlelib "
            "separately); try a pydoc page such as https://docs.python.org/3/library/json.html"
        )
    return path.read_text(encoding="utf-8")


@registry.register
def get_page(url: str) -> str:
    """Fetch a web page and return its HTML.

    Offline pages: https://example.com/ (small), https://docs.python.org/3/library/idle.html
    (the IDLE manual, large, with images), https://docs.python.org/3/library/<module>.html
    (pydoc's HTML for about 60 common standard-library modules, e.g. json, sqlite3, asyncio),
    and large documents: https://docs.python.org/3/reference/ (the language reference, text),
    https://www.unicode.org/Public/<version>/ucd/UnicodeData.txt (about 6 MB), and the
    iso-codes JSON files iso_639-3.json and iso_3166-2.json.

    Args:
        url: the page URL.

    Returns:
        The page's HTML source.
    """
    url = url.strip()
    if url.rstrip("/") == SMALL_PAGE_URL.rstrip("/"):
        return _SMALL_PAGE
    if url == IDLE_MANUAL_URL:
        return _idle_manual()
    document = serve_document(url)
    if document is not None:
        return document
    match = _PYDOC_URL_RE.fullmatch(url)
    if match:
        return serve_page(match[1])  # a page rendered at set-up time: nothing is imported
    shown = url if len(url) <= 100 else url[:97] + "..."
    raise PageNotFound(f"404 Not Found: {html.escape(shown)} is not available offline")


# -- run_sql ------------------------------------------------------------------------------------

_ALLOWED_SQL_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION}
if hasattr(sqlite3, "SQLITE_RECURSIVE"):
    _ALLOWED_SQL_ACTIONS.add(sqlite3.SQLITE_RECURSIVE)


def _authorizer(action: int, *_args: object) -> int:
    return sqlite3.SQLITE_OK if action in _ALLOWED_SQL_ACTIONS else sqlite3.SQLITE_DENY


#: run_sql stops a query after this many seconds (a progress handler interrupts SQLite).
SQL_TIME_LIMIT_S = 5.0
#: The longest string or BLOB SQLite may build while running a query, in bytes.
SQL_MAX_VALUE_BYTES = 1_000_000
#: The longest result run_sql returns, in characters; rows past it are left out (truncated).
SQL_MAX_RESULT_CHARS = 2_000_000
#: How many bytes of a BLOB are shown (in hex) in a result.
SQL_BLOB_PREVIEW_BYTES = 32


def _json_value(value: object) -> object:
    """A SQLite value as JSON can hold it: BLOBs as their size and first bytes in hex; infinite
    and NaN floats as the strings ``"Infinity"``, ``"-Infinity"``, ``"NaN"``."""
    if isinstance(value, bytes):
        return {"blob_bytes": len(value), "hex": value[:SQL_BLOB_PREVIEW_BYTES].hex()}
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


@registry.register
def run_sql(query: str, max_rows: int = 50) -> str:
    """Run one read-only SQL query (SQLite) on the ISO reference database.

    Tables: countries(alpha_2, alpha_3, numeric, name, official_name, common_name, flag),
    subdivisions(code, country_alpha_2, name, type, parent_code),
    languages(alpha_3, alpha_2, name, common_name, bibliographic, scope, type),
    currencies(alpha_3, numeric, name), scripts(alpha_4, numeric, name).

    Args:
        query: a single SELECT statement.
        max_rows: the most rows to return (1-10000).

    Returns:
        JSON {"columns": [...], "rows": [[...], ...], "row_count": N, "truncated": bool}, one
        row per line, or {"error": "..."} when the query is refused, fails or runs too long.
    """
    if not 1 <= max_rows <= MAX_SQL_ROWS:
        return json.dumps({"error": f"max_rows must be between 1 and {MAX_SQL_ROWS}"})
    path = ensure_reference_db()
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    deadline = time.monotonic() + SQL_TIME_LIMIT_S
    try:
        db.set_authorizer(_authorizer)
        db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, SQL_MAX_VALUE_BYTES)
        db.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        cursor = db.execute(query)
        columns = [d[0] for d in cursor.description or []]
        rows = cursor.fetchmany(max_rows + 1)
    except (sqlite3.Error, sqlite3.Warning) as exc:
        reason = str(exc)
        if "not authorized" in reason:
            reason += " (only reading SELECT queries are allowed)"
        elif reason == "interrupted":
            reason = f"the query ran longer than {SQL_TIME_LIMIT_S:g} s and was stopped"
        elif "too big" in reason:
            reason += f" (a value may hold at most {SQL_MAX_VALUE_BYTES:,} bytes)"
        return json.dumps({"error": f"query refused or failed: {reason}"})
    finally:
        db.close()
    truncated = len(rows) > max_rows
    lines: list[str] = []
    size = 0
    for row in rows[:max_rows]:
        line = "  " + json.dumps([_json_value(v) for v in row], ensure_ascii=False)
        if size + len(line) > SQL_MAX_RESULT_CHARS:
            truncated = True
            break
        lines.append(line)
        size += len(line) + 2
    # one row per line: still valid JSON, and a preview or a line grep shows whole rows
    body = ",\n".join(lines)
    return (
        f'{{"columns": {json.dumps(columns, ensure_ascii=False)}, "rows": [\n{body}\n], '
        f'"row_count": {len(lines)}, "truncated": {json.dumps(truncated)}}}'
    )


def default_registry() -> ToolRegistry:
    """A fresh registry holding the real tools (callers may add their own to it)."""
    return ToolRegistry(registry)
