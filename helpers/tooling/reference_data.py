"""The reference data the tools serve, built once and again only when its inputs change.

``workbook build-data`` (run by ``make lab`` and ``make test`` each time) builds two things into
``var/``: the ISO reference database ``run_sql`` queries (:mod:`helpers.tooling.dataset`, from
pycountry) and the offline documentation pages ``get_page`` serves (:mod:`helpers.tooling.pages`,
from pydoc and the large documents). What they are made from is their *inputs*: the Python
version (pydoc renders the standard library of the running Python), the pycountry version, and
the source of the two builder modules. :func:`build_reference_data` writes a fingerprint of
those inputs, and the SHA-256 of every file it built, beside the data. Next time it builds
again only the files that need it: a file missing or no longer the one it wrote (emptied,
edited, copied over), and the files made from an input that differs (:func:`_read_from`: a new
pycountry rebuilds the database and the two ISO documents, not the pydoc pages).
``force=True`` (``build-data --force``) always rebuilds everything.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from helpers.base.paths import reference_db_path, var_dir

#: Where the fingerprint of the inputs of the last complete build is kept.
FINGERPRINT_FILE = "reference-data.inputs.json"


@dataclass(frozen=True)
class DataBuild:
    """What :func:`build_reference_data` did: ``built`` (``False``: the data was current),
    the row count per table (empty when the database was not built), the number of pages and
    documents built, and ``reason``, in words (``"pycountry changed"``, ``"forced"``, ``"current"``…)."""

    built: bool
    rows: dict[str, int]
    pages: int
    reason: str


def data_inputs() -> dict[str, str]:
    """The inputs the reference data is made from: ``python`` (its version), ``pycountry``
    (its version) and ``builders`` (SHA-256 of the sources of the dataset and pages modules)."""
    from helpers.tooling import dataset, pages

    builders = hashlib.sha256()
    for module in (dataset, pages, sys.modules[__name__]):
        builders.update(Path(module.__file__ or "").read_bytes())
    return {
        "python": sys.version.split()[0],
        "pycountry": version("pycountry"),
        "builders": builders.hexdigest(),
    }


def _built_files() -> list[Path]:
    """Every file a complete build leaves: the database and each page."""
    from helpers.tooling.pages import DOCUMENTS, PAGE_MODULES, pages_dir

    folder = pages_dir()
    names = [f"{m}.html" for m in PAGE_MODULES] + [name for name, _ in DOCUMENTS.values()]
    return [reference_db_path(), *(folder / name for name in names)]


def _file_digests() -> dict[str, str]:
    """The SHA-256 (hex) of every built file, by file name; a missing file is left out."""
    digests = {}
    for path in _built_files():
        with contextlib.suppress(FileNotFoundError):
            digests[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digests


def _read_from(changed: list[str]) -> set[str]:
    """The names of the built files made from the ``changed`` inputs of :func:`data_inputs`:
    ``pycountry`` makes the database and :data:`helpers.tooling.pages.PYCOUNTRY_DOCUMENTS`,
    ``python`` (pydoc, :mod:`unicodedata`, ``pydoc_data``) every other file; a change to
    ``builders``, or to an input this version does not know, rebuilds them all."""
    from helpers.tooling.pages import PYCOUNTRY_DOCUMENTS

    everything = {p.name for p in _built_files()}
    pycountry = {reference_db_path().name, *PYCOUNTRY_DOCUMENTS}
    made = {"pycountry": pycountry, "python": everything - pycountry}
    return set().union(*(made.get(key, everything) for key in changed))


def why_stale() -> tuple[str, set[str]] | None:
    """Why the data must be built, in words (never built; or each of: built files missing, built
    files changed since, which inputs changed), and the names of the built files to build again; or
    ``None`` when it is current. Reads every built file (about 13 MB: tens of milliseconds)."""
    everything = {p.name for p in _built_files()}
    path = var_dir() / FINGERPRINT_FILE
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
        files = dict(recorded.get("files") or {})
    except (OSError, ValueError, TypeError, AttributeError):
        return "never built", everything
    missing = [p.name for p in _built_files() if not p.is_file()]
    if not files:
        return "built by an earlier version of the workbook", everything
    edited = [name for name, digest in _file_digests().items() if files.get(name) != digest]
    changed = [k for k, v in data_inputs().items() if recorded.get(k) != v]
    causes = [
        *([_files(missing, "is missing", "are missing")] if missing else []),
        *([_files(edited, "changed since it was built", "changed since")] if edited else []),
        *([f"{' and '.join(changed)} changed"] if changed else []),
    ]
    todo = set(missing) | set(edited) | _read_from(changed)
    return ("; ".join(causes), todo) if causes else None


def _files(names: list[str], one: str, more: str) -> str:
    """``"json.html is missing"``, or ``"json.html and 2 more are missing"``."""
    return (
        f"{names[0]} {one}" if len(names) == 1 else f"{names[0]} and {len(names) - 1} more {more}"
    )


def build_reference_data(force: bool = False) -> DataBuild:
    """Build the reference files that are stale (:func:`why_stale`; every one with ``force``),
    then record the inputs they were built from.

    Raises:
        OSError: ``var/`` cannot be written.
    """
    from helpers.tooling.dataset import build_reference_db
    from helpers.tooling.pages import build_pages

    stale = ("forced", {p.name for p in _built_files()}) if force else why_stale()
    if stale is None:
        return DataBuild(built=False, rows={}, pages=0, reason="current")
    reason, todo = stale
    fingerprint = var_dir() / FINGERPRINT_FILE
    fingerprint.unlink(missing_ok=True)  # a build cut short is never taken for current
    rows = build_reference_db() if reference_db_path().name in todo else {}
    pages = build_pages(todo - {reference_db_path().name})
    record = {**data_inputs(), "files": _file_digests()}
    fingerprint.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return DataBuild(built=True, rows=rows, pages=pages, reason=reason)
