"""The reference data is built once and again only when what it is made from changes, so
``make lab`` does not spend seconds rebuilding it on every start."""

from __future__ import annotations

import json
import sqlite3

from helpers.base.paths import reference_db_path
from helpers.tooling.pages import pages_dir
from helpers.tooling.reference_data import FINGERPRINT_FILE, build_reference_data, data_inputs


def test_built_once_then_rebuilt_only_when_an_input_or_a_file_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBOOK_VAR_DIR", str(tmp_path))
    first = build_reference_data()
    assert first.built and first.reason == "never built"
    assert first.rows["countries"] == 249 and first.pages == len(list(pages_dir().iterdir()))
    with sqlite3.connect(reference_db_path()) as db:
        assert db.execute("SELECT count(*) FROM subdivisions").fetchone()[0] > 5000
    db_written = reference_db_path().stat().st_mtime_ns

    again = build_reference_data()
    assert not again.built and again.reason == "current"
    assert reference_db_path().stat().st_mtime_ns == db_written  # nothing was rewritten

    fingerprint = tmp_path / FINGERPRINT_FILE
    recorded = json.loads(fingerprint.read_text(encoding="utf-8"))
    assert {k: v for k, v in recorded.items() if k != "files"} == data_inputs()
    written = _written()
    fingerprint.write_text(json.dumps({**recorded, "pycountry": "0.1"}), encoding="utf-8")
    rebuilt = build_reference_data()  # what pycountry makes: the database and two documents
    assert rebuilt.reason == "pycountry changed" and rebuilt.rows == first.rows
    from_pycountry = {reference_db_path().name, "iso_639-3.json", "iso_3166-2.json"}
    assert _rewritten(written) == from_pycountry
    assert rebuilt.pages == 2 and build_reference_data().reason == "current"

    written = _written()
    (pages_dir() / "json.html").unlink()
    rebuilt = build_reference_data()
    assert rebuilt.reason == "json.html is missing" and (rebuilt.rows, rebuilt.pages) == ({}, 1)
    assert (pages_dir() / "json.html").is_file() and _rewritten(written) == {"json.html"}

    written = _written()
    (pages_dir() / "json.html").unlink()
    (pages_dir() / "re.html").unlink()
    recorded = json.loads(fingerprint.read_text(encoding="utf-8"))
    fingerprint.write_text(json.dumps({**recorded, "pycountry": "0.1"}), encoding="utf-8")
    rebuilt = build_reference_data()  # each cause said, and what each makes built
    assert rebuilt.reason == "json.html and 1 more are missing; pycountry changed"
    assert _rewritten(written) == {"json.html", "re.html", *from_pycountry}

    reference_db_path().write_bytes(b"")  # emptied (a failed copy, a slip in a shell)
    rebuilt = build_reference_data()
    assert rebuilt.reason == f"{reference_db_path().name} changed since it was built"
    assert rebuilt.rows == first.rows and rebuilt.pages == 0
    with sqlite3.connect(reference_db_path()) as db:
        assert db.execute("SELECT count(*) FROM countries").fetchone()[0] == 249

    page = pages_dir() / "json.html"
    page.write_text(page.read_text(encoding="utf-8") + " ", encoding="utf-8")
    assert build_reference_data().reason == "json.html changed since it was built"
    assert build_reference_data().reason == "current"

    written = _written()
    forced = build_reference_data(force=True)
    assert forced.reason == "forced" and (forced.rows, forced.pages) == (first.rows, first.pages)
    assert _rewritten(written) == set(written)
    assert build_reference_data().reason == "current"


def test_each_input_rebuilds_the_files_made_from_it() -> None:
    """A new Python rebuilds what pydoc and :mod:`unicodedata` make (the pages, UnicodeData.txt,
    the language reference), a new pycountry the rest, a change to a builder everything."""
    from helpers.tooling.reference_data import _built_files, _read_from

    everything = {p.name for p in _built_files()}
    from_pycountry = {reference_db_path().name, "iso_639-3.json", "iso_3166-2.json"}
    assert _read_from(["pycountry"]) == from_pycountry
    assert _read_from(["python"]) == everything - from_pycountry
    assert {"json.html", "UnicodeData.txt", "reference.txt"} <= _read_from(["python"])
    assert _read_from(["builders"]) == _read_from(["python", "pycountry"]) == everything
    assert _read_from([]) == set()


def _written() -> dict[str, tuple[int, int]]:
    """Each built file's name, and the inode it is and when it was written: a build moves a new
    file into place (which may be given the inode of a file deleted before)."""
    paths = [reference_db_path(), *pages_dir().iterdir()]
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in paths}


def _rewritten(before: dict[str, tuple[int, int]]) -> set[str]:
    """The files of ``before`` a build has replaced since."""
    return {name for name, file in _written().items() if before.get(name) != file}


def test_a_build_that_cannot_write_says_where_in_one_line(tmp_path) -> None:
    """``build-data`` on a var folder that is a file (or any OSError): the path and the reason,
    exit 1, no traceback."""
    import os

    from forked_cli import run_workbook

    blocked = tmp_path / "var"
    blocked.write_text("a file", encoding="utf-8")
    done = run_workbook(("build-data",), env={**os.environ, "WORKBOOK_VAR_DIR": str(blocked)})
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == f"workbook: cannot build the reference data: {blocked}: File exists\n"


def test_a_page_is_the_same_bytes_in_every_process() -> None:
    """No memory address in a rendered page, however pydoc spaces it (``&nbsp;at&nbsp;0x…`` in
    difflib's page): a page rendered again by ``get_page`` is the page ``build-data`` wrote."""
    import re

    from helpers.tooling.pages import render_page

    for module in ("difflib", "http.client"):
        page = render_page(module)
        assert "at&nbsp;0x…" in page or "at 0x…" in page, module
        assert not re.search(r"at(?: |&nbsp;)0x[0-9a-f]", page), module


def test_first_builds_at_the_same_time_never_give_a_reader_half_a_database(tmp_path) -> None:
    """Two notebooks' first ``run_sql`` and two ``build-data`` at once, on a folder with no data:
    each builder writes a file of its own and moves it into place, so every process succeeds and
    every query sees all of Norway's subdivisions (a shared temporary file gave empty results,
    "disk I/O error" and "readonly database")."""
    import os
    import subprocess
    import sys

    from hang import HANG_GUARD_S

    env = {**os.environ, "WORKBOOK_VAR_DIR": str(tmp_path), "WORKBOOK_PROFILE": "offline"}
    query = (
        "import json; from helpers.tooling.tools import run_sql; "
        "r = json.loads(run_sql(\"SELECT code FROM subdivisions WHERE country_alpha_2 = 'NO'\", "
        "max_rows=100)); print(r['row_count'])"
    )
    commands = [[sys.executable, "-c", query]] * 3 + [
        [sys.executable, "-m", "helpers.cli", "build-data", "--force"]
    ] * 2
    running = [
        subprocess.Popen(c, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for c in commands
    ]
    results = [(*p.communicate(timeout=HANG_GUARD_S), p.returncode) for p in running]
    for _out, err, code in results:
        assert code == 0, err[-2000:]
    counts = {int(out) for out, _, _ in results[:3]}
    with sqlite3.connect(reference_db_path()) as db:
        expected = db.execute("SELECT count(*) FROM subdivisions WHERE country_alpha_2 = 'NO'")
        assert counts == {expected.fetchone()[0]} and counts != {0}
    assert not list(tmp_path.glob("*.building")) and not list(pages_dir().glob("*.tmp"))


def test_a_build_killed_midway_leaves_nothing_the_next_build_does_not_remove(tmp_path, monkeypatch):
    """A kernel restarted during the first ``run_sql`` leaves its half-written temporary file
    (and its journal): the next build deletes those of dead writers, and never a live one's."""
    import os
    import subprocess
    import sys

    from helpers.tooling.dataset import build_reference_db

    monkeypatch.setenv("WORKBOOK_VAR_DIR", str(tmp_path))
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead = [
        tmp_path / f"iso_reference.sqlite.pid{gone.pid}.x1{s}"
        for s in (".building", ".building-journal")
    ]
    live = tmp_path / f"iso_reference.sqlite.pid{os.getpid()}.x2.building"
    (pages_dir()).mkdir(parents=True, exist_ok=True)
    dead_page = pages_dir() / f"json.html.pid{gone.pid}.x3.tmp"
    for path in [*dead, live, dead_page]:
        path.write_bytes(b"half")
    build_reference_db()
    build_reference_data(force=True)
    assert live.exists() and not any(p.exists() for p in [*dead, dead_page])
    assert sorted(p.name for p in tmp_path.glob("*.pid*")) == [live.name]
