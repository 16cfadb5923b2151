"""The reference database that ``run_sql`` queries, built from real public data.

The rows are ISO 3166 (countries and their subdivisions), ISO 639 (languages), ISO 4217
(currencies) and ISO 15924 (scripts) as the ``pycountry`` package ships them: nobody here typed a
row. :func:`build_reference_db` rebuilds the file from scratch, in a fixed order, so the same
``pycountry`` version always gives the same rows. ``workbook build-data`` (run by ``make lab`` and
``make test``) calls it.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pycountry

from helpers.base.paths import make_owner_only, reference_db_path, remove_abandoned, writer_prefix

SCHEMA = """
CREATE TABLE countries (
    alpha_2 TEXT PRIMARY KEY, alpha_3 TEXT NOT NULL UNIQUE, numeric TEXT NOT NULL,
    name TEXT NOT NULL, official_name TEXT, common_name TEXT, flag TEXT
);
CREATE TABLE subdivisions (
    code TEXT PRIMARY KEY, country_alpha_2 TEXT NOT NULL REFERENCES countries(alpha_2),
    name TEXT NOT NULL, type TEXT NOT NULL, parent_code TEXT
);
CREATE TABLE languages (
    alpha_3 TEXT PRIMARY KEY, alpha_2 TEXT, name TEXT NOT NULL, common_name TEXT,
    bibliographic TEXT, scope TEXT, type TEXT
);
CREATE TABLE currencies (alpha_3 TEXT PRIMARY KEY, numeric TEXT, name TEXT NOT NULL);
CREATE TABLE scripts (alpha_4 TEXT PRIMARY KEY, numeric TEXT, name TEXT NOT NULL);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE INDEX subdivisions_country ON subdivisions(country_alpha_2);
"""

_TABLES: dict[str, tuple[Any, list[str], str]] = {
    "countries": (
        pycountry.countries,
        ["alpha_2", "alpha_3", "numeric", "name", "official_name", "common_name", "flag"],
        "alpha_2",
    ),
    "subdivisions": (
        pycountry.subdivisions,
        ["code", "country_code", "name", "type", "parent_code"],
        "code",
    ),
    "languages": (
        pycountry.languages,
        ["alpha_3", "alpha_2", "name", "common_name", "bibliographic", "scope", "type"],
        "alpha_3",
    ),
    "currencies": (pycountry.currencies, ["alpha_3", "numeric", "name"], "alpha_3"),
    "scripts": (pycountry.scripts, ["alpha_4", "numeric", "name"], "alpha_4"),
}


def build_reference_db(path: Path | None = None) -> dict[str, int]:
    """(Re)build the reference database at ``path`` and return the row count of each table.

    The file is written beside the target, in a temporary file of this build's own (mode 0600,
    owner only), and moved into place, so a reader never sees half a database, and builders at
    the same time (two notebooks' first ``run_sql``, two ``build-data``) never write into each
    other's file: the last to finish puts the same rows in place. Default ``path``:
    :func:`helpers.base.paths.reference_db_path`.

    Raises:
        OSError: the folder or the file cannot be written.
    """
    path = path or reference_db_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_abandoned(path.parent)
    fd, name = tempfile.mkstemp(
        prefix=writer_prefix(path.name), suffix=".building", dir=path.parent
    )
    os.close(fd)  # mkstemp made it mode 0600 before SQLite writes a row; the rename keeps it
    tmp = Path(name)
    try:
        counts = _write_tables(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return counts


def _write_tables(tmp: Path) -> dict[str, int]:
    """Write the schema and every table into the empty SQLite file ``tmp``; return the row
    count of each table."""
    counts: dict[str, int] = {}
    with sqlite3.connect(tmp) as db:
        db.executescript(SCHEMA)
        for table, (database, fields, key) in _TABLES.items():
            key_index = fields.index(key)
            rows = sorted(
                (tuple(getattr(item, f, None) for f in fields) for item in database),
                key=lambda row: row[key_index],
            )
            marks = ", ".join("?" * len(fields))
            db.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
            counts[table] = len(rows)
        db.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            [
                ("source", "pycountry (ISO 3166-1, 3166-2, 639-3, 4217, 15924)"),
                ("pycountry_version", version("pycountry")),
            ],
        )
    db.close()
    return counts


def ensure_reference_db(path: Path | None = None) -> Path:
    """The reference database's path, building it first if it does not exist yet; a file of the
    current user built by an earlier version with a wider mode is made 0600 (owner only).

    Raises:
        OSError: the file cannot be built.
    """
    path = path or reference_db_path()
    if not path.is_file():
        build_reference_db(path)
    else:
        make_owner_only(path)
    return path
