"""The offline web that ``get_page`` serves: pages rendered once, from a fixed list.

``get_page("https://docs.python.org/3/library/<module>.html")`` used to import whatever module the
model named, and pydoc renders a module by importing it: a model (or a page it read) could run
code (``this`` prints, ``antigravity`` opens a browser, ``venv.__main__`` makes virtualenvs, a file
the model wrote into the outbox becomes importable) and could read the environment (pydoc's page
for ``os`` shows ``os.environ``, API keys included). So:

- pages exist only for :data:`PAGE_MODULES`, a fixed list of standard-library modules that are
  plain libraries: importing them runs no program and touches nothing (``this``, ``antigravity``,
  ``__hello__``, ``*.__main__``, ``idlelib.*``, ``turtledemo``, ``test.*``, ``os``, ``sys`` and
  everything outside ``sys.stdlib_module_names`` are not on it);
- they are rendered at set-up time (``workbook build-data``) into ``var/pages/``, so serving a
  page imports nothing at all (a page missing there is rendered on first use, from the same list);
- every page is passed through :func:`helpers.text.redaction.redact` with the values of the secrets
  configured in the environment and ``.env`` (:func:`helpers.text.redaction.configured_secrets`), when
  it is rendered and again when it is served;
- anything else is a 404.

Besides the documentation pages, a few **large documents** of real data ship with the workbook's
dependencies and are served under their public URLs (:data:`DOCUMENTS`): the Unicode Character
Database's ``UnicodeData.txt`` rebuilt from Python's :mod:`unicodedata` (about 6 MB), ISO 639-3
and ISO 3166-2 as the ``iso-codes`` project publishes them (the JSON files ``pycountry`` ships,
0.9 and 0.5 MB), and the Python language reference (``pydoc_data.topics``, 0.5 MB). They are the
results of 100 KB to 6 MB the comparison needs. ``WORKBOOK_DOCUMENT_SCALE`` (0-1) serves only
the first part of each, whole lines, so tests can run the same cases at a smaller size.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import re
import sys
import sysconfig
import tempfile
from collections.abc import Collection
from pathlib import Path
from typing import Any

from helpers.base.paths import remove_abandoned, var_dir, writer_prefix
from helpers.text.redaction import configured_secrets, redact

#: Standard-library modules whose pydoc pages are served (plain libraries, no import side effects).
PAGE_MODULES: tuple[str, ...] = (
    "abc",
    "argparse",
    "array",
    "ast",
    "asyncio",
    "base64",
    "bisect",
    "calendar",
    "collections",
    "contextlib",
    "copy",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "enum",
    "fnmatch",
    "fractions",
    "functools",
    "glob",
    "gzip",
    "hashlib",
    "heapq",
    "hmac",
    "html",
    "http.client",
    "inspect",
    "io",
    "ipaddress",
    "itertools",
    "json",
    "logging",
    "math",
    "operator",
    "pathlib",
    "pickle",
    "pprint",
    "queue",
    "random",
    "re",
    "secrets",
    "shlex",
    "shutil",
    "socket",
    "sqlite3",
    "statistics",
    "string",
    "struct",
    "subprocess",
    "tarfile",
    "tempfile",
    "textwrap",
    "threading",
    "time",
    "timeit",
    "tomllib",
    "typing",
    "unicodedata",
    "urllib.parse",
    "uuid",
    "warnings",
    "zipfile",
    "zoneinfo",
)
_PAGE_SET = frozenset(PAGE_MODULES)
#: An object's memory address in a repr, " at 0x7f…" (pydoc's HTML spaces it "&nbsp;at&nbsp;").
_ADDRESS_RE = re.compile(r"( |&nbsp;)at( |&nbsp;)0x[0-9a-f]+")
_NAME_RE = re.compile(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*")


def _unicode_data() -> str:
    """``UnicodeData.txt`` (fields 0-9) for every named code point, from :mod:`unicodedata`."""
    import unicodedata

    def number(ch: str) -> str:
        value = unicodedata.numeric(ch, None)
        if value is None:
            return ""
        return str(int(value)) if float(value).is_integer() else str(value)

    lines = []
    for code_point in range(0x110000):
        ch = chr(code_point)
        name = unicodedata.name(ch, None)
        if name is None:
            continue
        lines.append(
            f"{code_point:04X};{name};{unicodedata.category(ch)};{unicodedata.combining(ch)};"
            f"{unicodedata.bidirectional(ch)};{unicodedata.decomposition(ch)};"
            f"{unicodedata.decimal(ch, '')};{unicodedata.digit(ch, '')};{number(ch)};"
            f"{'Y' if unicodedata.mirrored(ch) else 'N'}"
        )
    return "\n".join(lines) + "\n"


def _pycountry_database(name: str) -> str:
    import pycountry

    return (Path(pycountry.__file__).parent / "databases" / name).read_text(encoding="utf-8")


def _language_reference() -> str:
    from pydoc_data.topics import topics

    return "\n\n".join(
        f"{name}\n{'=' * len(name)}\n\n{topics[name].strip()}" for name in sorted(topics)
    )


def _unicode_url() -> str:
    import unicodedata

    return f"https://www.unicode.org/Public/{unicodedata.unidata_version}/ucd/UnicodeData.txt"


ISO_CODES_URL = "https://salsa.debian.org/iso-codes-team/iso-codes/-/raw/main/data/"
#: The documents copied from pycountry's data (a new pycountry makes them anew): file name, as
#: iso-codes publishes it → pycountry's own file.
PYCOUNTRY_DOCUMENTS = {"iso_639-3.json": "iso639-3.json", "iso_3166-2.json": "iso3166-2.json"}
#: URL → how to build the document (once; then it is read from ``var/pages/``).
DOCUMENTS: dict[str, tuple[str, Any]] = {
    _unicode_url(): ("UnicodeData.txt", _unicode_data),
    "https://www.unicode.org/Public/UCD/latest/ucd/UnicodeData.txt": (
        "UnicodeData.txt",
        _unicode_data,
    ),
    **{
        ISO_CODES_URL + name: (name, functools.partial(_pycountry_database, own))
        for name, own in PYCOUNTRY_DOCUMENTS.items()
    },
    "https://docs.python.org/3/reference/": ("reference.txt", _language_reference),
}


def serve_document(url: str) -> str | None:
    """The large document at ``url`` (scaled by ``WORKBOOK_DOCUMENT_SCALE``), or ``None``."""
    entry = DOCUMENTS.get(url) or DOCUMENTS.get(url.rstrip("/") + "/")
    if entry is None:
        return None
    file_name, build = entry
    path = pages_dir() / file_name
    if path.is_file():
        text = path.read_text(encoding="utf-8")
    else:
        text = build()
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    scale = float(os.environ.get("WORKBOOK_DOCUMENT_SCALE") or 1)
    if 0 < scale < 1:
        cut = text.rfind("\n", 0, int(len(text) * scale)) + 1
        text = text[:cut]
    return redact(text, configured_secrets())


class PageNotFound(LookupError):
    """No offline page for this URL (a 404); the message lists what is served."""


def pages_dir() -> Path:
    """Where rendered pages live: ``var/pages``."""
    path = var_dir() / "pages"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _page_path(module_name: str) -> Path:
    return pages_dir() / f"{module_name}.html"


def render_page(module_name: str) -> str:
    """pydoc's HTML for one module of :data:`PAGE_MODULES`, machine paths and secrets removed.

    Raises:
        PageNotFound: the module is not on the list (nothing is imported then).
    """
    if module_name not in _PAGE_SET or module_name.split(".")[0] not in sys.stdlib_module_names:
        raise PageNotFound(_not_found(module_name))
    import pydoc

    module = importlib.import_module(module_name)
    page = pydoc.html.page(pydoc.describe(module), pydoc.html.document(module, module_name))
    # pydoc links the module's source file on this machine; keep pages machine-independent.
    stdlib = sysconfig.get_paths()["stdlib"]
    page = page.replace("file:" + stdlib, "file:Lib").replace(stdlib, "Lib")
    # and memory addresses in object reprs: the same page on every run and every machine
    page = _ADDRESS_RE.sub(r"\1at\g<2>0x…", page)
    return redact(page, configured_secrets())


def build_pages(only: Collection[str] | None = None) -> int:
    """Render every page of :data:`PAGE_MODULES`, and every large document (once each, however
    many URLs serve it), into ``var/pages/``; with ``only``, those of the file names it holds
    (``"json.html"``, ``"UnicodeData.txt"``). Return how many files were written."""
    remove_abandoned(pages_dir())
    files = {f"{name}.html": functools.partial(render_page, name) for name in PAGE_MODULES}
    files |= dict(DOCUMENTS.values())  # file name -> builder: one file per document
    chosen = [name for name in files if only is None or name in only]
    for file_name in chosen:
        _write_whole(pages_dir() / file_name, files[file_name]())
    return len(chosen)


def _write_whole(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file of this writer's own, moved into
    place: a reader sees the old file or the new one, never half of one, and writers at the same
    time (two kernels' first ``get_page``) never write into each other's file."""
    fd, name = tempfile.mkstemp(prefix=writer_prefix(path.name), suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(name, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)


def serve_page(module_name: str) -> str:
    """The stored page of a listed module (rendered now if missing); imports nothing otherwise.

    Raises:
        PageNotFound: not a listed module.
    """
    if not _NAME_RE.fullmatch(module_name) or module_name not in _PAGE_SET:
        raise PageNotFound(_not_found(module_name))
    path = _page_path(module_name)
    if path.is_file():
        page = path.read_text(encoding="utf-8")
    else:
        page = render_page(module_name)
        _write_whole(path, page)
    return redact(page, configured_secrets())


def _not_found(module_name: str) -> str:
    shown = module_name if len(module_name) <= 60 else module_name[:57] + "..."
    return (
        f"404 Not Found: no offline page for {shown!r}. Pages exist for these standard-library "
        f"modules: {', '.join(PAGE_MODULES[:12])}, … ({len(PAGE_MODULES)} in all)"
    )
