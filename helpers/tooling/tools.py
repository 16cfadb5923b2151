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

import hashlib
import heapq
import re
import sysconfig
from collections import Counter
from pathlib import Path

from helpers.base import ids
from helpers.tooling.outbox import write_file
from helpers.tooling.pages import PageNotFound, serve_document, serve_page
from helpers.tooling.registry import ToolRegistry
from helpers.tooling.sql_sandbox import run_query

#: ``yt_transcribe`` returns a short transcript (under any sensible threshold) for this id.
SHORT_VIDEO_ID = "999"
#: Characters a long transcript has at least.
LONG_TRANSCRIPT_MIN_CHARS = 8_000

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


@registry.register(read_only=True, category="read")
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


_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'-]{3,}")
#: :func:`deep_check`'s reports by the text's SHA-256 and length (a comparison passes the same
#: transcripts and documents to it under every strategy); emptied past 256 texts.
_DEEP_CHECKS: dict[tuple[str, int], str] = {}


@registry.register(read_only=True, category="execution")
def deep_check(text: str) -> str:
    """Run a deep analysis of a text and report what was received.

    Args:
        text: the full text to analyse (a transcript, a page, a document).

    Returns:
        A short analysis: length in characters and UTF-8 bytes, a SHA-256 prefix of the UTF-8
        bytes, line and word counts, and the most frequent words.
    """
    digest = ids.content_sha256(text)
    key = (digest, len(text))
    report = _DEEP_CHECKS.get(key)
    if report is None:
        words = _WORD_RE.findall(text.lower())
        counts = Counter(words)
        top = heapq.nsmallest(3, counts.items(), key=lambda kv: (-kv[1], kv[0]))
        lines = text.count("\n") + 1 if text else 0
        report = (
            f"Deep Check: received {len(text)} chars "
            f"({len(text.encode('utf-8', 'surrogatepass'))} bytes UTF-8), sha256 {digest[:16]}, "
            f"{lines} lines, {len(words)} words; "
            f"top words: {', '.join(f'{w} ({n})' for w, n in top) or 'none'}."
        )
        if len(_DEEP_CHECKS) >= 256:
            _DEEP_CHECKS.clear()
        _DEEP_CHECKS[key] = report  # another thread may clear it: this call returns its own
    return report


# -- google_drive_write_file --------------------------------------------------------------------


@registry.register(category="write")
def google_drive_write_file(file_name: str, file_content: str) -> str:
    """Write a file to Google Drive (here: the workbook's outbox folder, var/outbox).

    Args:
        file_name: a plain file name such as 'transcript.txt' (no folders).
        file_content: the full content to write.

    Returns:
        A confirmation with the drive path and the size in characters and bytes, saying whether
        an existing file was replaced.

    Raises:
        ValueError: the name is not a plain file name (see :func:`outbox_file_name`), the content
            is over ``MAX_OUTBOX_FILE_BYTES`` bytes, or the write would pass
            ``MAX_OUTBOX_TOTAL_BYTES`` bytes or (a new name) ``MAX_OUTBOX_FILES`` files.
        OSError: the file cannot be written (the disk is full, the name is a folder).
    """
    return write_file(file_name, file_content)


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


@registry.register(read_only=True, category="read")
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
    raise PageNotFound(f"404 Not Found: {shown} is not available offline")


# -- run_sql ------------------------------------------------------------------------------------


@registry.register(read_only=True, category="query")
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
    return run_query(query, max_rows)


def default_registry() -> ToolRegistry:
    """A fresh registry holding the real tools (callers may add their own to it)."""
    return ToolRegistry(registry)
