"""Files and secrets: what the workbook writes is owner-only, a shared ``.env`` is warned about,
and a database password never reaches a message.

Everything here runs on real files: a fresh run-time folder, a real SQLite store (with its WAL
files), the real reference database, a real ``.env``, the real ``workbook`` command.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from forked_cli import run_workbook
from hang import HANG_GUARD_S

from helpers.base.paths import (
    GROUP_OTHER_BITS,
    outbox_dir,
    reference_db_path,
    store_db_path,
    var_dir,
)
from helpers.models.settings import load_env
from helpers.store.database import SQLITE_SIDE_FILE_SUFFIXES
from helpers.store.tool_outputs import ToolOutputStore
from helpers.text import redaction
from helpers.text.redaction import EnvFileWarning, mask_url_password, warn_if_env_file_shared
from helpers.tooling.dataset import build_reference_db, ensure_reference_db
from helpers.tooling.tools import google_drive_write_file

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")

PASSWORD = "hunter2secret"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _assert_owner_only(path: Path) -> None:
    assert path.exists(), path
    assert _mode(path) & GROUP_OTHER_BITS == 0, f"{path} has mode {_mode(path):04o}"


def _side_files(db: Path) -> list[Path]:
    return [db.with_name(db.name + s) for s in SQLITE_SIDE_FILE_SUFFIXES]


@pytest.fixture
def fresh_var(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run-time folder that does not exist yet (the default store lives in it)."""
    folder = tmp_path / "var"
    monkeypatch.setenv("WORKBOOK_VAR_DIR", str(folder))
    monkeypatch.delenv("WORKBOOK_DB_URL", raising=False)
    return folder


def test_a_fresh_run_time_folder_and_everything_in_it_is_owner_only(fresh_var: Path) -> None:
    store = ToolOutputStore()  # the default store: var/tool_outputs.sqlite
    try:
        store.log_tool("thread-1", "call_1", "yt_transcribe", {"video_id": "1"}, "x" * 50_000)
        db = store_db_path()
        assert db.parent == fresh_var
        wal, shm, _journal = _side_files(db)
        assert wal.exists() and shm.exists()  # the store is open, in WAL mode
        for path in (fresh_var, db, wal, shm):
            _assert_owner_only(path)
        assert _mode(fresh_var) == 0o700 and _mode(db) == 0o600
    finally:
        store.close()
    google_drive_write_file("report.txt", "a drive file")
    for path in (outbox_dir(), outbox_dir() / "report.txt"):
        _assert_owner_only(path)
    build_reference_db()
    _assert_owner_only(reference_db_path())
    assert not list(fresh_var.glob("*.building"))


def test_folders_and_files_left_wide_by_an_earlier_run_are_tightened(fresh_var: Path) -> None:
    first = ToolOutputStore()
    try:
        first.log_tool("thread-1", "call_1", "t", {}, "output")
        db = store_db_path()
        opened = [p for p in _side_files(db) if p.exists()]
        for path in (fresh_var, db, *opened):
            os.chmod(path, 0o777 if path.is_dir() else 0o644)
        outbox = fresh_var / "outbox"
        outbox.mkdir(mode=0o755)
        os.chmod(outbox, 0o755)
        second = ToolOutputStore()  # opening it again tightens what is there
        try:
            assert second.get("thread-1", "call_1") is not None
            for path in (fresh_var, db, *opened):
                _assert_owner_only(path)
        finally:
            second.close()
        _assert_owner_only(outbox_dir())
        assert _mode(var_dir()) == 0o700
    finally:
        first.close()
    build_reference_db()
    os.chmod(reference_db_path(), 0o644)
    assert ensure_reference_db() == reference_db_path()  # what run_sql calls before each query
    assert _mode(reference_db_path()) == 0o600


def test_a_store_in_a_folder_of_the_users_choice_is_private_but_the_folder_is_left_alone(
    tmp_path: Path,
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o755)
    new_folder = tmp_path / "made" / "for-the-store"
    for db in (shared / "mine.sqlite", new_folder / "mine.sqlite"):
        store = ToolOutputStore(f"sqlite:///{db}")
        try:
            store.log_tool("t", "call_1", "t", {}, "output")
            _assert_owner_only(db)
        finally:
            store.close()
    assert _mode(shared) == 0o755  # an existing folder may be shared on purpose (/tmp)
    assert _mode(new_folder) == 0o700  # a folder made for the store is not


def _env_file(folder: Path, mode: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ".env"
    path.write_text("WORKBOOK_FILE_MODES_TEST=1\n", encoding="utf-8")
    os.chmod(path, mode)
    return path


def test_a_dotenv_readable_by_others_is_warned_about_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBOOK_FILE_MODES_TEST", "1")  # so load_env changes nothing here
    shared = _env_file(tmp_path / "shared", 0o644)
    with pytest.warns(EnvFileWarning) as caught:
        load_env(shared)
        load_env(shared)  # once per file and process
    assert len(caught) == 1
    message = str(caught[0].message)
    assert str(shared) in message and "0644" in message and "chmod 600" in message
    assert "\n" not in message
    # configured_secrets reads the project's .env too, and warns the same way
    monkeypatch.setattr(redaction, "workspace_dir", lambda: tmp_path / "project")
    _env_file(tmp_path / "project", 0o640)
    with pytest.warns(EnvFileWarning, match="0640"):
        redaction.configured_secrets()


def test_a_private_dotenv_is_no_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBOOK_FILE_MODES_TEST", "1")
    private = _env_file(tmp_path / "private", 0o600)
    monkeypatch.setattr(redaction, "workspace_dir", lambda: private.parent)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_env(private)
        redaction.configured_secrets()
        assert warn_if_env_file_shared(private) is False
        assert warn_if_env_file_shared(tmp_path / "missing" / ".env") is False


def test_url_passwords_are_masked_in_urls_and_in_messages() -> None:
    url = f"postgresql+psycopg://user:{PASSWORD}@db.example:5432/workbook"
    assert mask_url_password(url) == "postgresql+psycopg://user:***@db.example:5432/workbook"
    assert mask_url_password(f"postgresql://u:{PASSWORD}@h@host/x") == "postgresql://u:***@host/x"
    assert mask_url_password("mysql://root:p%40ss@db/app") == "mysql://root:***@db/app"
    said = f"cannot reach 'mysql://root:{PASSWORD}@db/app': password {PASSWORD} refused"
    masked = mask_url_password(said, url)
    assert PASSWORD not in masked and "mysql://root:***@db/app" in masked
    for plain in ("sqlite:///var/my.sqlite", "nosuch://x", "no URL here", "", "pg://u@h/x"):
        assert mask_url_password(plain) == plain
    # and the password of a configured store URL counts as a secret to redact everywhere
    assert PASSWORD in redaction.configured_secrets({"WORKBOOK_DB_URL": url})


def test_the_db_usage_error_never_shows_the_password(tmp_path: Path) -> None:
    env = {**os.environ, "WORKBOOK_PROFILE": "offline", "NO_COLOR": "1"}
    env["WORKBOOK_VAR_DIR"] = str(tmp_path / "var")
    url = f"postgresql://u:{PASSWORD}@localhost:1/x"  # no server there (and maybe no driver)
    for json_flag in ((), ("--json",)):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "helpers.cli",
                "outputs",
                "list",
                "--db",
                url,
                *json_flag,
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=HANG_GUARD_S,
        )
        assert done.returncode == 2, done.stderr
        shown = done.stdout + done.stderr
        assert "cannot use 'postgresql://u:***@localhost:1/x' as the store" in shown
        assert PASSWORD not in shown


#: Every form of a database URL libpq or SQLAlchemy reads a password from (PostgreSQL's docs,
#: "Connection Strings"; SQLAlchemy's make_url), some malformed as a hurried instructor types.
PASSWORD_FORMS = [
    f"postgresql://room:{PASSWORD}@localhost:1/x",
    f"postgresql+psycopg://room:{PASSWORD}@localhost:1/x?sslmode=require",
    "postgresql://room:hunter2%40secret@localhost:1/x",  # the password hunter2@secret, encoded
    "postgresql://room:hunter2@secret@localhost:1/x",  # the same, not encoded
    "postgresql://room:hunter2 secret@localhost:1/x",  # a space: psycopg repeats it
    f"postgresql://room@localhost:1/x?password={PASSWORD}",
    f"postgresql://room@localhost:1/x?sslmode=disable&password={PASSWORD}&connect_timeout=5",
    "postgresql://room@localhost:1/x?password=hunter2 secret",
    f"host=localhost port=1 user=room password={PASSWORD}",
    "host=localhost port=1 password = 'hunter2 \\'secret'",
    f"postgresql://room@localhost:1/x?passfile=/home/{PASSWORD}/.pgpass",
]


@pytest.mark.parametrize("url", PASSWORD_FORMS)
def test_every_form_of_a_url_password_is_masked(url: str) -> None:
    """The one masking function hides each form's password in the URL itself and wherever a
    message repeats it (a driver's error quotes the piece it could not parse)."""
    secret = max(redaction.url_passwords(url), key=len)
    assert secret and "localhost" not in secret
    for text in (url, f'refused {url!r}: unexpected spaces found in "{secret}"'):
        masked = mask_url_password(text, url)
        assert secret not in masked and "hunter2" not in masked, masked
    assert "hunter2" not in mask_url_password(url)  # the URL alone, not knowing which it is


@pytest.mark.parametrize(
    ("command", "url"),
    [(["room", "url", "ann"], url) for url in PASSWORD_FORMS]
    + [(["room", "progress"], url) for url in PASSWORD_FORMS]
    # the store's URL goes through the same function; each try waits out the store's pauses
    # for a refused connection (about 3 s), so a few forms
    + [(["ask", "hello"], url) for url in PASSWORD_FORMS[::4]]
    + [(["mcp-server"], url) for url in PASSWORD_FORMS[1::4]],
)
def test_no_command_shows_a_password_it_was_given(url: str, command: list[str]) -> None:
    """``workbook room url/progress`` (as the hub's hook runs it: its error is what an
    attendee's failed spawn would show), ``ask --db`` and ``mcp-server --db`` with a URL no
    server answers."""
    env = {**os.environ, "WORKBOOK_PROFILE": "offline", "NO_COLOR": "1"}
    given = ["--room-url", url] if command[0] == "room" else ["--db", url]
    done = run_workbook([*command, *given], env=env)
    assert done.returncode == 2, done.stderr
    assert "hunter2" not in done.stdout + done.stderr, done.stderr


@pytest.mark.parametrize("content", [b"my notes\n", b"SQLite format 2\x00...", b"\x00"])
def test_a_file_that_is_not_a_sqlite_database_is_refused_untouched(
    tmp_path: Path, content: bytes
) -> None:
    """``--db sqlite:///notes.txt`` by mistake: refused before anything touches the file, so
    its content and its mode (0644 here) are as they were, and no side file is made."""
    from helpers.store.tool_outputs import ToolOutputStore

    notes = tmp_path / "notes.txt"
    notes.write_bytes(content)
    notes.chmod(0o644)
    with pytest.raises(ValueError, match="is not a SQLite database"):
        ToolOutputStore(f"sqlite:///{notes}")
    assert notes.read_bytes() == content
    assert stat.S_IMODE(notes.stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")  # an empty file is a valid, empty SQLite database
    ToolOutputStore(f"sqlite:///{empty}").close()


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        (["CREATE TABLE mine (x)"], r"tables: mine"),
        (
            ["CREATE TABLE tool_outputs (id INTEGER PRIMARY KEY, blob TEXT)"],
            "a tool_outputs table of its own",
        ),
        (
            [
                "CREATE TABLE alembic_version (version_num TEXT)",
                "INSERT INTO alembic_version VALUES ('ae1027a6acf')",
                "CREATE TABLE users (id)",
            ],
            "Alembic revision ae1027a6acf",
        ),
        (["PRAGMA journal_mode = WAL", "CREATE TABLE mine (x)"], r"tables: mine"),
    ],
)
def test_another_applications_sqlite_database_is_refused_untouched(
    tmp_path: Path, schema: list[str], reason: str
) -> None:
    """``--db sqlite:///other.db``, a database of something else (even one with a table named
    tool_outputs, or its own Alembic revisions): no table added, journal mode, content and mode
    unchanged, no side file made; a store made earlier (its own tables) still opens."""
    import sqlite3

    from helpers.store.tool_outputs import ToolOutputStore

    other = tmp_path / "other.db"
    db = sqlite3.connect(other)
    for statement in schema:
        db.execute(statement)
    db.commit()
    db.close()
    other.chmod(0o644)
    before = other.read_bytes()
    with pytest.raises(ValueError, match=f"a SQLite database of something else \\({reason}\\)"):
        ToolOutputStore(f"sqlite:///{other}")
    assert other.read_bytes() == before and stat.S_IMODE(other.stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db"]
    ours = tmp_path / "ours.sqlite"
    ToolOutputStore(f"sqlite:///{ours}").close()
    ToolOutputStore(f"sqlite:///{ours}").close()
